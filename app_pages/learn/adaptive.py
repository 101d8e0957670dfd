"""Lesson 4: adaptive tables (gamma, stage 1, the thresholds, which table a group gets)."""

import streamlit as st

from ui.learn import content, layout, lessons

LESSON = lessons.by_number(4)
cfg = layout.header(LESSON)
ex = content.adaptive_group(cfg, 1000)
layout.worked_example("a Detailed group of 1,000 persons in one county", content.adaptive_sentences(ex))

with layout.try_this():
    c = st.columns(2)
    n = layout.persons_box("Persons in the county group", "learn4_n", 1000, container=c[0])
    gamma = c[1].select_slider("Stage-1 share γ", options=sorted({0.01, 0.05, 0.1, 0.2, 0.3, 0.5, cfg.gamma}),
                               value=cfg.gamma, key="learn4_gamma", format_func=content.num,
                               help="The 2020 plan uses γ = 0.1.")
    tried = content.adaptive_group(cfg, n, gamma)
    m = st.columns(3)
    m[0].metric("Stage-1 MOE", f"{tried.moe_1} persons")
    m[1].metric("Chance of a table", content.pct(tried.table_chance))
    m[2].metric("Published cell MOE", f"{tried.moe_2} persons")
    names = ["total only", "4 age groups", "9 age groups", "23 age groups"]
    layout.bar_chart(f"Which table a group of {content.num(n)} persons gets", "table", "probability", names,
                     list(tried.probs), "P(table)", key="learn4_chart", mark=names[tried.likeliest])
    layout.use_in_planner(LESSON, cfg, {"privacy_budget_p_stage_1_fraction": gamma}, f"γ = {content.num(gamma)}")

layout.question(LESSON, content.adaptive_question(cfg))
layout.learned(content.adaptive_learned(ex))
layout.footer(LESSON)
