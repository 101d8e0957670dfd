"""Lesson 3: race multiplicity r and the stability S."""

import streamlit as st

from ui.learn import content, layout, lessons

LESSON = lessons.by_number(3)
cfg = layout.header(LESSON)
layout.worked_example("one person, several races", content.race_sentences(cfg))

with layout.try_this():
    r = st.select_slider("Race codes counted per person, r", options=list(range(1, 9)), value=cfg.max_race_codes,
                         key="learn3_r", help="The 2020 plan counts up to r = 8.")
    tried = content.race(cfg, r)
    m = st.columns(3)
    m[0].metric("Stability S", tried.S)
    m[1].metric("Tract Detailed MOE", f"{tried.moe} persons", help=f"At ρ = {content.num(tried.rho)}.")
    m[2].metric(f"Smallest ρ for MOE {tried.plan_moe}", content.num(tried.rho_same_moe),
                help=f"The smallest tract Detailed budget whose exact MOE at r = {r} is the plan's {tried.plan_moe} "
                     "persons.")
    rows = content.race_rows(cfg)
    layout.bar_chart("Exact MOE of a tract Detailed count at the plan's ρ", "r (race codes counted)",
                     "MOE (persons)", [x.r for x in rows], [x.moe for x in rows], "MOE", key="learn3_chart", mark=r)
    layout.use_in_planner(LESSON, cfg, {"max_race_codes": r}, f"r = {r}")

layout.question(LESSON, content.race_question(cfg))
layout.learned(content.race_learned(cfg))
layout.footer(LESSON)
