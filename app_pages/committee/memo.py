"""Decision memo: one click makes a PDF (or HTML) of the current plan or of a comparison
of plans, with the last run's accuracy."""

from datetime import datetime

import streamlit as st

from ui.committee import images, memo, memo_html, memo_pdf, plan_controls, scenarios
from calculators.projection import ProfileError
from ui.core import state, widgets
from ui.safetab import projection_panel

state.page_setup()
ss = st.session_state

st.title("Decision memo")
st.caption(
    "One document a committee can file and print. Page 1 is a decision sheet: the plan(s), the release's privacy "
    "loss (ρ or ε, unbounded and bounded neighbours), which levels meet their MOE targets, the national outcome and "
    "what differs from the reference plan. The appendix holds the detail: parameters, privacy accounting per level, "
    "the planner, adaptive-table and suppression tables and charts, the last run's accuracy if you ran the "
    "mechanism in this session, the date and the app's version. As a PDF (US Letter or A4), or as one HTML file "
    "that opens offline."
)


@st.cache_resource(show_spinner=False)
def _renderer() -> images.Renderer:
    """One browser per server, kept open to draw the memo's charts (closed after 10 minutes unused)."""
    return images.Renderer(idle=600)


background, setting_problem = images.opens_in_background()
if setting_problem:
    st.warning(widgets.plain(setting_problem))
if background:
    _renderer().start()  # opens in the background while the user chooses; a click then only draws

store = plan_controls.store()
try:
    items = store.all()
except scenarios.ScenarioError as exc:
    items = []
    st.error(widgets.plain(f"The saved scenarios cannot be read: {exc}."))
if store.skipped:
    widgets.problems("Some rows of the scenario store cannot be shown (see the Scenarios page):", store.skipped,
                     kind="warning")
opts = plan_controls.choices(items)
details = {plan_controls.saved_label(s.name): (s.created, s.modified, s.note, s.version_label) for s in items}

ss.setdefault("memo_kind", "plan")
kind = st.radio("Memo of", ["plan", "comparison"], key="memo_kind", persist_state="session", horizontal=True,
                format_func=lambda k: {"plan": f"The current plan ({widgets.plain(state.source_label())})",
                                       "comparison": "A comparison of plans"}[k])
version = ""
h_config = None
if kind == "comparison":
    if "sc_compare" not in ss or not set(ss["sc_compare"]) <= set(opts):
        saved = [plan_controls.saved_label(s.name) for s in items if s.ok][:2]
        ss["sc_compare"] = [plan_controls.CURRENT] + (saved or [plan_controls.PRODUCTION])
    picked = st.multiselect("Plans (the first is the reference)", list(opts), key="sc_compare", persist_state="session",
                            wrap=True,
                            help="The same choice as on the Scenarios page.")
    if len(picked) < 2:
        st.info("Pick two or more plans.")
        st.stop()
    plans = [opts[n]() for n in picked]
    label = f"{len(plans)} plans compared"
else:
    plans = [opts[plan_controls.CURRENT]()]
    plans[0] = plans[0]._replace(name=state.source_label())
    label = plans[0].name
    version = plan_controls.current_version()  # the saved version it is, and its author, named in the memo
    h_config = state.changed_h_plan()  # a SafeTab-H plan other than 2020's gets its own section
    if version:
        st.caption(widgets.plain(f"The current plan is the saved scenario “{label}”, {version}."))

out = ss.get("run")
with_run = False
if out is not None:
    ss.setdefault("memo_run", True)
    with_run = st.toggle("Include the last run's accuracy (this release against the truth, and the report over "
                         "repeated releases if computed), summarised per level; the full tables are in the Run "
                         "page's downloads", key="memo_run")
else:
    st.caption("No run in this session: run the mechanism on the Run page to add its accuracy to the memo.")

method, delta = state.method(), state.delta()
meta = dict(ss.get("run_meta", {}))
current = state.config()
try:  # page 1's national outcome: the profile chosen on the planner (the shipped national one by default)
    profile = projection_panel.chosen()
except ProfileError:
    profile = None  # the sheet then says that the projection could not be made
if profile is not None and profile.confidential:
    st.error("Page 1's national outcome is the projection on the group-size profile "
             f"**{widgets.plain(profile.name)}** ({profile.persons:,} persons, CONFIDENTIAL), the one chosen on the "
             "planner: the memo is marked CONFIDENTIAL (its title, every page, its file name). Handle it like the "
             "data itself and never publish it; choose the synthetic national profile on the planner for a memo "
             "that can be shared.",
             icon=":material/lock:")
elif profile is not None:
    st.caption("Page 1's national outcome is the projection on the group-size profile "
               f"**{widgets.plain(profile.name)}** ({profile.persons:,} persons, synthetic), the one chosen on the "
               "planner.")


def _build() -> memo.Memo:
    # runs when a download button is pressed, on a thread of its own: only pure helpers here
    run = memo.run_info(out, meta, current) if with_run and out is not None else None
    if len(plans) == 1:
        return memo.plan_memo(plans[0], method, delta, run, profile=profile, version=version, h_config=h_config)
    return memo.comparison_memo(plans, method, delta, run, details=details, profile=profile)


stem = (f"{memo.CONFIDENTIAL_MARK}-" if profile is not None and profile.confidential else "") + \
    f"decision-memo-{scenarios.file_stem(label)}-{datetime.now():%Y%m%d}"
ok, why = images.available()
state.bind("memo_paper", ss.get("memo_paper_value", "US Letter"))  # kept while the user is on other pages
paper = st.radio("Paper", list(memo_pdf.PAPERS), key="memo_paper", horizontal=True,
                 on_change=lambda: ss.__setitem__("memo_paper_value", ss["memo_paper"]),
                 help="The PDF's page size (landscape).")
renderer = _renderer()
with st.container(horizontal=True, vertical_alignment="center"):
    st.download_button("Decision memo (PDF)", lambda: memo_pdf.render(_build(), paper=paper, renderer=renderer),
                       file_name=f"{stem}.pdf", mime="application/pdf", key="memo_pdf", on_click="ignore",
                       type="primary", icon=":material/picture_as_pdf:",
                       help="Made when clicked, in a few seconds: every chart is drawn.")
    st.download_button("Decision memo (HTML)", lambda: memo_html.render(_build(), renderer=renderer).encode("utf-8"),
                       file_name=f"{stem}.html", mime="text/html", key="memo_html", on_click="ignore",
                       icon=":material/html:")
    st.markdown(f"**{widgets.plain(label)}**" + (" with the last run" if with_run else ""))
if not ok:
    st.warning(f"The charts cannot be drawn as pictures here: {why}. The PDF lists each chart's data instead, and the "
               "HTML memo holds interactive charts.", icon=":material/warning:")
else:
    st.caption(f"Charts are drawn by Kaleido with the browser at `{why}`.")

st.subheader("What the memo holds")
titles = memo.outline(plans, with_run)
st.markdown(f"Page 1. {titles[0]}  \n" + "  \n".join(
    f"Appendix {memo.appendix_label(i)}. {title}" for i, title in enumerate(titles[1:])))
