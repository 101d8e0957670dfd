"""Lesson 2: budgets over levels (rho per population group level, composition, epsilon at
delta, bounded and unbounded neighbours)."""

import pandas as pd
import streamlit as st

from calculators.levels import PopulationGroupLevel
from ui.core import state, widgets
from ui.learn import content, layout, lessons

LESSON = lessons.by_number(2)
cfg = layout.header(LESSON)
b = content.budgets(cfg, state.delta())
layout.worked_example("the plan's privacy accounting", content.budget_sentences(b))
widgets.table(pd.DataFrame(b.levels, columns=["Level", "ρ", "ε alone"]), "lesson2_levels.csv", key="learn2_table",
              height=35 * (len(b.levels) + 1) + 3,
              column_config={"Level": st.column_config.TextColumn(width=150),
                             "ρ": st.column_config.NumberColumn(format="%.4g", width=70),
                             "ε alone": st.column_config.NumberColumn(format="%.3g", width=80,
                                                                      help="The ε of this level's ρ alone at δ.")})

with layout.try_this():
    levels = cfg.tabulated_levels()
    c = st.columns(2)
    level = c[0].selectbox("Level", levels, key="learn2_level", format_func=lambda lvl: lvl.label,
                           index=levels.index(PopulationGroupLevel("TRACT", 2))
                           if PopulationGroupLevel("TRACT", 2) in levels else 0)
    factor = c[1].select_slider("Multiply its budget by", options=[0.25, 0.5, 1.0, 2.0, 4.0], value=1.0,
                                key="learn2_factor", format_func=content.num)
    new_rho = float(f"{cfg.rho(level) * factor:.6g}")
    tried = content.budgets(cfg.with_rho(level, new_rho), state.delta())
    m = st.columns(3)
    moved = tried.release != b.release  # a change is shown against the plan, none when there is none
    m[0].metric("ρ of the release", content.num(tried.release),
                delta=content.num(tried.release - b.release) if moved else None, delta_color="inverse")
    m[1].metric(f"ε at δ = {b.delta:.0e}", content.num(tried.eps_tight, 3),
                delta=content.num(tried.eps_tight - b.eps_tight, 3) if moved else None, delta_color="inverse")
    m[2].metric("ρ, bounded neighbours", content.num(tried.release_bounded))
    layout.use_in_planner(LESSON, cfg, {level.budget_key: new_rho}, f"ρ = {content.num(new_rho)} for {level.label}")

layout.question(LESSON, content.budget_question(b))
layout.learned(content.budget_learned(b))
layout.footer(LESSON)
