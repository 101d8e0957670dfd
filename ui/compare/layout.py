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
from pathlib import Path

import pandas as pd
import streamlit as st

from calculators import presets
from calculators.config import ConfigError, SafeTabConfig
from calculators.levels import PopulationGroupLevel
from ui.core.plaintext import plain


@dataclass(frozen=True)
class MethodPage:
    """A page under "Compare methods"."""

    path: str  # the page script, e.g. "app_pages/compare/consistency.py"
    url_path: str  # its address, e.g. "compare_consistency" (app.py's st.Page url_path; never changes)
    title: str  # navigation title
    icon: str  # a material icon, e.g. ":material/account_tree:"
    question: str  # the committee's question, in plain words
    method: str  # what the method does, in two sentences
    source: str  # the paper or production code it follows
    terms: tuple[str, ...] = ()  # glossary terms the page uses (`ui.core.glossary`), linked from its header


#: The pages under "Compare methods", in navigation order (after the index page).
METHODS: tuple[MethodPage, ...] = (
    MethodPage(
        path="app_pages/compare/consistency.py",
        url_path="compare_consistency",
        title="Consistency",
        icon=":material/account_tree:",
        question=("Can a group's published counts add up, from the nation to its states, counties and tracts, "
                  "and what does that cost in accuracy?"),
        method=("After SafeTab-P, each group's noisy totals are adjusted so that every area equals the sum of the "
                "areas inside it, moving the noisiest totals most. Least squares finds the closest consistent "
                "counts; the tree dynamic program of Fioretto, Van Hentenryck and Zhu finds the closest "
                "consistent non-negative whole numbers, exactly."),
        source=("Fioretto, Van Hentenryck, Zhu, \"Differential Privacy of Hierarchical Census Data: An Optimization "
                "Approach\", Artificial Intelligence 296 (2021), after Fioretto and Van Hentenryck (CP 2019); Hay, "
                "Rastogi, Miklau, Suciu (VLDB 2010)"),
        terms=("Hierarchical consistency", "Least squares", "Tree dynamic program", "Relax-then-round", "Projection",
               "Sensitivity", "Consistency violations and faithfulness"),
    ),
    MethodPage(
        path="app_pages/compare/invariants.py",
        url_path="compare_invariants",
        title="Invariants",
        icon=":material/lock_open:",
        question=("Should some totals be published exactly (e.g. each state's count of every group), as the 2020 "
                  "redistricting data held state populations, with the noise of the areas below them adjusted to "
                  "add up?"),
        method=("The noise is projected onto the directions the invariants leave free (subspace differential "
                "privacy), so the released counts add up to the true totals exactly and each keeps a smaller, "
                "unbiased noise. The true totals themselves are published with no protection at all."),
        source="J. Gao, R. Gong, F.-Y. Yu, \"Subspace Differential Privacy\", AAAI 2022 (arXiv:2108.11527)",
        terms=("Invariant", "Subspace differential privacy", "Projection", "Margins (held exact)"),
    ),
    MethodPage(
        path="app_pages/compare/cell_suppression.py",
        url_path="compare_cell_suppression",
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
        terms=("Cell suppression", "Primary suppression", "Complementary suppression", "Audit interval", "Protection",
               "Capacity (how far a count may move)", "Refinement run", "p% dominance rule", "(n, k) dominance rule"),
    ),
    MethodPage(
        path="app_pages/compare/spines.py",
        url_path="compare_spines",
        title="Custom geographies",
        icon=":material/polyline:",
        question=("How accurate is a group's count in an area a data user builds (a neighbourhood of tracts, a place "
                  "minus a tract) rather than one SafeTab-P publishes, and how far are places and tribal areas from "
                  "a TopDown-style geographic spine?"),
        method=("A custom area is made by adding and subtracting published units; the off-spine entity distance "
                "(OSED) is the fewest units that takes, and every unit adds its noise. The Census TopDown "
                "Algorithm's spine optimisation regroups block groups and tract groups so that places and AIANNH "
                "areas need few units, and bypasses parents that cannot help."),
        source=("R. Cumings-Menon, J. M. Abowd, R. Ashmead, D. Kifer, P. Leclerc, J. Ocker, M. Ratcliffe, "
                "P. Zhuravlev, \"Geographic Spines in the 2020 Census Disclosure Avoidance System\"; "
                "uscensusbureau/DAS_2020_Redistricting_Production_Code, geographic_spines/optimize_spine.py"),
        terms=("Off-spine entity distance (OSED)", "Geographic spine", "AIAN spine", "Spine optimisation", "Entity threshold",
               "Bypassing"),
    ),
)

#: SafeTab-P itself, the row every comparison is made against.
SAFETAB_P = MethodPage(
    path="app_pages/safetab/overview.py",
    url_path="overview",
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


# ------------------------------------------------------------------ the plan a page runs
#: The plans a page that runs data offers (the Run page and every "Compare methods"
#: page): the data's own config.json (the default), the app's current plan, the 2020
#: production plan. One choice, shared by all those pages (`K_CHOICE`).
DATA, CURRENT, PRODUCTION = "data", "current", "production"
K_CHOICE = "plan_for_data"


@dataclass(frozen=True)
class Basis:
    """What a page's results ran on: the data (persons, which data) and the plan."""

    config: SafeTabConfig
    name: str  # the plan's name ("sample-data plan")
    data: str  # the data in words, with its number of persons when known
    choice: str  # DATA, CURRENT or PRODUCTION

    @property
    def role(self) -> str:
        """Where the plan comes from ("the data's own config.json", "the current plan"; "" for 2020's)."""
        return {DATA: "the data's own config.json", CURRENT: "the current plan"}.get(self.choice, "")

    @property
    def plan(self) -> str:
        """The plan's name and where it comes from: "sample-data plan (the data's own config.json)"."""
        return f"{self.name} ({self.role})" if self.role else self.name

    @property
    def plan_text(self) -> str:
        """`plan` for a Markdown message: shown exactly as typed (`ui.core.plaintext.plain`)."""
        return plain(self.plan)

    @property
    def plan_opening(self) -> str:
        """`plan_text` starting a sentence (first letter capitalised)."""
        return plain(self.plan[:1].upper() + self.plan[1:])

    @property
    def sentence(self) -> str:
        """"Data: ... Plan: ...", the line every result and verdict carries."""
        return f"Data: {plain(self.data)}. Plan: {plain(self.plan)}."  # names as typed, never Markdown


def plan_options(own_label: str | None, current_label: str) -> dict[str, str]:
    """The choices a page offers, by key: the data's own plan (when the data has a
    config.json), the current plan, the 2020 production plan."""
    out = {}
    if own_label is not None:
        out[DATA] = f"The data's own plan ({plain(own_label)})"
    out[CURRENT] = f"The current plan ({plain(current_label)})"
    out[PRODUCTION] = "The 2020 production plan"
    return out


def resolve_plan(choice: str, own: SafeTabConfig | None, own_label: str | None, current: SafeTabConfig,
                 current_label: str, data: str) -> Basis:
    """The plan a choice stands for (pure). Without a config.json of the data, its
    choice falls back to the current plan."""
    if choice == DATA and own is not None:
        return Basis(own, str(own_label), data, DATA)
    if choice == PRODUCTION:
        return Basis(presets.production_2020(), "2020 production plan", data, PRODUCTION)
    return Basis(current, current_label, data, CURRENT)


def choose_plan(own: SafeTabConfig | None, own_label: str | None, data: str, key: str,
                container=None) -> Basis:
    """The plan-for-data choice (a horizontal radio; `key` is the page's own widget
    key, the choice itself is shared by every page that runs data): the data's own
    plan by default, the current plan or the 2020 production plan one click away.
    Returns what the page runs on."""
    from ui.core import state

    ss = st.session_state
    box = container if container is not None else st
    options = plan_options(own_label, state.source_label())
    choice = ss.get(K_CHOICE, DATA)
    if choice not in options:
        choice = DATA if DATA in options else CURRENT
    ss[key] = choice

    def _chosen() -> None:
        ss[K_CHOICE] = ss[key]

    box.radio("Plan to run on this data", list(options), format_func=options.get, key=key, horizontal=True,
              on_change=_chosen,
              help="The same choice on the Run page and every Compare methods page. The data's own plan has "
                   "thresholds made for its size; the 2020 production plan's were set for 330 million persons "
                   "and leave a small nation with totals only, most of them suppressed.")
    return resolve_plan(choice, own, own_label, state.config(), state.source_label(), data)


@st.cache_data(show_spinner=False, max_entries=8)
def _persons_in(path: str, mtime: float) -> int:
    with open(path, "rb") as fh:
        return max(sum(1 for line in fh if line.strip()) - 1, 0)  # less the header row


@st.cache_resource(show_spinner=False, max_entries=8)
def shared_result(kind: str, key: str) -> dict:
    """A box shared by every session for one seeded study (`kind`, and `key` made of its
    inputs), filled by the page under "value": the same inputs give the same tables, so a
    study that took seconds runs once, not once per session. The page runs the study
    outside this cached call so that its progress bar shows in the session that runs it
    (Streamlit replays what a cached function drew). Eight studies at most are kept."""
    return {}


def sample_persons(folder: Path) -> int | None:
    """The number of persons of a data folder's person-records.txt (synthetic data), or
    None without one."""
    path = Path(folder) / "data" / "person-records.txt"
    if not path.is_file():
        return None
    return _persons_in(str(path), path.stat().st_mtime)


def sample_plan(key: str) -> Basis:
    """The plan choice of a "Compare methods" page, which runs on the shipped sample:
    the data is the sample, its own plan the sample's config.json."""
    from ui.core import state

    folder = state.sample_dir()
    n = sample_persons(folder)
    data = f"the shipped synthetic sample ({n:,} persons, {folder.name}/)" if n is not None \
        else f"the shipped synthetic sample ({folder.name}/)"
    own = None
    try:
        own = SafeTabConfig.read(state.sample_config_path())
    except (ConfigError, OSError):
        own = None
    return choose_plan(own, state.SAMPLE if own is not None else None, data, key)


def nothing_published(basis: Basis, level: PopulationGroupLevel | None, what: str) -> str:
    """The words a page shows beside its verdict when the plan leaves SafeTab-P
    publishing nothing (`what`, e.g. "no sex by age table") on the data: which
    thresholds do it, and where the data's own plan is."""
    why = ""
    if level is not None and level.key in basis.config.thresholds_p:
        th = basis.config.thresholds(level)
        why = (f" Its thresholds for this level (Θ₁ = {th[0]:,}, Θ₂ = {th[1]:,}, Θ₃ = {th[2]:,}) are far above the "
               "size of any group in this data")
        why += "; they were set for a nation of 330 million persons." if basis.choice == PRODUCTION else "."
    other = " Choose the data's own plan above to see what SafeTab-P publishes here." if basis.choice != DATA else ""
    return f"Under {plain(basis.plan)}, SafeTab-P publishes {what} on {plain(basis.data)}.{why}{other}"


GLOSSARY_PAGE = "app_pages/safetab/glossary.py"


def glossary_links(terms: tuple[str, ...] | list[str], label: str = "In the glossary:") -> None:
    """A row of links, one per term, each opening the glossary on its entry."""
    from ui.core import glossary

    if not terms:
        return
    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    row.markdown(label)
    for t in terms:
        row.page_link(GLOSSARY_PAGE, label=t, icon=":material/menu_book:", query_params=glossary.link_params(t))


def header(page: MethodPage) -> None:
    """Title, the question and the method in two sentences, and links to the glossary
    entries of the terms the page uses."""
    st.title(page.title)
    st.markdown(f"**The question.** {page.question}")
    st.markdown(f"**The method.** {page.method}")
    st.caption(f"Source: {page.source}")
    glossary_links(page.terms)


def side_by_side(other: str, safetab: str = "SafeTab-P") -> tuple:
    """Two equal columns headed by the method's name and SafeTab-P's."""
    left, right = st.columns(2, gap="large")
    left.subheader(other)
    right.subheader(safetab)
    return left, right


def verdict(text: str, basis: Basis | None = None, nothing: str | None = None, study: str | None = None) -> str:
    """The page's conclusion in plain words, with the data and plan it comes from and,
    when the plan leaves SafeTab-P publishing nothing on the data, that in words
    (`nothing_published`) instead of a bare 0. `study`: how the results were drawn
    ("Seeded study (seed 1), NOT FOR RELEASE."), when they were. Returns the same as
    text (`verdict_text`), for the page's downloads to carry (`downloads`)."""
    st.subheader("Verdict")
    if nothing:
        st.warning(nothing, icon=":material/visibility_off:")
    st.success(text, icon=":material/gavel:")
    if basis is not None:
        st.caption(basis.sentence)
    return verdict_text(text, basis, nothing, study)


def verdict_text(text: str, basis: Basis | None = None, nothing: str | None = None, study: str | None = None) -> str:
    """verdict.txt: the verdict, what the plan leaves unpublished, the data and the plan
    (as typed, not Markdown), and how the results were drawn: a download read away from
    the page says what it came from."""
    lines = ["Verdict", "", text.replace("**", "")]
    if nothing:
        lines += ["", nothing.replace("**", "")]
    if basis is not None:
        lines += ["", f"Data: {basis.data}.", f"Plan: {basis.plan}."]
    if study:
        lines += ["", study]
    return "\n".join(lines) + "\n"


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


def downloads(files: dict[str, bytes | str | pd.DataFrame], zip_name: str, key: str,
              verdict: str | None = None) -> None:
    """A download button per file and one for all of them as a zip; `verdict` (what
    `verdict` returned) is verdict.txt, in the zip and on its own."""
    if verdict is not None:
        files = {"verdict.txt": verdict, **{k: v for k, v in files.items() if k != "verdict.txt"}}
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
    from ui.core import widgets

    st.subheader("The paper's own numbers")
    st.table(df.set_index("Where"))
    st.caption(caption)
    widgets.download_csv(df, f"{key}.csv", key=f"{key}_csv", label="Download this table (CSV)")
