"""Configuration: import / export SafeTab-P config.json, a shareable link, the other
settings, validation in plain words."""

import hashlib

import streamlit as st

from calculators.config import ConfigError
from calculators.levels import US_STATE_CODES
from ui.core import planner, state, typed, urlcodec, widgets
from ui.committee import scenarios

state.page_setup()

st.title("Configuration")
st.caption(
    "The plan every page works on is a SafeTab-P `config.json`. Import one, export it, or share it as a "
    "link. It is checked as strictly as production SafeTab-P checks it: every key is required, unknown keys and "
    "loose types (\"Yes\", \"8\", 8.0) are refused with a message naming the key."
)

ss = st.session_state
cfg = state.config()

# ------------------------------------------------------------------ import
left, right = st.columns(2, gap="large")
with left:
    st.subheader("Import")
    up = st.file_uploader("A SafeTab-P config.json, or a plan file (.plan.json: keeps the plan's name and MOE targets)",
                          type=["json"], key="cfg_upload")
    if up is not None:
        data = up.getvalue()
        sig = hashlib.sha256(data).hexdigest()
        if ss.get("cfg_upload_sig") != sig:
            ss["cfg_upload_sig"] = sig
            try:  # a config.json, or a plan file (which keeps the plan's name and MOE targets)
                plan = scenarios.read_plan_file(data, up.name)
            except scenarios.ScenarioError as exc:
                ss["cfg_upload_problems"] = (up.name, [str(exc)])
            else:
                ss.pop("cfg_upload_problems", None)
                # a plan file brings its SafeTab-H plan (one step of undo with SafeTab-P's); a config.json keeps it
                state.load_named(plan.config, plan.name if plan.is_plan_file else f"imported {up.name}", plan.targets,
                                 h_config=plan.h_config if plan.is_plan_file else state.KEEP)
                state.flash("success", f"Loaded {up.name}: it is now the plan on every page.")
                st.rerun()
        bad = ss.get("cfg_upload_problems")
        if bad:
            widgets.problems(f"{bad[0]} was not loaded; it has {len(bad[1])} problem(s):", bad[1])
    else:
        ss.pop("cfg_upload_sig", None)
        ss.pop("cfg_upload_problems", None)

    with st.expander("…or paste or edit the JSON", expanded=False):
        cfg_hash = hashlib.sha256(cfg.to_json().encode()).hexdigest()[:12]
        text = st.text_area("config.json text", value=cfg.to_json(), height=300, key=f"cfg_text_{cfg_hash}")
        if st.button("Check and apply", key="cfg_apply"):
            try:
                new = urlcodec.config_from_text(text, "pasted text")
            except ConfigError as exc:
                widgets.problems(f"Not applied; {exc.total:,} problem(s):", exc.problems)
            else:
                state.set_config(new, "pasted config.json")
                state.flash("success", "The pasted configuration is now the plan on every page.")
                st.rerun()

# ------------------------------------------------------------------ export
with right:
    st.subheader("Export")
    st.markdown(f"Current plan: **{widgets.plain(state.source_label())}**")
    st.download_button("Download config.json", cfg.to_json(), file_name="config.json", mime="application/json",
                       key="cfg_download", on_click="ignore", icon=":material/download:", type="primary")
    st.download_button("Download the plan file (name, config.json and MOE targets)",
                       scenarios.plan_file_text(state.source_label()[: scenarios.MAX_NAME], cfg, state.targets(),
                                                h_config=state.changed_h_plan()),
                       file_name=f"{scenarios.file_stem(state.source_label())}.plan.json", mime="application/json",
                       key="cfg_plan_download", on_click="ignore", icon=":material/download:",
                       help="It keeps a SafeTab-H plan other than the 2020 one too.")
    st.subheader("Shareable link")
    token = state.current_token()
    url = urlcodec.share_url(st.context.url, token, page="configuration")
    st.code(url, language=None, wrap_lines=True)
    st.caption(f"Opening this link restores this exact plan, MOE targets included ({len(token)} characters, "
               "compressed JSON). The address bar of this app always carries the current plan, so you can also "
               "copy it from there.")
    with st.expander("The configuration as JSON", expanded=False):
        st.code(cfg.to_json(), language="json")

# ------------------------------------------------------------------ settings
st.divider()
st.subheader("Other settings")


def _on(key: str, cast=lambda v: v):
    def cb():
        state.update(**{key: cast(st.session_state[f"w_{key}"])})
    return cb


o = st.columns(4)
with o[0]:
    state.bind("w_allow_negative_counts", cfg.allow_negative_counts)
    st.toggle("Allow negative counts", key="w_allow_negative_counts", on_change=_on("allow_negative_counts", bool),
              help="allow_negative_counts: false clamps released counts at 0 (post-processing).")
    state.bind("w_run_us", cfg.run_us)
    st.toggle("US run", key="w_run_us", on_change=_on("run_us", bool))
    state.bind("w_run_pr", cfg.run_pr)
    st.toggle("Puerto Rico run", key="w_run_pr", on_change=_on("run_pr", bool))
with o[1]:
    st.markdown(f"Privacy definition: **{planner.PRIVACY_NAMES[cfg.privacy_defn]}**")
    st.page_link("app_pages/safetab/budget.py", label="Change it in the planner", icon=":material/tune:",
                 help="The planner converts every budget so that each level keeps its MOE target, and shows "
                      "what changed.")
    state.bind("w_reader", cfg.reader)
    st.selectbox("Reader", ["csv", "cef"], key="w_reader", on_change=_on("reader"),
                 help="reader: \"cef\" is production's Census Edited File reader, which this engine does not have: "
                      "`python -m engine` refuses it (set \"csv\" to read DATA_DIR's text or Parquet files); the "
                      "Run page reads the files chosen there as \"csv\" and says so.")
with o[2]:
    widgets.number_box("max_race_codes (r)", "w_max_race_codes", typed.Rule(whole=True, lo=1, hi=8),
                       cfg.max_race_codes, on_change=lambda v: widgets.plan_update(max_race_codes=v),
                       help="A whole number from 1 to 8, used exactly as typed.")
    widgets.number_box("zero_suppression_chance (p)", "w_zero_suppression_chance",
                       typed.Rule(lo=0.0, hi=1.0, hi_open=True), float(cfg.zero_suppression_chance),
                       on_change=lambda v: widgets.plan_update(zero_suppression_chance=v),
                       help="At least 0 and below 1, used exactly as typed; 0 turns suppression off.")
with o[3]:
    state.bind("w_state_filter_us", list(cfg.state_filter_us))
    st.multiselect("state_filter_us", list(US_STATE_CODES), key="w_state_filter_us", wrap=True,
                   on_change=_on("state_filter_us", list),
                   help="The US states (FIPS codes) the US run covers.")
    if st.button("All states", key="all_states"):
        state.update(state_filter_us=list(US_STATE_CODES))
        st.rerun()
