"""AppTest helper for the static tables of "The paper's own numbers" (st.table)."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest


def static_table(at: AppTest, column: str) -> pd.DataFrame:
    """The first static table (st.table) of the page having this column, its index ("Where")
    kept as the index."""
    found = [t.value for t in at.table if column in t.value.columns]
    assert found, f"no static table with column {column!r}: {[list(t.value.columns) for t in at.table]}"
    return found[0]
