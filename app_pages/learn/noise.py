"""Lesson 1: one count and its noise (the discrete Gaussian, rho, sigma, the exact 95 % MOE)."""

import streamlit as st

from ui.learn import content, layout, lessons

LESSON = lessons.by_number(1)
cfg = layout.header(LESSON)
ex = content.noise_example(cfg)
layout.worked_example("a Detailed group of 40 persons in one tract", content.noise_sentences(ex))

with layout.try_this():
    options = sorted({*content.RHO_CHOICES, ex.rho, st.session_state.get("learn1_rho", ex.rho)})
    st.session_state.setdefault("learn1_rho", ex.rho)
    c = st.columns(2)
    rho = c[0].select_slider("Tract Detailed budget ρ", options=options, key="learn1_rho",
                             format_func=content.num, help="The 2020 plan gives tract Detailed groups ρ = 0.159.")
    n = layout.persons_box("Persons in the group", "learn1_n", 40, container=c[1])
    tried = content.noise(rho, cfg.gamma, cfg.max_race_codes, n)
    m = st.columns(3)
    m[0].metric("σ² of the noise", content.num(tried.sigma2))
    m[1].metric("Exact 95 % MOE", f"{tried.moe} persons", help=f"⌊1.96σ⌋ = {tried.bound}")
    m[2].metric("95 % of counts between", f"{tried.low} and {tried.high}")
    xs, ys = content.noise_pmf(tried)
    layout.bar_chart(f"What a group of {content.num(n)} persons may be published as", "published count",
                     "probability", xs, ys, "P(published count)", key="learn1_chart", mark=n)
    layout.use_in_planner(LESSON, cfg, {content.TRACT_DETAILED.budget_key: rho},
                          f"ρ = {content.num(rho)} for TRACT Detailed")

layout.question(LESSON, content.noise_question(ex))
layout.learned(content.noise_learned(ex))
layout.footer(LESSON)
