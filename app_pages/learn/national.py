"""Lesson 6: the national trade-off (a plan's national outcome, its change from the 2020
plan, why less budget can publish more tables and why re-deriving at a smaller r can
suppress more (`calculators.explain`), then the memo)."""

import streamlit as st

from calculators import explain, presets
from calculators.projection import project
from ui.core import state, widgets  # the plan's name is the user's: shown as typed (widgets.plain)
from ui.learn import content, layout, lessons, national
from ui.safetab import projection

LESSON = lessons.by_number(6)
#: The smaller r of the lesson's second explanation.
SMALLER_R = 6


def _sentences(lines: list[str], none: str) -> None:
    st.markdown("\n".join(f"- {line}" for line in lines) if lines else f"- {none}")


cfg = layout.header(LESSON)
profile = projection.shipped(projection.NATIONAL)
if profile is None:
    st.warning("The shipped national profile (sample_data/profiles/) is not there, so the national outcome cannot "
               "be computed here.")
    layout.footer(LESSON)
    st.stop()

ref_cfg = presets.production_2020()
proj = project(cfg, profile)
plan, ref = national.outcome(proj, cfg), national.outcome(project(ref_cfg, profile), ref_cfg)
name = widgets.plain(state.source_label())
layout.worked_example("the current plan across the nation",
                      national.outcome_sentences(proj, ref, name, state.PRODUCTION, profile,
                                                 national.empty_share(cfg, profile), cfg))

st.markdown("**Why less budget can publish more tables** (the plan against the same plan with every budget halved):")
_sentences(explain.less_budget_more_tables(cfg, national.variant(cfg, state.targets(), 0.5), profile),
           "Halving this plan's budgets publishes no more tables.")
smaller_r = min(SMALLER_R, cfg.max_race_codes - 1)
st.markdown(f"**Why re-deriving at a smaller r can suppress more** (the plan at r = {smaller_r}, its budgets kept "
            "or re-derived from the MOE targets):")
_sentences(explain.smaller_r_suppresses_more(cfg, smaller_r, state.targets(), state.method(), profile)
           if smaller_r >= 1 else [], "For this plan, re-deriving at a smaller r suppresses no more.")

with layout.try_this():
    c = st.columns(2)
    factor = c[0].select_slider("Multiply every budget by", options=[0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0], value=1.0,
                                key="learn6_factor", format_func=content.num)
    r = c[1].select_slider("Race codes counted, r", options=list(range(1, 9)), value=cfg.max_race_codes,
                           key="learn6_r")
    rederive = st.toggle("Re-derive budgets for the MOE targets", key="learn6_rederive",
                         help="As the planner does when r changes: each level's budget is derived again from its "
                              "MOE target at the new S.")
    tried_cfg = national.variant(cfg, state.targets(), factor, r, rederive, state.method())
    tried = national.outcome(project(tried_cfg, profile), tried_cfg)
    m = [*st.columns(2), *st.columns(2)]  # two by two: the labels stay whole in the presenter view
    for col, (key, label, better) in zip(m, national.FIGURES, strict=True):
        change = national.change_text(key, ref.get(key), tried.get(key))
        col.metric(label, content.num(round(tried.get(key))) if key != "mae" else content.num(tried.get(key), 3),
                   delta=f"{change} vs 2020", delta_color="off" if change == "no change" else
                   "normal" if better else "inverse", delta_arrow="off" if change == "no change" else "auto")
    why = explain.less_budget_more_tables(cfg, tried_cfg, profile)
    if rederive and factor == 1:
        why += explain.smaller_r_suppresses_more(cfg, r, state.targets(), state.method(), profile)
    if why:
        _sentences(why, "")
    layout.use_in_planner(LESSON, cfg, {k: v for k, v in tried_cfg.to_dict().items() if k != "thresholds_p"},
                          f"the tried plan (budgets × {content.num(factor)}, r = {r}"
                          f"{', re-derived' if rederive else ''})")

q, text, values = national.question(cfg, profile, state.targets())
layout.question(LESSON, content.Answer(q, text, values))
layout.learned(national.learned(plan, ref))
st.page_link("app_pages/committee/memo.py", label="Then: the decision memo of the current plan",
             icon=":material/picture_as_pdf:")
layout.footer(LESSON)
