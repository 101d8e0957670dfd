"""The decision memo as one self-contained HTML file (pure; no Streamlit).

Charts are inline SVG drawn by `ui.committee.images` (the same pictures as in the PDF). Without
a browser to draw them, each chart is embedded as an interactive plotly chart instead
(plotly.js is inlined once, so the file still opens offline). Tables are plain HTML
tables with the memo's highlighting; numbers are printed by `ui.committee.memo.memo_text`, as in
the PDF. The decision sheet comes first, on a page of its own when printed.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence

from ui.committee import images
from ui.committee.comparison import HIGHLIGHT, HIGHLIGHT_ROW
from ui.committee.memo import SHEET_TITLE, Figure, Memo, Table, Text, appendix_label, cell_text

CSS = f"""
@page {{ size: landscape; margin: 14mm; }}
body {{ font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 12px; color: #222;
       max-width: 1200px; margin: 24px auto; padding: 0 16px; }}
h1 {{ font-size: 22px; margin-bottom: 2px; }} h2 {{ font-size: 18px; margin-top: 28px;
      border-bottom: 2px solid #1f5aa6; padding-bottom: 3px; }}
h3 {{ font-size: 14px; margin: 18px 0 6px; }}
.sub {{ color: #555; margin-top: 0; }}
table {{ border-collapse: collapse; margin: 6px 0 4px; font-size: 11px; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: right; vertical-align: top; }}
th {{ background: #eef3fb; }}
td.t, th.t {{ text-align: left; }}
td.hl {{ background: {HIGHLIGHT}; font-weight: 600; }}
td.row {{ background: {HIGHLIGHT_ROW}; }}
.facts td {{ text-align: left; border: none; padding: 1px 10px 1px 0; }}
.note {{ background: #f3f3f3; padding: 6px 10px; border-left: 4px solid #999; }}
.warning {{ background: #fff3cd; padding: 6px 10px; border-left: 4px solid #b08d00; }}
.caption {{ color: #555; font-size: 11px; margin: 2px 0 10px; }}
figure {{ margin: 8px 0 14px; page-break-inside: avoid; }}
figure svg, figure img {{ max-width: 100%; height: auto; }}
section {{ page-break-before: auto; }}
#sheet {{ page-break-after: always; }}
"""


def _is_text(v) -> bool:
    return isinstance(v, str)


def table_html(t: Table) -> str:
    df = t.df
    hl = set(t.highlight)
    rows = set(t.rows)
    cols = list(df.columns)
    head = "".join(f'<th class="{"t" if df[c].dtype == object else ""}">{html.escape(str(c))}</th>' for c in cols)
    body = []
    for i, (_, r) in enumerate(df.iterrows()):
        cells = []
        for j, c in enumerate(cols):
            v = r[c]
            cls = []
            if _is_text(v):
                cls.append("t")
            if (i, c) in hl:
                cls.append("hl")
            elif i in rows and j == 0:
                cls.append("row")
            cells.append(f'<td class="{" ".join(cls)}">{html.escape(cell_text(v))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f'<p class="caption">{html.escape(t.caption)}</p>' if t.caption else ""
    return (f"<h3>{html.escape(t.title)}</h3><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{cap}")


def render(memo: Memo, svgs: Sequence[bytes] | None = None, charts_note: str = "", renderer=None) -> str:
    """The memo as HTML: the decision sheet, then the appendix. `svgs`: one SVG per
    figure of the memo (in `memo.figures()` order); None draws them here with `renderer`
    (a `ui.committee.images.Renderer`) or `ui.committee.images` if a browser is found, else embeds
    interactive charts."""
    figs = memo.figures()
    if svgs is None and figs:
        try:
            draw = renderer.render if renderer is not None else images.render
            svgs = draw([f.fig for f in figs], fmt="svg", sizes=[f.size for f in figs], scale=1.0)
        except images.ImageError as exc:
            svgs, charts_note = None, charts_note or str(exc)
    fig_html: dict[int, str] = {}
    plotly_included = False
    for k, f in enumerate(figs):
        if svgs is not None:
            data = base64.b64encode(svgs[k]).decode("ascii")
            fig_html[id(f)] = f'<img alt="{html.escape(f.title)}" src="data:image/svg+xml;base64,{data}">'
        else:
            fig_html[id(f)] = f.fig.to_html(full_html=False, include_plotlyjs=not plotly_included,
                                            config={"displaylogo": False})
            plotly_included = True
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(memo.title)}"
             f"</title><style>{CSS}</style></head><body>",
             f"<h1>{html.escape(memo.title)}</h1><p class=\"sub\">{html.escape(memo.subtitle)}</p>",
             f"<p class=\"sub\">{html.escape(memo.date)} · SafeTab-P Studio {html.escape(memo.version)}</p>",
             "<table class=\"facts\">" + "".join(
                 f"<tr><td><b>{html.escape(k)}</b></td><td>{html.escape(v)}</td></tr>" for k, v in memo.facts)
             + "</table>"]
    if charts_note:
        parts.append(f'<p class="note">Charts are interactive here because they could not be drawn as pictures: '
                     f'{html.escape(charts_note)}.</p>')
    parts.append(f'<section id="sheet"><h2>{SHEET_TITLE}</h2>')
    for b in memo.sheet + memo.sheet_geography:
        if isinstance(b, Text):
            parts.append(f'<p class="{ {"note": "note", "warning": "warning"}.get(b.kind, "") }">'
                         f'{html.escape(b.text)}</p>')
        elif isinstance(b, Table):
            parts.append(table_html(b))
    parts.append("</section>")
    parts.append("<nav><h2>Appendix</h2><ol type=\"A\">" + "".join(
        f'<li><a href="#s{i}">{html.escape(s.title)}</a></li>' for i, s in enumerate(memo.sections)) + "</ol></nav>")
    for i, s in enumerate(memo.sections):
        parts.append(f'<section id="s{i}"><h2>{appendix_label(i)}. {html.escape(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Text):
                cls = {"note": "note", "warning": "warning"}.get(b.kind, "")
                parts.append(f'<p class="{cls}">{html.escape(b.text)}</p>')
            elif isinstance(b, Table):
                parts.append(table_html(b))
            elif isinstance(b, Figure):
                cap = f'<p class="caption">{html.escape(b.caption)}</p>' if b.caption else ""
                parts.append(f"<figure><h3>{html.escape(b.title)}</h3>{fig_html[id(b)]}{cap}</figure>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
