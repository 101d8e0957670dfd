"""The planner shows the SafeTab-P paper's two statements beside the exact figures."""

from __future__ import annotations

from tests.app.conftest import frame, open_app
from tests.app.paper_tables import static_table
from ui.safetab import paper_statements


def test_budget_page_shows_the_two_statements_and_the_plans_levels():
    at = open_app("budget")
    assert not at.table  # the expander is closed: its content is neither computed nor drawn
    at.session_state[paper_statements.OPEN_KEY] = True  # the user opens it
    at.run()
    own = static_table(at, "Computed here")  # the paper's own numbers beside the app's
    assert own.loc["§5.3.2, Table 6", "Computed here"].tolist() == ["93", "21", "11"]
    assert (own["Match"] == "yes").all()
    t = static_table(at, "Exact figure")
    assert t.loc["§6.1, Corollary 2", "Exact figure"] == "holds up to MOE 2,632; at 2,633 the exact MOE is 2,634"
    assert t.loc["§6.1", "Holds"] == "no"
    levels = frame(at, "Level", "⌊1.96σ⌋", "P(|X| ≤ ⌊1.96σ⌋)", "Exact 95% MOE").set_index("Level")
    assert levels.loc["COUNTY Detailed", "⌊1.96σ⌋"] == 10 and levels.loc["COUNTY Detailed", "Exact 95% MOE"] == 11
    assert levels.loc["COUNTY Detailed", "At least 95%"] == "no"
    assert any(b.label.startswith("Download") for b in at.get("download_button"))
