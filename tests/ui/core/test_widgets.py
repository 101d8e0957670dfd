"""ui.core.widgets' pure helpers: the table column widths that keep headers and numbers whole."""

import io

import numpy as np
import pandas as pd
import streamlit as st

from ui.core import widgets


def test_a_fixed_width_is_widened_to_the_widest_number_with_separators():
    df = pd.DataFrame({"Groups": [262_667_218.0, 12.0], "Share": [0.25, 0.5]})
    cfg = widgets.fit_columns(df, {
        "Groups": st.column_config.NumberColumn("Groups", width=74, format="localized"),
        "Share": st.column_config.NumberColumn("Share", width=300, format="%.1f"),
    })
    need = widgets.text_px("262,667,218") + widgets.CELL_PADDING_PX
    assert need > 74 and cfg["Groups"]["width"] == int(need + 0.999)
    assert cfg["Share"]["width"] == 300  # wide enough already: kept as given


def test_a_header_wider_than_its_width_is_kept_whole():
    df = pd.DataFrame({"A very long column header": [1]})
    cfg = widgets.fit_columns(df, {"A very long column header": {"width": 20}})
    assert cfg["A very long column header"]["width"] >= widgets.text_px("A very long column header")


def test_a_fixed_width_is_widened_to_the_widest_text():
    df = pd.DataFrame({"Level": ["USA Detailed", "PR-COUNTY Regional", None]})
    cfg = widgets.fit_columns(df, {"Level": st.column_config.TextColumn(width=60)})
    assert cfg["Level"]["width"] == int(widgets.text_px("PR-COUNTY Regional") + widgets.CELL_PADDING_PX + 0.999)
    assert widgets.fit_columns(df, {"Level": {"width": 400}})["Level"]["width"] == 400  # wide enough: kept


def test_the_widest_text_counts_wherever_it_is_in_the_table():
    long = "Native Hawaiian and Other Pacific Islander alone or in any combination"
    df = pd.DataFrame({"ITERATION_NAME": ["Asian"] * 2_000 + [long]})
    cfg = widgets.fit_columns(df, {"ITERATION_NAME": st.column_config.TextColumn(width=160)})
    assert cfg["ITERATION_NAME"]["width"] == int(widgets.text_px(long) + widgets.CELL_PADDING_PX + 0.999) > 160


def test_the_widest_number_counts_wherever_it_is_in_the_table():
    df = pd.DataFrame({"Count": [12.0] * 2_000 + [1_234_567.0] + [3.0] * 10})
    cfg = widgets.fit_columns(df, {"Count": st.column_config.NumberColumn(width=40)})
    assert cfg["Count"]["width"] == int(widgets.text_px("1,234,567") + widgets.CELL_PADDING_PX + 0.999)
    # a negative number is wider by its sign; fractions print with 4 significant digits
    df = pd.DataFrame({"Bias": [0.5] * 900 + [-12_345.0, 0.000123456, 7.25]})
    cfg = widgets.fit_columns(df, {"Bias": st.column_config.NumberColumn(width=20)})
    assert cfg["Bias"]["width"] == int(max(widgets.text_px(t) for t in ("-12,345", "0.0001235", "7.25", "0.5"))
                                       + widgets.CELL_PADDING_PX + 0.999)


def test_every_digit_is_as_wide_as_the_others():
    # `_number_px` measures only the largest and smallest whole numbers: exact only if so
    assert len({widgets.text_px(d) for d in "0123456789"}) == 1


def _printed_px(values) -> float:
    """The widest of `values` printed one by one, as the grid prints them (the reference)."""
    return max(widgets.text_px(f"{v:,.0f}" if float(v).is_integer() else f"{v:.4g}") for v in values)


def test_a_column_of_very_many_fractions_is_never_narrower_than_one_of_them():
    rng = np.random.default_rng(7)
    values = pd.Series(np.concatenate([rng.normal(size=3_000) * 10.0 ** rng.integers(-7, 7, size=3_000),
                                       [9_999.7, -0.00099996, np.inf, 42.0, -3.0]]))
    assert values.nunique() > widgets._EXACT_FRACTIONS  # the bound, not the value-by-value path
    exact = _printed_px(values)
    bound = widgets._number_px(values)
    assert exact <= bound <= exact + 2 * widgets.text_px("0")  # never cuts a value, and not much wider
    small = values.iloc[:widgets._EXACT_FRACTIONS]  # few enough to print one by one: exact
    assert widgets._number_px(small) == _printed_px(small)


def test_a_count_column_prints_thousands_separators_with_the_grids_own_formatter():
    cfg = widgets.count_column("Groups", width=74)
    assert cfg["type_config"]["format"] == "accounting" and cfg["type_config"]["step"] == 1  # whole: no decimals
    df = pd.DataFrame({"Groups": [262_667_218, 12]})
    assert widgets.fit_columns(df, {"Groups": cfg})["Groups"]["width"] == int(
        widgets.text_px("262,667,218") + widgets.CELL_PADDING_PX + 0.999)


def test_a_csv_says_what_it_holds_in_comment_lines_a_reader_skips():
    df = pd.DataFrame({"level": ["COUNTY Detailed"], "groups": [3]})
    data = widgets.csv_bytes(df, ["Profile: Agency data (1,000 persons).", "CONFIDENTIAL: never publish it."])
    text = data.decode("utf-8")
    assert text.startswith("# Profile: Agency data (1,000 persons).\n# CONFIDENTIAL: never publish it.\n")
    assert pd.read_csv(io.BytesIO(data), comment="#").equals(df)
    assert widgets.csv_bytes(df) == df.to_csv(index=False).encode("utf-8")  # no head: the table alone


#: The calls of `_highlight` (a test's own Styler function; Streamlit's cache is shared by the process).
CALLS: list[str] = []


def _highlight(df: pd.DataFrame, column: str):
    CALLS.append(column)
    return df.style.apply(lambda col: ["background-color: #fde2e1" if col.name == column else "" for _ in col])


def _styled_page():
    import pandas as pd
    import streamlit as st

    from tests.ui.core import test_widgets as t
    from ui.core import widgets

    df = pd.DataFrame({"Quantity": ["r", "γ"], "A": [8.0, 0.1], "B": [3.0, st.session_state["tag"]]})
    widgets.table(df, "t.csv", key="cmp", style=(t._highlight, ("B",)))


def test_a_styled_table_is_made_once_per_content_and_drawn_again_from_the_cache():
    """pandas turns a Styler into a grid slowly: `widgets.table(style=...)` makes it once
    for a table's content, and every later redraw shows the same highlighted grid."""
    import uuid

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_styled_page)
    at.session_state["tag"] = uuid.uuid4().int % 10**6 / 10**6  # content no earlier run has cached
    CALLS.clear()
    for _ in range(3):
        at.run()
        assert not at.exception
        grid = at.dataframe[0].proto
        assert "background-color: #fde2e1" in grid.arrow_data.styler.styles  # the highlight, every time
        assert grid.arrow_data.styler.uuid == "cmp"
        assert list(at.dataframe[0].value["B"])[0] == 3.0
    assert CALLS == ["B"]  # made once
    at.session_state["tag"] = at.session_state["tag"] + 1  # other content: made again
    at.run()
    assert CALLS == ["B", "B"] and not at.exception
