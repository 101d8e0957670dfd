"""The "Consistency" comparison page's logic (pure: no Streamlit).

Runs the engine's consistency comparison (`engine.reports.consistency.compare`) on the
shipped sample with the app's plan, and turns it into what the page shows: the seed
paper's Table 7 (error by geography level x method), the summary, the error by true
size, two charts and the verdict in plain words.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from calculators.config import SafeTabConfig
from calculators.levels import ITERATION_LEVEL_NAMES
from engine.reports.accuracy import SIZE_LABELS
from engine.reports.consistency import ConsistencyComparison, table7
from engine.tabulation.consistency import LABELS, STUDY_METHODS
from ui.compare import lists
from ui.core import typed

#: The two measures the page can show, by their column in the comparison's tables.
MEASURES = {"mean_abs_error": "Mean absolute error (persons)", "bias": "Bias (persons)"}
#: Size buckets with fewer published totals than this are left out of the size chart.
MIN_COUNTS = 30
#: Colours of the methods in every chart (SafeTab-P grey, as the baseline).
COLORS = {"none": "#7f7f7f", "least-squares": "#1f5aa6", "tree-dp": "#2a9d4b", "relax-then-round": "#e07b00"}
OTHERS = [m for m in STUDY_METHODS if m != "none"]


def run_study(params_dir: Path, data_dir: Path, config: SafeTabConfig, seed: int, trials: int,
              progress=None) -> ConsistencyComparison:
    """Every method on `trials` seeded releases of the data under the plan (a study, not a release)."""
    from engine.reports.consistency import compare
    from engine.run import prepare
    from ui.safetab.runner import on_files

    prepared = prepare(params_dir, data_dir, config=on_files(config))  # the files as the Run page reads them
    return compare(prepared, STUDY_METHODS, trials=trials, seed=seed, progress=progress)


def iteration_levels(comp: ConsistencyComparison) -> list[int]:
    """The iteration levels the comparison has numbers for, Detailed first."""
    return sorted({int(x) for x in comp.by_level.iteration_level}, reverse=True) if len(comp.by_level) else []


def table7_view(comp: ConsistencyComparison, iteration_level: int, methods: list[str], value: str = "mean_abs_error"
                ) -> pd.DataFrame:
    """Table 7 with plain labels: one row per geography level, one column per method."""
    t = table7(comp, iteration_level, value)
    if t.empty:
        return pd.DataFrame({"Geography level": []})
    cols = [m for m in methods if m in t.columns]
    out = t[["geo_level", *cols]].rename(columns={"geo_level": "Geography level", **LABELS})
    counts = comp.by_level[(comp.by_level.iteration_level == iteration_level) & (comp.by_level.method == "none")]
    out.insert(1, "Published totals", out["Geography level"].map(dict(zip(counts.geo_level, counts.counts)))
               .astype("Int64"))
    return out.round(2)


def summary_view(comp: ConsistencyComparison, methods: list[str]) -> pd.DataFrame:
    """One row per method: error, bias, negatives, violations, run time (plain labels)."""
    s = comp.summary.set_index("method").loc[[m for m in methods if m in set(comp.summary.method)]]
    return pd.DataFrame({
        "Method": [LABELS[m] for m in s.index],
        "Mean absolute error (persons)": s.mean_abs_error.round(2).values,
        "Bias (persons)": s.bias.round(2).values,
        "Negative totals (%)": (100 * s.share_negative).round(2).values,
        "Parents not adding up, per release": s.violations_per_release.round(1).values,
        "Parents checked, per release": s.parents_per_release.round().astype(int).values,
        "Run time per release (s)": s.seconds_per_release.round(3).values,
        "Table cells: mean absolute error (persons)": s.cells_mean_abs_error.round(2).values,
        "Table cells: negative (%)": (100 * s.cells_share_negative).round(2).values,
    })


def by_size_table(comp: ConsistencyComparison, value: str = "mean_abs_error") -> pd.DataFrame:
    """One row per true-size bucket, one column per method, `value` in the cells."""
    d = comp.by_size
    if d.empty:
        return pd.DataFrame({"True size (persons)": []})
    wide = d.pivot_table(index="true_size", columns="method", values=value, sort=False)
    order = [b for b in SIZE_LABELS if b in wide.index]
    cols = [m for m in STUDY_METHODS if m in wide.columns]
    counts = d[d.method == "none"].set_index("true_size").counts
    out = wide.loc[order, cols].round(3).rename(columns=LABELS).reset_index().rename(
        columns={"true_size": "True size (persons)"})
    out.insert(1, "Published totals", out["True size (persons)"].map(counts).astype("Int64"))
    return out


def by_size_view(comp: ConsistencyComparison) -> pd.DataFrame:
    """Long format for the size chart: true size, method, error and bias (plain labels)."""
    d = comp.by_size
    return pd.DataFrame({
        "True size of the group (persons)": d.true_size.values,
        "Method": d.method.map(LABELS).values,
        "Published totals": d.counts.values,
        "Mean absolute error (persons)": d.mean_abs_error.round(3).values,
        "Bias (persons)": d.bias.round(3).values,
        "Negative totals (%)": (100 * d.share_negative).round(2).values,
    })


def level_chart(comp: ConsistencyComparison, iteration_level: int, value: str = "mean_abs_error"
                ) -> tuple[go.Figure, pd.DataFrame]:
    """Grouped bars: `value` (mean absolute error or bias) by geography level, one bar per method."""
    t = table7(comp, iteration_level, value)
    long = t.melt(id_vars="geo_level", var_name="method", value_name="v") if not t.empty else pd.DataFrame(
        columns=["geo_level", "method", "v"])
    fig = go.Figure()
    for m in [x for x in STUDY_METHODS if x in set(long.method)]:
        sub = long[long.method == m]
        fig.add_trace(go.Bar(x=sub.geo_level, y=sub.v, name=LABELS[m], marker_color=COLORS[m],
                             hovertemplate="%{x}<br>" + LABELS[m] + ": %{y:.2f} persons<extra></extra>"))
    what = "Mean absolute error" if value == "mean_abs_error" else "Bias"
    _layout(fig, f"{what} of published totals, {ITERATION_LEVEL_NAMES[iteration_level]} groups",
            "geography level", "mean |published − true| (persons)" if value == "mean_abs_error"
            else "mean (published − true) (persons)")
    fig.update_layout(barmode="group")
    data = long.rename(columns={"geo_level": "Geography level", "v": MEASURES[value]}).assign(
        Method=lambda d: d.method.map(LABELS)).drop(columns="method")
    return fig, data


def size_chart(comp: ConsistencyComparison, value: str = "bias", min_counts: int = MIN_COUNTS) -> go.Figure:
    """Grouped bars by true size, one per method: where clamping at zero pushes counts up.

    Buckets with fewer than `min_counts` published totals are left out: too few to say.
    """
    d = comp.by_size[comp.by_size.counts >= min_counts]
    order = [b for b in SIZE_LABELS if b in set(d.true_size)]
    fig = go.Figure()
    for m in STUDY_METHODS:
        sub = d[d.method == m].set_index("true_size").reindex(order)
        if sub[value].isna().all():
            continue
        fig.add_trace(go.Bar(x=order, y=sub[value], name=LABELS[m], marker_color=COLORS[m],
                             hovertemplate="true size %{x}<br>" + LABELS[m] + ": %{y:+.2f} persons<extra></extra>"))
    what = "Bias" if value == "bias" else "Mean absolute error"
    _layout(fig, f"{what} of published totals by true size (all nested levels, Detailed and Regional)",
            "true size of the group (persons)",
            "mean (published − true) (persons)" if value == "bias" else "mean |published − true| (persons)")
    fig.update_layout(barmode="group")
    return fig


def _layout(fig: go.Figure, title: str, x: str, y: str) -> None:
    fig.update_layout(title=dict(text=title, x=0, xanchor="left", font=dict(size=15)), height=420,
                      margin=dict(l=60, r=20, t=50, b=100), template="plotly_white", hovermode="closest",
                      legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0))
    fig.update_xaxes(title_text=x)
    fig.update_yaxes(title_text=y)


def _relax_then_round(rr, dp, err) -> str:
    """The verdict's sentence on relax-then-round, from the measured figures: its error
    against the tree DP's (within 10 % is "about"), and the sums it leaves broken."""
    ratio = rr.mean_abs_error / dp.mean_abs_error if dp.mean_abs_error > 0 else float("inf")
    if 0.9 <= ratio <= 1.1:
        how = f"about the tree DP's mean absolute error ({err(rr.mean_abs_error)} against {err(dp.mean_abs_error)})"
    else:
        how = (f"a {'larger' if ratio > 1 else 'smaller'} mean absolute error than the tree DP "
               f"({err(rr.mean_abs_error)} against {err(dp.mean_abs_error)})")
    if rr.violations_per_release > 0:
        return (f"Relax-then-round has {how} but leaves {rr.violations_per_release:,.0f} violations per release: "
                "rounding each count on its own breaks the sums again, which is why the exact program is needed.")
    return (f"Relax-then-round has {how}, and in these releases its rounding left every sum intact; in general "
            "rounding each count on its own can break them, which the exact program never does.")


def verdict_text(comp: ConsistencyComparison) -> str:
    """The trade-off in plain words, from the numbers of this comparison."""
    s = comp.summary.set_index("method")
    none, ls, dp, rr = (s.loc[m] for m in ("none", "least-squares", "tree-dp", "relax-then-round"))
    zero = comp.by_size[comp.by_size.true_size == "0"].set_index("method")
    dp_zero = float(zero.bias.get("tree-dp", float("nan")))

    def err(x):
        return f"{x:.2f}"

    def change(a, b):
        return "cuts" if b < a else "raises"

    negatives = " (the plan allows negative counts)." if ls.share_negative > 0 else "."
    parts = [
        (f"SafeTab-P's published totals do not add up: {none.violations_per_release:,.0f} of "
         f"{none.parents_per_release:,.0f} parent totals per release differ from the sum of their children."),
        (f"Least squares makes every level add up and {change(none.mean_abs_error, ls.mean_abs_error)} the mean "
         f"absolute error (all nested levels, Detailed and Regional groups) from {err(none.mean_abs_error)} to "
         f"{err(ls.mean_abs_error)} persons, because the precise "
         f"totals correct the noisy ones; its bias is {ls.bias:+.2f} persons, but "
         f"{100 * ls.share_negative:.1f}% of its totals are negative{negatives}"),
        (f"The tree DP also adds up exactly and publishes no negative count, with a mean absolute error of "
         f"{err(dp.mean_abs_error)} persons; the price is bias: forcing counts to be at least zero can only push "
         f"small groups up ({dp_zero:+.2f} persons on groups whose true count is 0, {dp.bias:+.2f} overall)."),
        _relax_then_round(rr, dp, err),
        ("In short: least squares for analysts who need unbiased estimates, the tree DP for a public table that "
         "adds up and has no negative counts; both cost nothing in privacy, and neither changes which groups "
         "are suppressed."),
    ]
    if comp.trials == 1:
        parts.append("(One seeded release: raise the number of releases to average out the noise.)")
    return " ".join(parts)


# ------------------------------------------------------------------ group sizes (the paper's problem)
#: Colours of the paper's four mechanisms.
GS_COLORS = {"h-relaxed": "#e07b00", "h-dp": "#2a9d4b", "c-relaxed": "#b07aa1", "c-exact": "#1f5aa6"}
GS_LEVEL_NAMES = {"USA": "USA", "STATE": "states", "COUNTY": "counties", "TRACT": "tracts"}


#: What the group-size study takes: budgets ε (each split over the 4 levels), releases per
#: budget, how many budgets at once.
EPSILON_RULE = typed.Rule(lo=0.0001, hi=100)  # as small as gamma may be; 0 would be no release
GS_TRIALS_RULE = typed.Rule(whole=True, lo=1, hi=20)
MAX_EPSILONS = 6


def parse_epsilons(text: str) -> tuple[float, ...]:
    """"0.1, 0.5, 1" -> (0.1, 0.5, 1.0), each budget read by `EPSILON_RULE` exactly as
    typed (`ui.compare.lists.parse_list`); a budget typed twice is refused, never
    dropped. `typed.Refused` (a ValueError) in plain words."""
    return tuple(float(v) for v in lists.parse_list(text, EPSILON_RULE, most=MAX_EPSILONS, example="0.1, 0.5, 1",
                                                    what="budgets"))


def run_group_study(params_dir: Path, data_dir: Path, epsilons, trials: int, seed: int, max_size: int,
                    progress=None):
    """The paper's four mechanisms on synthetic households of the data's tracts (a study)."""
    from engine.reports.group_sizes import sample_study

    return sample_study(params_dir, data_dir, epsilons, trials, seed, max_size, progress)


def group_table7(study) -> pd.DataFrame:
    """The paper's Table 7 layout: one row per (ε, mechanism), the mean error per level,
    the consistency violations, the levels not adding up to n and the run time."""
    from engine.reports.group_sizes import LEVELS

    t = study.table7
    out = pd.DataFrame({"ε": t["epsilon"], "Mechanism": t["label"]})
    for lvl in LEVELS:
        out[f"Error, {GS_LEVEL_NAMES[lvl]}"] = t[f"error_{lvl}"].round(2)
    out["Consistency violations"] = t["violations"].round(1)
    out["Levels not adding up to n"] = t["unfaithful_levels"].round(1)
    out["Run time (s)"] = t["seconds"].round(3)
    return out


def group_truth(study) -> pd.DataFrame:
    """The true group-size vector of every area (synthetic households)."""
    from engine.reports.group_sizes import LEVELS

    h = study.hierarchy
    k = h.vectors.shape[1]
    out = pd.DataFrame({"Area": h.region, "Level": [GS_LEVEL_NAMES[LEVELS[i]] for i in h.level]})
    for j in range(k):
        out[f"Households of {j + 1}{'+' if j == k - 1 else ''}"] = h.vectors[:, j]
    return out


def group_chart(study, epsilon: float) -> tuple[go.Figure, pd.DataFrame]:
    """Grouped bars: the mean error of a region's group-size vector at each level, per mechanism."""
    from engine.reports.group_sizes import LEVELS, MECHANISMS

    t = study.table7[study.table7["epsilon"] == epsilon]
    rows = [{"Geography level": GS_LEVEL_NAMES[lvl], "Mechanism": label, "Mean error (groups)": float(r[f"error_{lvl}"])}
            for key, label, _c, _m in MECHANISMS for _i, r in t[t["mechanism"] == key].iterrows() for lvl in LEVELS]
    data = pd.DataFrame(rows)
    fig = go.Figure()
    for key, label, _c, _m in MECHANISMS:
        sub = data[data["Mechanism"] == label]
        fig.add_trace(go.Bar(x=sub["Geography level"], y=sub["Mean error (groups)"], name=label,
                             marker_color=GS_COLORS[key],
                             hovertemplate="%{x}<br>" + label + ": %{y:.2f} groups<extra></extra>"))
    _layout(fig, f"Error of a region's group-size vector (ε = {epsilon:g})", "geography level",
            "mean Σ |released − true| over sizes (groups)")
    fig.update_layout(barmode="group")
    return fig, data


def group_verdict(study) -> str:
    """The paper's findings, checked on these numbers."""
    t = study.table7.set_index(["epsilon", "mechanism"])
    lines = []
    relaxed_cv = t.xs("h-relaxed", level="mechanism")["violations"].mean()
    c_relaxed_cv = t.xs("c-relaxed", level="mechanism")["violations"].mean()
    exact = pd.concat([t.xs("h-dp", level="mechanism"), t.xs("c-exact", level="mechanism")])
    if exact["violations"].max() == 0 and exact["unfaithful_levels"].max() == 0:
        lines.append(
            f"As in the paper's Table 7, the exact mechanisms never break the hierarchy and every level adds up to "
            f"the {study.hierarchy.households:,} households, while relaxing and rounding leaves {relaxed_cv:.1f} "
            f"(group sizes) and {c_relaxed_cv:.1f} (cumulative) inconsistent counts per release.")
    else:  # never expected: say what the numbers are
        lines.append(f"The exact mechanisms left {exact['violations'].max():.1f} violations and "
                     f"{exact['unfaithful_levels'].max():.1f} levels not adding up: please report.")
    e0 = min(study.epsilons)
    h, c = t.loc[(e0, "h-dp")], t.loc[(e0, "c-exact")]
    lv = [f"error_{x}" for x in ("USA", "STATE", "COUNTY", "TRACT")]
    better = sum(c[x] < h[x] for x in lv)
    lines.append(
        f"Cumulative counts need half the noise (sensitivity 1 instead of 2): at ε = {e0:g} the cumulative exact "
        f"mechanism is more accurate than the group-size DP at {better} of 4 levels (USA: {c[lv[0]]:.1f} against "
        f"{h[lv[0]]:.1f} groups).")
    errors = [c for c in t.columns if c.startswith("error_")]
    relaxed = t[t.index.get_level_values("mechanism").isin(["h-relaxed", "c-relaxed"])][errors].to_numpy().mean()
    exact_err = t[t.index.get_level_values("mechanism").isin(["h-dp", "c-exact"])][errors].to_numpy().mean()
    if abs(relaxed - exact_err) <= 0.05 * exact_err:
        lines.append(f"Here rounding the relaxation changes the error little ({relaxed:.1f} against {exact_err:.1f} "
                     "groups, mean over levels and budgets); what it costs is consistency. The paper found its exact "
                     "mechanisms more accurate than the relaxed ones on its Census and taxi data (Sec. 11.3).")
    else:
        lines.append(f"Here the exact mechanisms' error is {exact_err:.1f} groups against {relaxed:.1f} for relaxing "
                     "and rounding (mean over levels and budgets); the paper also found its exact mechanisms more "
                     "accurate than the relaxed ones (Sec. 11.3).")
    lines.append("These are synthetic households and a seeded numpy noise: a study of the method, not a release.")
    return " ".join(lines)


def paper_numbers() -> pd.DataFrame:
    """The numbers of Fioretto, Van Hentenryck and Zhu the project can compute, from the
    running example (Table 3's households) with `methods.consistency`. Several numbers
    of Examples 2 and 3 are lost in the text we have; the table says so."""
    from methods.consistency import group_size_vector

    units = {"GA": ["A", "B", "A", "A", "C"], "NY": ["D", "E", "D", "D", "F", "F"]}
    sizes = {s: [u.count(g) for g in sorted(set(u))] for s, u in units.items()}
    ga, ny = group_size_vector(sizes["GA"], 3), group_size_vector(sizes["NY"], 3)
    us = ga + ny
    all_sizes = sizes["GA"] + sizes["NY"]
    base = group_size_vector(all_sizes, 3)
    plain = cum = 0
    for i in range(len(all_sizes)):  # a person joins group i, or leaves it (groups stay non-empty: n is public)
        for d in (1, -1):
            if all_sizes[i] + d < 1:
                continue
            nb = list(all_sizes)
            nb[i] += d
            w = group_size_vector(nb, 3)
            plain = max(plain, int(abs(w - base).sum()))
            cum = max(cum, int(abs(w.cumsum() - base.cumsum()).sum()))
    rows = [
        ("Ex. 1", "Users living in unit A (users 01, 03, 04)", "3", f"{units['GA'].count('A')}",
         "yes" if units["GA"].count("A") == 3 else "no"),
        ("Ex. 2", "Groups of size 1 in Georgia", "2", f"{ga[0]}", "yes" if ga[0] == 2 else "no"),
        ("Ex. 2", "Groups of size 1 in New York", "1", f"{ny[0]}", "yes" if ny[0] == 1 else "no"),
        ("Ex. 2", "Groups of size 1 in the US", "3", f"{us[0]}", "yes" if us[0] == 3 else "no"),
        ("Ex. 2, Table 4", "The group-size vectors of GA, NY and the US", "lost in the text",
         f"{tuple(ga.tolist())}, {tuple(ny.tolist())}, {tuple(us.tolist())}", "—"),
        ("Ex. 3", "The root of H_DP: the number of groups n", "lost in the text", f"{int(us.sum())}", "—"),
        ("Lemma 4", "Sensitivity of the group-size vector", "2", f"{plain}", "yes" if plain == 2 else "no"),
        ("Lemma 6", "Sensitivity of the cumulative vector", "1", f"{cum}", "yes" if cum == 1 else "no"),
        ("§11, Table 7", "Errors and violations on the Census and NY Taxi data", "per dataset",
         "not computable (the paper's data)", "—"),
    ]
    return pd.DataFrame(rows, columns=["Where", "The paper says", "Paper's value", "Computed here", "Match"])
