"""Lesson 5: suppression (T, p, the bias of what is published)."""

import streamlit as st

from ui.learn import content, layout, lessons

LESSON = lessons.by_number(5)
cfg = layout.header(LESSON)
ex = content.suppressed(cfg, 5)
layout.worked_example("a Detailed group of 5 persons in one tract, with a total only",
                      content.suppression_sentences(ex))

with layout.try_this():
    c = st.columns(2)
    p = c[0].select_slider("Zero-suppression chance p", options=sorted({0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999,
                                                                       cfg.suppression_chance}),
                           value=cfg.suppression_chance, key="learn5_p", format_func=lambda v: f"{v:g}",
                           help="The 2020 plan uses p = 0.9999; 0 turns suppression off.")
    n = layout.persons_box("Persons in the tract group", "learn5_n", 5, container=c[1])
    tried = content.suppressed(cfg, n, p)
    m = st.columns(3)
    m[0].metric("Threshold T", "off" if tried.T is None else tried.T)
    m[1].metric("Chance it is hidden", content.pct(tried.suppressed))
    m[2].metric("Average if published", content.num(tried.released_mean, 3))
    xs, ys = content.suppression_curve(tried)
    layout.line_chart("Chance that a total is hidden" + ("" if tried.T is None else f" (T = {tried.T})"),
                      "true count n", "probability", xs, ys, "P(hidden)", key="learn5_chart", mark=n,
                      mark_low=tried.T is not None and n <= tried.T)
    layout.use_in_planner(LESSON, cfg, {"zero_suppression_chance": p}, f"p = {p:g}")

layout.question(LESSON, content.suppression_question(cfg))
layout.learned(content.suppression_learned(ex))
layout.footer(LESSON)
