"""Page logic of "Custom geographies" (app_pages/compare/spines.py): pure, no Streamlit.

Builds custom areas from the sample's GRF-C, turns `engine.reports.spines` results
into tables with plain labels, draws the charts and writes the verdicts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calculators.levels import ITERATION_LEVEL_NAMES, STAT_LEVEL_NAMES
from engine.inputs.geography import Geography
from engine.reports import spines as rs
from engine.tabulation.mechanism import TOTAL_ONLY
from methods import spines
from ui.core.charts import COLORS, style

LEVEL_NAMES = {"USA": "United States", "STATE": "State", "COUNTY": "County", "TRACT": "Tract", "PLACE": "Place",
               "AIANNH": "AIANNH area", "PR-STATE": "Puerto Rico", "PR-COUNTY": "PR county",
               "PR-TRACT": "PR tract", "PR-PLACE": "PR place", "BLOCK GROUP": "Block group", "BLOCK": "Block",
               "TRACT GROUP": "Tract group", "NATION": "Nation"}

BUILDERS = ("Whole tracts", "A place or AIANNH area minus tracts", "Blocks", "A list (type or upload)")
EXAMPLE_LIST = "# one entry a line: [+|-] [level] id\nplace 0600100\n- tract 06001000100\n"


def unit_label(unit: str) -> str:
    """"TRACT 06001000100" -> "Tract 06001000100"."""
    if not unit:
        return ""
    geo, _, rid = unit.partition(" ")
    return f"{LEVEL_NAMES.get(geo, geo)} {rid}"


def _keys(geo: Geography) -> np.ndarray:
    return np.asarray(geo.block_keys.to_numpy(zero_copy_only=False)).astype(str)


# ------------------------------------------------------------------------ areas
def tract_options(geo: Geography) -> list[str]:
    """Tract ids of the runs (US then Puerto Rico)."""
    return [str(t) for g in ("TRACT", "PR-TRACT") if g in geo.regions for t in geo.regions[g]]


def entity_options(geo: Geography) -> dict[str, tuple[str, str]]:
    """Label -> (level, region id) of every place and AIANNH area."""
    out = {}
    for g in ("PLACE", "PR-PLACE", "AIANNH"):
        if g not in geo.regions:
            continue
        counts = np.bincount(geo.block_region[g][geo.block_region[g] >= 0], minlength=geo.n_regions(g))
        for i, r in enumerate(geo.regions[g].astype(str)):
            out[f"{LEVEL_NAMES[g]} {r} ({counts[i]} blocks)"] = (g, r)
    return out


def block_options(geo: Geography) -> list[str]:
    keys = _keys(geo)
    run = np.zeros(len(keys), bool)
    for g in ("STATE", "PR-STATE"):
        if g in geo.block_region:
            run |= geo.block_region[g] >= 0
    return keys[run].tolist()


def _tract_mask(geo: Geography, tracts: list[str]) -> np.ndarray:
    keys = _keys(geo)
    return np.isin(np.char.ljust(keys, 15).astype("U11"), np.asarray(tracts, dtype=str)) if tracts else \
        np.zeros(len(keys), bool)


def area_from_tracts(geo: Geography, tracts: list[str]) -> np.ndarray:
    return _tract_mask(geo, tracts)


def entity_tracts(geo: Geography, level: str, region: str) -> list[str]:
    """The tracts a place or AIANNH area touches."""
    where = np.flatnonzero(geo.regions[level].astype(str) == region)
    keys = _keys(geo)[geo.block_region[level] == where[0]]
    return sorted(set(np.char.ljust(keys, 15).astype("U11").tolist()))


def area_from_entity(geo: Geography, level: str, region: str, minus_tracts: list[str]) -> np.ndarray:
    """The blocks of a place or AIANNH area outside the given tracts."""
    where = np.flatnonzero(geo.regions[level].astype(str) == region)
    inside = geo.block_region[level] == where[0]
    return inside & ~_tract_mask(geo, minus_tracts)


def area_from_blocks(geo: Geography, blocks: list[str]) -> np.ndarray:
    return np.isin(_keys(geo), np.asarray(blocks, dtype=str))


def area_file(geo: Geography, area: np.ndarray) -> str:
    """The area as a list `python -m engine spines --area FILE` reads: whole tracts
    where the area covers them, blocks elsewhere."""
    keys = _keys(geo)[area]
    all_keys = _keys(geo)
    tracts_all, n_all = np.unique(np.char.ljust(all_keys, 15).astype("U11"), return_counts=True)
    tracts_in, n_in = np.unique(np.char.ljust(keys, 15).astype("U11"), return_counts=True)
    full = set(tracts_in[n_in == n_all[np.searchsorted(tracts_all, tracts_in)]].tolist())
    lines = ["# custom area: whole tracts, then blocks"] + [f"tract {t}" for t in sorted(full)]
    lines += [f"block {k}" for k in keys if k[:11] not in full]
    return "\n".join(lines) + "\n"


def group_options(tables: dict, specs, iteration_level: int) -> pd.DataFrame:
    """The population groups of an iteration level, largest first: code, name, persons
    in the nation (truth of the largest-level total), label."""
    best: dict[str, int] = {}
    for lvl, t in tables.items():
        if lvl.iteration_level != iteration_level:
            continue
        tot = t.truth.sum(axis=0)
        for c, v in zip(t.codes.tolist(), tot.tolist()):
            best[c] = max(best.get(c, 0), int(v))
    df = pd.DataFrame({"code": list(best), "persons": list(best.values())})
    if df.empty:
        return df.assign(name=[], label=[])
    df["name"] = [specs.iterations[c].name if c in specs.iterations else c for c in df["code"]]
    df = df.sort_values(["persons", "code"], ascending=[False, True]).reset_index(drop=True)
    df["label"] = [f"{n} ({c}) — {p:,} persons" for c, n, p in zip(df["code"], df["name"], df["persons"])]
    return df


def iteration_levels(tables: dict) -> list[int]:
    return sorted({lvl.iteration_level for lvl in tables})


def level_label(level: int) -> str:
    return f"{ITERATION_LEVEL_NAMES[level]} (iteration level {level})"


# ------------------------------------------------------------------ tables
def table_name(stat_level: int) -> str:
    """The table a stat level publishes, in words."""
    return "total only (TotalOnly group)" if stat_level == TOTAL_ONLY else STAT_LEVEL_NAMES[int(stat_level)]


def decomposition_table(res: rs.AreaResult) -> pd.DataFrame:
    """The units of the composition with plain labels."""
    u = res.units
    if u.empty:
        return pd.DataFrame(columns=["Sign", "Published unit", "True count", "Published count", "Noise variance",
                                     "Table published", "Available", "Same blocks as"])
    return pd.DataFrame({
        "Sign": u["sign"], "Published unit": [unit_label(x) for x in u["unit"]],
        "True count": u["truth"], "Published count": np.where(u["released"], u["published"], pd.NA),
        "Noise variance": u["variance"].round(1),
        "Table published": [table_name(s) if r else "—" for s, r in zip(u["stat_level"], u["released"])],
        "Available": np.where(u["released"], "published", np.where(u["tabulated"], "suppressed", "not tabulated")),
        "Same blocks as": [", ".join(unit_label(x.strip()) for x in s.split(",")) if s else "" for s in
                           u["same_blocks_as"]],
    })


def census_table(res: rs.AreaResult) -> pd.DataFrame:
    c = res.census_units
    return pd.DataFrame({"Sign": c["sign"], "Unit (not published by SafeTab-P)":
                         [f"{LEVEL_NAMES.get(lv, lv)} {i}" for lv, i in zip(c["level"], c["id"])]})


def _cell(x) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        return f"{float(x):,.1f}"
    return str(x)


def summary_table(res: rs.AreaResult, direct: dict | None) -> pd.DataFrame:
    """The composed count beside a directly published unit of the same size (text cells)."""
    d = direct or {}
    rows = [
        ("Unit", "custom area", unit_label(d.get("unit", "")) or None),
        ("Published units added or subtracted", res.count if res.composable else "not composable", 1 if d else None),
        ("True count (persons)", res.truth, d.get("truth")),
        ("Published / composed count", res.estimate, d.get("published")),
        ("Noise variance", res.variance, None if not d else float(d["variance"])),
        ("95% MOE, exact law of the noise", res.moe_exact, d.get("moe_exact")),
        ("95% MOE, normal approximation 1.96·√variance", res.moe_normal, d.get("moe_normal")),
    ]
    return pd.DataFrame({"Measure": [r[0] for r in rows], "Custom area (composed)": [_cell(r[1]) for r in rows],
                         "Published unit of the same size": [_cell(r[2]) for r in rows]})


# ------------------------------------------------------------------ charts
def variance_chart(res: rs.AreaResult, direct: dict | None) -> tuple[go.Figure, pd.DataFrame]:
    """Each unit's noise variance, their sum (the composed count's) and the variance of a
    directly published unit of the same size."""
    u = res.units
    rows = [(f"{s} {unit_label(x)}", float(v), "unit of the composition") for s, x, v in
            zip(u["sign"], u["unit"], u["variance"])]
    rows.append(("= composed count", float(res.variance), "composed count (sum)"))
    if direct:
        rows.append((f"{unit_label(direct['unit'])} (published directly)", float(direct["variance"]),
                     "published unit of the same size"))
    data = pd.DataFrame(rows, columns=["what", "variance", "kind"])
    fig = go.Figure()
    for kind, color in (("unit of the composition", COLORS[0]), ("composed count (sum)", COLORS[3]),
                        ("published unit of the same size", COLORS[1])):
        sub = data[data["kind"] == kind]
        if len(sub):
            fig.add_trace(go.Bar(y=sub["what"], x=sub["variance"], orientation="h", name=kind, marker_color=color,
                                 text=[f"{v:,.0f}" for v in sub["variance"]], textposition="outside",
                                 hovertemplate="%{y}<br>variance %{x:,.1f}<extra></extra>"))
    style(fig, "Noise variance: the units of the composition add up", "variance (persons²)", "",
            height=max(260, 40 * len(data) + 150))
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=data["what"].tolist())
    fig.update_xaxes(range=[0, float(data["variance"].max()) * 1.18])
    return fig, data


#: The spines of the study, in order: (column of `SpineStudy.entities`, name).
SPINES = (("osed_census", "Census spine"), ("osed_aian", "AIAN spine"), ("osed_optimised", "optimised spine"))


def osed_histogram(entities: pd.DataFrame) -> tuple[go.Figure, pd.DataFrame]:
    """Number of places and of AIANNH areas at each OSED on the Census spine, production's
    AIAN spine and the optimised spine (the seed's figures: distributions of the
    off-spine distance)."""
    kinds = {"places": entities["level"] != "AIANNH", "AIANNH areas": entities["level"] == "AIANNH"}
    rows = []
    for kind, sel in kinds.items():
        for col, spine in SPINES:
            vc = entities.loc[sel, col].value_counts()
            for d, n in vc.items():
                rows.append({"entities": kind, "spine": spine, "OSED": int(d), "count": int(n)})
    data = pd.DataFrame(rows, columns=["entities", "spine", "OSED", "count"]).sort_values(
        ["entities", "spine", "OSED"]).reset_index(drop=True)
    top = int(data["OSED"].max()) if len(data) else 1
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"Places ({int(kinds['places'].sum())})",
                                                        f"AIANNH areas ({int(kinds['AIANNH areas'].sum())})"],
                        horizontal_spacing=0.08)
    for col, kind in enumerate(kinds, start=1):
        for i, (_c, spine) in enumerate(SPINES):
            sub = data[(data["entities"] == kind) & (data["spine"] == spine)]
            fig.add_trace(go.Bar(x=sub["OSED"], y=sub["count"], name=spine, marker_color=COLORS[i],
                                 showlegend=col == 1, legendgroup=spine,
                                 hovertemplate=f"{spine}<br>OSED %{{x}}: %{{y}} {kind}<extra></extra>"),
                          row=1, col=col)
    fig.update_layout(barmode="group")
    style(fig, "Off-spine entity distance on the Census, AIAN and optimised spines",
            "OSED (units added or subtracted)", "number of entities", height=420)
    # each panel's axis says only "OSED": two long titles side by side ran into each other in a
    # half-width column; the title and the summary say what OSED counts
    fig.update_xaxes(dtick=1, range=[0.4, top + 0.6], title_text="OSED")
    fig.update_yaxes(title_text="", col=2)
    for col, kind in enumerate(kinds, start=1):
        most = data.loc[data["entities"] == kind, "count"].max() if len(data) else 0
        if most and most <= 10:  # whole entities: no half ticks
            fig.update_yaxes(dtick=1, col=col)
    fig.update_layout(margin=dict(t=80))
    return fig, data


def osed_summary(entities: pd.DataFrame) -> pd.DataFrame:
    """Mean, median, largest OSED and share on the spine, per kind of entity and spine."""
    rows = []
    for kind, sel in (("Places", entities["level"] != "AIANNH"), ("AIANNH areas", entities["level"] == "AIANNH")):
        if not sel.any():
            continue
        for col, name in SPINES:
            spine = name[0].upper() + name[1:]
            v = entities.loc[sel, col]
            rows.append({"Entities": kind, "Spine": spine, "Number": int(sel.sum()), "Mean OSED": round(v.mean(), 2),
                         "Median OSED": float(v.median()), "Largest OSED": int(v.max()),
                         "On the spine (OSED 1)": f"{(v == 1).mean():.0%}"})
    return pd.DataFrame(rows)


def safetab_summary(entities: pd.DataFrame) -> pd.DataFrame:
    """SafeTab-P: each place and AIANNH area is published directly (one unit); from its
    states, counties and tracts alone, how many could be made at all."""
    rows = []
    for kind, sel in (("Places", entities["level"] != "AIANNH"), ("AIANNH areas", entities["level"] == "AIANNH")):
        if not sel.any():
            continue
        t = entities.loc[sel, "osed_safetab_tree"]
        ok = t[t != spines.NOT_COMPOSABLE]
        rows.append({"Entities": kind, "Number": int(sel.sum()), "Published directly": "all (OSED 1)",
                     "From tracts alone": int(len(ok)),
                     "Not from tracts": int((t == spines.NOT_COMPOSABLE).sum()),
                     "Mean OSED from tracts": round(float(ok.mean()), 2) if len(ok) else None})
    return pd.DataFrame(rows)


def safetab_summary_view(entities: pd.DataFrame) -> pd.DataFrame:
    """`safetab_summary` as the page shows it in its half-width column: one row per
    measure, one column per kind of entity (six columns did not fit)."""
    t = safetab_summary(entities)
    out = {"Measure": [c for c in t.columns if c != "Entities"]}
    for _, row in t.iterrows():
        out[row["Entities"]] = [_cell(row[c]) for c in out["Measure"]]
    return pd.DataFrame(out)


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return str(value)


def entities_table(entities: pd.DataFrame) -> pd.DataFrame:
    e = entities
    return pd.DataFrame({
        "Entity": [f"{LEVEL_NAMES.get(lv, lv)} {r}" for lv, r in zip(e["level"], e["region"])],
        "Blocks": e["blocks"], "Counties": e["counties"], "OSED, Census spine": e["osed_census"],
        "OSED, AIAN spine": e["osed_aian"], "OSED, optimised spine": e["osed_optimised"],
        "SafeTab-P from tracts (— = not composable)": [str(x) if x != spines.NOT_COMPOSABLE else "—"
                                                       for x in e["osed_safetab_tree"]],
    }).sort_values(["OSED, Census spine", "Entity"], ascending=[False, True]).reset_index(drop=True)


def units_table(study: rs.SpineStudy) -> pd.DataFrame:
    u = study.units
    return pd.DataFrame({"Level": [LEVEL_NAMES.get(x, x) for x in u["level"]], "Census spine": u["before"],
                         "AIAN spine": u["aian"], "Optimised spine": u["after"]})


def bypass_table(study: rs.SpineStudy) -> pd.DataFrame:
    b = study.bypassed
    return pd.DataFrame({"Level": [LEVEL_NAMES.get(x, x) for x in b["level"]],
                         "Pure DP (geometric)": b["laplace"], "zCDP (Gaussian)": b["gaussian"]})


# ----------------------------------------------------------------- verdicts
def area_verdict(res: rs.AreaResult, direct: dict | None) -> str:
    if not res.composable:
        if res.split_pieces:
            return (f"This area cannot be built from SafeTab-P's published numbers at all: it cuts through "
                    f"{res.split_pieces:,} group(s) of blocks that SafeTab-P only publishes together. A TopDown-style "
                    f"release with block groups and blocks could make it from {res.census_osed:,} unit(s).")
        if res.count_if_all_published is None:
            return (f"This group is not published for the units this area needs ({res.reason}): a data user gets "
                    "no estimate here.")
        text = (f"With every unit published this area would take {res.count_if_all_published:,} unit(s), but "
                f"{', '.join(unit_label(x) for x in res.needed_but_suppressed) or 'a unit it needs'} is suppressed "
                "for this group and nothing else published makes it: a data user gets no estimate here.")
        if direct:
            text += (f" A published unit of the same size ({unit_label(direct['unit'])}, {direct['truth']:,} "
                     f"persons) has ±{direct['moe_exact']:,}.")
        return text
    if res.variance is None:
        return f"The area is {res.count:,} published unit(s) away."
    text = (f"The area takes {res.count:,} published unit(s); their noise adds up to a variance of "
            f"{res.variance:,.0f} and a 95% MOE of ±{res.moe_exact:,} persons.")
    if direct:
        ratio = res.moe_exact / direct["moe_exact"] if direct["moe_exact"] else float("inf")
        text += (f" A directly published unit of about the same size ({unit_label(direct['unit'])}, "
                 f"{direct['truth']:,} persons) has ±{direct['moe_exact']:,}: composing costs "
                 f"{ratio:.1f} times the error.")
    return text


def spine_verdict(study: rs.SpineStudy) -> str:
    e = study.entities
    b, m, a = e["osed_census"], e["osed_aian"], e["osed_optimised"]
    t = e["osed_safetab_tree"]
    ai = e["level"] == "AIANNH"
    aian_part = (f" Production's AIAN spine alone takes the {int(ai.sum()):,} AIANNH areas from {b[ai].mean():.1f} to "
                 f"{m[ai].mean():.1f} units on average; the" if ai.any() else " The")
    return (f"On the Census spine the {len(e):,} places and AIANNH areas are on average {b.mean():.1f} units away "
            f"(at most {int(b.max()):,}).{aian_part} seed's optimisation of the AIAN spine, as production runs it, brings "
            f"all of them to {a.mean():.1f} (at most {int(a.max()):,}) in "
            f"{study.seconds:.2f} s, with {int((a == 1).sum()):,} of them exactly on the spine. SafeTab-P needs no "
            f"spine for them: it publishes every place and AIANNH area directly, at the price of a budget per "
            f"geography level; from its tracts alone {int((t == spines.NOT_COMPOSABLE).sum()):,} of them could not "
            "be made at all.")


# ----------------------------------------------------------------- the paper's own numbers
def paper_numbers() -> pd.DataFrame:
    """The numbers of the spine paper (Cumings-Menon et al.) the project can compute, each
    beside the value `methods.spines` computes now. Where the text we have lost a
    number, the table says so."""
    n = 100
    fan = spines.lowest_max_fanout(n)
    groups = -(-n // fan)
    laplace_k = max(k for k in range(1, 50) if spines.should_bypass(k, 1, 1, "laplace"))
    gauss_k = max(k for k in range(1, 50) if spines.should_bypass(k, 1, 1, "gaussian"))
    before, after = spines.bypass_variances(3, 1, 1, "laplace")
    cap = spines.group_size_cap(n, spines.FANOUT_CUTOFF)
    rows = [
        ("§4", "Tract of 100 blocks: lowest possible largest fan-out", "10", f"{fan}", "yes" if fan == 10 else "no"),
        ("§4", "… with 10 block groups of 10 blocks: units involved", "11", f"{1 + groups}",
         "yes" if 1 + groups == 11 else "no"),
        ("§4", "Most blocks in an optimised block group (n = 100 blocks, fanout_cutoff = 12)",
         "lost in the text (its example: √100 = 10)",
         f"{cap} (production's int(√n + fanout_cutoff + 1) = int(10 + 12 + 1))", "—"),
        ("§5, Thm 2", "Equal shares, pure DP: bypass a parent with at most … children", "3", f"{laplace_k}",
         "yes" if laplace_k == 3 else "no"),
        ("§5, Remark 1", "Bypassing a parent does not increase its variance if and only if Theorem 2's "
         "condition holds (here 3 children, equal shares)", "not increased (no number printed)",
         f"before {float(before):.4g}, after {float(after):.4g}" + (" (equal: the condition holds with equality)"
                                                                     if before == after else ""),
         "yes" if after <= before else "no"),
        ("§5", "zCDP (Gaussian): bypass parents with only … child", "1", f"{gauss_k}", "yes" if gauss_k == 1 else "no"),
        ("§3.1", "Variance gained by the discrete distributions at large budgets", "lost in the text",
         "not computed (the budgets are lost too)", "—"),
    ]
    return pd.DataFrame(rows, columns=["Where", "The paper says", "Paper's value", "Computed here", "Match"])
