"""The one layout every "Compare methods" page shares, and the list of those pages.

Each page answers a committee's question by running another disclosure-avoidance method
(`methods/`) and SafeTab-P on the same data and plan, and shows, in this order:

1. the question in plain words and the method in two sentences (`header`);
2. the controls (the page's own widgets);
3. the results side by side with SafeTab-P (`side_by_side`);
4. a verdict in plain words (`verdict`);
5. downloads of every table and chart (`downloads`, one zip of all of them too).

`METHODS` lists the pages in the order of the navigation; `app.py` builds the
"Compare methods" section from it and the index page describes them.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

import pandas as pd
import streamlit as st


@dataclass(frozen=True)
class MethodPage:
    """A page under "Compare methods"."""

    path: str  # the page script, e.g. "pages/compare_consistency.py"
    title: str  # navigation title
    icon: str  # a material icon, e.g. ":material/account_tree:"
    question: str  # the committee's question, in plain words
    method: str  # what the method does, in two sentences
    source: str  # the paper or production code it follows


#: The pages under "Compare methods", in navigation order (after the index page).
METHODS: tuple[MethodPage, ...] = (
    MethodPage(
        path="pages/compare_consistency.py",
        title="Consistency",
        icon=":material/account_tree:",
        question=("Can a group's published counts add up, from the nation to its states, counties and tracts, "
                  "and what does that cost in accuracy?"),
        method=("After SafeTab-P, each group's noisy totals are adjusted so that every area equals the sum of the "
                "areas inside it, moving the noisiest totals most. Least squares finds the closest consistent "
                "counts; the tree dynamic program of Fioretto, Van Hentenryck and Zhu finds the closest "
                "consistent non-negative whole numbers, exactly."),
        source=("Fioretto, Van Hentenryck, Zhu, \"Differential Privacy of Hierarchical Census Data: An Optimization "
                "Approach\" (CP 2019; Artificial Intelligence 2021); Hay, Rastogi, Miklau, Suciu (VLDB 2010)"),
    ),
    MethodPage(
        path="pages/compare_invariants.py",
        title="Invariants",
        icon=":material/lock_open:",
        question=("Should some totals be published exactly (e.g. each state's count of every group), as the 2020 "
                  "redistricting data held state populations, with the noise of the areas below them adjusted to "
                  "add up?"),
        method=("The noise is projected onto the directions the invariants leave free (subspace differential "
                "privacy), so the released counts add up to the true totals exactly and each keeps a smaller, "
                "unbiased noise. The true totals themselves are published with no protection at all."),
        source="J. Gao, R. Gong, F.-Y. Yu, \"Subspace Differential Privacy\", AAAI 2022 (arXiv:2108.11527)",
    ),
    MethodPage(
        path="pages/compare_cell_suppression.py",
        title="Cell suppression",
        icon=":material/grid_off:",
        question=("What did detailed-group tables look like before differential privacy, and what could anyone "
                  "still work out from them?"),
        method=("Legacy suppression publishes a group's exact sex by age table only above a population threshold, "
                "withholds small counts, and withholds more counts, chosen by linear programming, so that the small "
                "ones cannot be worked out from the totals. An audit, also by linear programming, finds the range "
                "every withheld count could still take given everything published."),
        source=("P. B. Massell, Cell Suppression and Audit Programs used for Economic Magnitude Data, "
                "U.S. Census Bureau SRD Research Report RR2001/01"),
    ),
    MethodPage(
        path="pages/compare_spines.py",
        title="Custom geographies",
        icon=":material/polyline:",
        question=("How accurate is a group's count in an area a data user builds (a neighbourhood of tracts, a place "
                  "minus a tract) rather than one SafeTab-P publishes, and how far are places and tribal areas from "
                  "a TopDown-style geographic spine?"),
        method=("A custom area is made by adding and subtracting published units; the off-spine entity distance "
                "(OSED) is the fewest units that takes, and every unit adds its noise. The Census TopDown "
                "Algorithm's spine optimisation regroups block groups and tract groups so that places and AIANNH "
                "areas need few units, and bypasses parents that cannot help."),
        source=("Abowd et al., \"Geographic Spines in the 2020 Census Disclosure Avoidance System TopDown "
                "Algorithm\" (2021); uscensusbureau/DAS_2020_Redistricting_Production_Code, "
                "geographic_spines/optimize_spine.py"),
    ),
)

#: SafeTab-P itself, the row every comparison is made against.
SAFETAB_P = MethodPage(
    path="pages/overview.py",
    title="SafeTab-P",
    icon=":material/home:",
    question="How many people of each detailed race and ethnicity group live in each area, and of what sex and age?",
    method=("Every population group gets a noisy total from a small share of its budget, which decides how "
            "detailed its sex by age table is; the table is then drawn with fresh exact discrete Gaussian "
            "noise, and small totals are suppressed."),
    source="U.S. Census Bureau, 2020 Detailed DHC-A (SafeTab-P)",
)


def overview_table() -> pd.DataFrame:
    """One row per method (SafeTab-P first): its question, how it works, its source."""
    rows = [SAFETAB_P, *METHODS]
    return pd.DataFrame({
        "method": [m.title for m in rows],
        "question it answers": [m.question for m in rows],
        "how it works": [m.method for m in rows],
        "source": [m.source for m in rows],
    })


def header(page: MethodPage) -> None:
    """Title, the question and the method in two sentences."""
    st.title(page.title)
    st.markdown(f"**The question.** {page.question}")
    st.markdown(f"**The method.** {page.method}")
    st.caption(f"Source: {page.source}")


def side_by_side(other: str, safetab: str = "SafeTab-P") -> tuple:
    """Two equal columns headed by the method's name and SafeTab-P's."""
    left, right = st.columns(2, gap="large")
    left.subheader(other)
    right.subheader(safetab)
    return left, right


def verdict(text: str) -> None:
    """The page's conclusion in plain words."""
    st.subheader("Verdict")
    st.success(text, icon=":material/gavel:")


def zip_bytes(files: dict[str, bytes | str | pd.DataFrame]) -> bytes:
    """A zip of named files; DataFrames become CSV, strings UTF-8 text."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            if isinstance(content, pd.DataFrame):
                content = content.to_csv(index=False)
            if isinstance(content, str):
                content = content.encode("utf-8")
            zf.writestr(name, content)
    return buf.getvalue()


def downloads(files: dict[str, bytes | str | pd.DataFrame], zip_name: str, key: str) -> None:
    """A download button per file and one for all of them as a zip."""
    st.subheader("Downloads")
    # A row that wraps: each button as wide as its file name, none cut at 1280 px.
    row = st.container(horizontal=True)
    for i, (name, content) in enumerate(files.items()):
        data = content.to_csv(index=False).encode("utf-8") if isinstance(content, pd.DataFrame) else content
        row.download_button(name, data, file_name=name, key=f"{key}_{i}", on_click="ignore",
                            icon=":material/download:")
    row.download_button(
        f"Everything ({zip_name})", zip_bytes(files), file_name=zip_name, mime="application/zip",
        key=f"{key}_zip", on_click="ignore", icon=":material/folder_zip:")


#: Columns of a "The paper's own numbers" table (see `paper_numbers`).
PAPER_COLUMNS = ("Where", "The paper says", "Paper's value", "Computed here", "Match")


def paper_numbers(df: pd.DataFrame, caption: str, key: str) -> None:
    """The paper's printed numbers beside the same numbers computed live by the project's
    functions (`PAPER_COLUMNS`; Match: "yes", "no", or why no comparison is possible), as a
    static table whose text wraps (nothing cut off), with its CSV."""
    from ui import widgets

    st.subheader("The paper's own numbers")
    st.table(df.set_index("Where"))
    st.caption(caption)
    widgets.download_csv(df, f"{key}.csv", key=f"{key}_csv", label="Download this table (CSV)")
