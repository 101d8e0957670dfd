"""SafeTab-H: the household tables (T3 household type, T4 tenure) of SafeTab-P's groups,
planned beside SafeTab-P's plan: budgets and MOEs both ways, cell and total MOEs, the
chance of each table level for a group of n persons, the national outcome, the
accounting per household, and where the two threshold ladders differ."""

import hashlib

import plotly.graph_objects as go
import streamlit as st

from calculators.config import ConfigError
from calculators.safetab_h import TABLE_NAMES, TABLES, household_stability, rho_for_moe
from ui.core import state, typed, widgets
from ui.safetab import projection
from ui.safetab import safetab_h as h

state.page_setup()

st.title("SafeTab-H: household tables")
st.caption(
    "The 2020 Detailed DHC-B publishes household type (T3) and tenure (T4) for the same detailed race and "
    "ethnicity groups as SafeTab-P. SafeTab-H spends no budget to size the groups: it reads SafeTab-P's "
    "published T1, tabulates only the groups that have a T1 row (so SafeTab-P's suppression removes groups "
    "here too) and picks each group's table detail from that T1 count. Privacy unit: one household; noise "
    "σ² = S / (2ρ) per cell with S = max(2, r) + 1. Change SafeTab-P's plan and this page moves."
)

BUDGET_RULE = typed.Rule(lo=0.0, hi=1e6)
MOE_RULE = typed.Rule(whole=True, lo=1, hi=10**6, unit="households")
N_RULE = typed.Rule(whole=True, lo=0, hi=10**9, unit="persons")

p_cfg = state.config()
h_cfg = h.plan()

top = st.columns([1.2, 1.6, 1.2])
with top[0]:
    if st.button(f"Load the {h.PRESET_NAME}", key="h_preset",
                 help="The Census Bureau's 2020 SafeTab-H configuration (DDHCB NMFv5): budgets 0.006915 Regional, "
                      "1.9208 Detailed at nation and state, 0.142869 Detailed below."):
        from calculators.safetab_h import production_2020_h

        h.set_plan(production_2020_h())  # one step of undo, as every change of the SafeTab-H plan
        st.rerun()
with top[1]:
    up = st.file_uploader("Load a SafeTab-H config.json", type=["json"], key="h_upload")
    ss = st.session_state
    if up is None:
        ss.pop("h_upload_sig", None)
        ss.pop("h_upload_problems", None)
    else:
        # Loaded once per file, not at every run while it stays in the box: a later edit (or
        # undo) of the plan would be overwritten by the file again.
        sig = hashlib.sha256(up.getvalue()).hexdigest()
        if ss.get("h_upload_sig") != sig:
            ss["h_upload_sig"] = sig
            try:
                h.set_plan(h.read_plan(up.getvalue(), up.name))
            except ConfigError as exc:
                ss["h_upload_problems"] = (up.name, exc.problems)
            else:
                ss.pop("h_upload_problems", None)
                state.flash("success", f"Loaded {up.name} as the SafeTab-H plan (Undo in the sidebar goes back).")
                st.rerun()  # the sidebar (drawn before this page) offers its undo at once
        bad = ss.get("h_upload_problems")
        if bad and bad[0] == up.name:
            widgets.problems(f"{bad[0]} is not a SafeTab-H config.json", bad[1])
with top[2]:
    st.download_button("Download this SafeTab-H config.json", h.plan().to_json(), "safetab-h-config.json",
                       mime="application/json", key="h_download")
h_cfg = h.plan()
S = household_stability(h_cfg.max_race_codes)
st.caption(widgets.plain(h.reference_note(state.reference(), h_cfg)) + " Undo and Redo in the sidebar take back and "
           "redo each change of this plan, as they do SafeTab-P's.")

notes = h.ladder_notes(p_cfg, h_cfg)
if notes:
    st.info(f"**The two threshold ladders differ at {len(notes)} level{'s' if len(notes) > 1 else ''}**: a group whose "
            "published T1 falls between the two thresholds gets its sex x age table at one level in SafeTab-P and "
            "its household-type table at the other in SafeTab-H (in the 2020 files, 149970 against 149971 below "
            "the state).\n\n" + "\n".join(f"- {n}" for n in notes), icon=":material/stairs:")

st.subheader("Budgets and MOEs per query")
levels = h_cfg.levels()
c = st.columns([1.1, 1.1, 1, 1, 1])
table = c[0].selectbox("Table", TABLES, format_func=lambda t: TABLE_NAMES[t], key="h_table")
level = c[1].selectbox("Geography and iteration level", levels, format_func=h.level_name, key="h_level",
                       index=min(3, len(levels) - 1))
exact = c[2].toggle("Exact MOE", value=True, key="h_exact",
                    help="On: the exact 95% half-width of the discrete noise. Off: the design figure ⌊1.96σ⌋.")
rho = h_cfg.budget(table, level)
widgets.number_box(f"Budget of {table.upper()} {h.level_name(level)}", f"h_rho_{table}_{level.geo}_{level.iteration_level}",
                   BUDGET_RULE, rho, on_change=lambda v: h.set_budget(table, level, v), container=c[3],
                   help=f"config key privacy_budget_h_{table}_level_{level.iteration_level}_…: ρ (zCDP) or ε (pure "
                        "DP) of this query; 0: no table here.")
target = widgets.number_box("…or a cell MOE target", f"h_target_{table}_{level.geo}_{level.iteration_level}", MOE_RULE,
                            h.cell_moe(rho, S, exact, h_cfg.privacy_defn) if rho > 0 else 50, container=c[4],
                            help="Households. Apply sets the smallest budget whose cell MOE meets it.")
if c[4].button("Apply the target", key="h_apply"):
    refused = h.set_budget(table, level, rho_for_moe(int(target), S, exact, h_cfg.privacy_defn))
    if refused:
        st.error(refused)
    st.rerun()

# Both tables take the full width: beside each other, the cells table hid columns at 1280 px.
df = h.budget_table(h_cfg, exact)
widgets.table(df, "safetab_h_budgets.csv", key="h_budgets", height=min(600, 35 * (len(df) + 1) + 3),
              column_config={"Budget": st.column_config.NumberColumn(format="%.6g", width=70),
                             "σ² (zCDP)": st.column_config.NumberColumn(format="%.4g", width=70),
                             "Scale (pure DP)": st.column_config.NumberColumn(format="%.4g", width=70),
                             "Cell MOE": st.column_config.NumberColumn(width=60),
                             "1.96σ": st.column_config.NumberColumn(format="%.4f", width=60),
                             "Total MOE": st.column_config.NumberColumn(
                                 width=70, help="The total of the finest table level: T3 sums 5 direct "
                                                "cells, T4 3.")},
              caption=f"S = {S} (r = {h_cfg.max_race_codes}). A published cell that sums m noisy direct cells "
                      "has variance m σ² (the total of a T3 level-3 group sums 5).")
widgets.table(h.cells_table(h_cfg, table, level, exact), "safetab_h_cells.csv", key="h_cells",
              caption=f"{TABLE_NAMES[table]}, {h.level_name(level)}: every published cell and its MOE.")

st.subheader("A group of n persons: which table does it get?")
c = st.columns([1, 3])
n = widgets.number_box("Persons in the group (true)", "h_n", N_RULE, 5000, container=c[0],
                       help="The group's true size in SafeTab-P; its published T1 is that plus SafeTab-P's noise.")
with c[1]:
    widgets.table(h.group_probabilities(p_cfg, h_cfg, level, int(n)), "safetab_h_group.csv", key="h_group",
                  caption=f"{h.level_name(level)}: a mixture over SafeTab-P's stage-1 level (the current SafeTab-P "
                          "plan), its published-T1 noise and its suppression. Absent: no T1 row, so no household "
                          "table.")
curves = h.probability_curves(p_cfg, h_cfg, level, table)
fig = go.Figure()
for col in curves.columns[1:]:
    fig.add_scatter(x=curves["persons"], y=curves[col], name=col, mode="lines")
fig.update_layout(xaxis_title="persons in the group (log scale)", yaxis_title="probability", xaxis_type="log",
                  height=320, title=f"{TABLE_NAMES[table]} level, {h.level_name(level)}")
widgets.plotly(fig, "h_curves", summary=f"The chance of each {table.upper()} level and of absence against the "
                                        "group's size under the current SafeTab-P and SafeTab-H plans.")

st.subheader("Privacy accounting, per person and per household")
widgets.table(h.accounting(p_cfg, h_cfg, state.delta()), "safetab_h_accounting.csv", key="h_accounting",
              caption="Never added: SafeTab-P protects one person, SafeTab-H one household. Each program's US and "
                      "PR runs cover disjoint people, so a release costs the larger of the two.")

st.subheader("National outcome of both plans")
prof = projection.shipped(projection.NATIONAL)
if prof is None:
    st.info("The national group-size profile is not there (sample_data/profiles/).")
elif not st.toggle("Show the national outcome (seconds to compute for each new pair of plans)", key="h_show_national"):
    st.caption("Expected numbers of groups with each T3 and T4 level in the synthetic nation of 330 million, "
               "under both plans.")
else:
    st.caption(projection.describe(prof) + ": expected groups with each table level (absent: no T1 row).")
    widgets.table(h.national(p_cfg, h_cfg, projection.NATIONAL).round(1), "safetab_h_national.csv", key="h_national")
st.caption("A SafeTab-H plan other than the 2020 one travels with SafeTab-P's: a saved scenario, the plan file, "
           "the share link and the decision memo keep it.")
