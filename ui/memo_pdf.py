"""The decision memo as a PDF (pure; no Streamlit), written with fpdf2.

A4 landscape, with bookmarks per section, page numbers, the memo's date and version on
every page, tables with the memo's highlighting (numbers printed by
`ui.memo.cell_text`, as in the HTML memo) and the charts as PNG pictures drawn by
`ui.images` (without a browser the charts' data are listed instead, with a note).

Text needs a Unicode font for ρ, ε, σ², Θ₁, ⌊1.96σ⌋: DejaVu Sans (Debian's
fonts-dejavu-core, installed with Chromium), else Liberation Sans, else FreeSans, looked
up in the usual font folders (`find_font`). Characters the font lacks are written in
plain letters ("rho", "eps", ...), so the PDF is always produced.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

from fpdf import FPDF
from fpdf.fonts import FontFace

from ui import images
from ui.memo import Figure, Memo, Table, Text, cell_text

#: Font folders searched, in order (Debian/Ubuntu, other Linux, macOS, Windows).
FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/share/fonts/TTF",
             "/usr/share/fonts/truetype/liberation", "/usr/share/fonts/liberation",
             "/usr/share/fonts/truetype/freefont", "/usr/local/share/fonts", "/Library/Fonts",
             "C:/Windows/Fonts")
#: (regular, bold) file names of the fonts tried, best first.
FONTS = (("DejaVuSans.ttf", "DejaVuSans-Bold.ttf"), ("LiberationSans-Regular.ttf", "LiberationSans-Bold.ttf"),
         ("FreeSans.ttf", "FreeSansBold.ttf"))
#: Plain-letter spellings of the symbols the memo uses, for fonts that lack them.
PLAIN = {
    "ρ": "rho", "ε": "eps", "σ": "sigma", "γ": "gamma", "δ": "delta", "Θ": "Theta", "θ": "theta",
    "²": "^2", "₁": "1", "₂": "2", "₃": "3", "ⱼ": "j", "⌊": "floor(", "⌋": ")", "√": "sqrt", "≤": "<=",
    "≥": ">=", "→": "->", "×": "x", "—": "-", "–": "-", "−": "-", "…": "...", "“": '"', "”": '"', "’": "'",
    "‘": "'", "·": "*", "✓": "OK", "✗": "X", "∞": "inf", "≈": "~", "Σ": "sum", "μ": "mu",
}
PAGE_MARGIN = 12
HEAD_FILL = (238, 243, 251)
CELL_FILL = (253, 226, 225)
ROW_FILL = (255, 243, 205)


def find_font(dirs: Sequence[str] = FONT_DIRS) -> tuple[Path, Path | None] | None:
    """(regular, bold or None) TTF files of the best font found, or None. The folder
    in $SAFETAB_PDF_FONTS, if set, is searched first."""
    extra = os.environ.get("SAFETAB_PDF_FONTS", "").strip()
    folders = ([extra] if extra else []) + list(dirs)
    for regular, bold in FONTS:
        for d in folders:
            r = Path(d) / regular
            if r.is_file():
                b = Path(d) / bold
                return r, (b if b.is_file() else None)
    return None


def _cmap(path: Path) -> set[int]:
    from fontTools.ttLib import TTFont

    with TTFont(str(path), lazy=True) as f:
        return set(f.getBestCmap())


class _Doc(FPDF):
    def __init__(self, memo: Memo, font: tuple[Path, Path | None] | None):
        super().__init__(orientation="L", unit="mm", format="A4")
        self.memo = memo
        self.set_margins(PAGE_MARGIN, PAGE_MARGIN, PAGE_MARGIN)
        self.set_auto_page_break(True, margin=PAGE_MARGIN + 4)
        if font is not None:
            self.add_font("memo", "", str(font[0]))
            self.add_font("memo", "B", str(font[1] or font[0]))
            self.face, self.glyphs = "memo", _cmap(font[0])
        else:  # the PDF core font: Latin-1 only
            self.face, self.glyphs = "helvetica", set(range(256))
        self.set_title(self.t(memo.title))
        self.set_creator(f"SafeTab-P Studio {memo.version}")

    def t(self, text: str) -> str:
        """Text the font can print (missing symbols spelt in plain letters)."""
        if all(ord(ch) in self.glyphs or ch == "\n" for ch in text):
            return text
        out = []
        for ch in text:
            if ord(ch) in self.glyphs or ch == "\n":
                out.append(ch)
            else:
                rep = PLAIN.get(ch, "?")
                out.append("".join(c for c in rep if ord(c) in self.glyphs) or "?")
        return "".join(out)

    def footer(self) -> None:
        self.set_y(-PAGE_MARGIN)
        self.set_font(self.face, "", 7)
        self.set_text_color(110)
        self.cell(0, 4, self.t(f"{self.memo.title} · {self.memo.date} · SafeTab-P Studio {self.memo.version} · "
                                f"page {self.page_no()}/{{nb}}"), align="C")
        self.set_text_color(0)


def _widths(pdf: _Doc, texts: list[list[str]], total: float) -> list[float]:
    """Column widths proportional to their content (header words and cells), capped."""
    n = len(texts[0])
    want = []
    for j in range(n):
        head = max((pdf.get_string_width(w) for w in texts[0][j].split()), default=4)
        cells = max((pdf.get_string_width(r[j]) for r in texts[1:]), default=4)
        want.append(min(max(head, cells, 6) + 3, 90))
    s = sum(want)
    return [w * total / s for w in want] if s > total else want


def _table(pdf: _Doc, t: Table) -> None:
    df = t.df
    cols = [str(c) for c in df.columns]
    n = len(cols)
    size = 8 if n <= 6 else 7 if n <= 10 else 6
    pdf.set_font(pdf.face, "B", 9)
    pdf.multi_cell(0, 5, pdf.t(t.title), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(pdf.face, "", size)
    rows = [[pdf.t(c) for c in cols]] + [[pdf.t(cell_text(v)) for v in r] for r in df.itertuples(index=False)]
    total = pdf.epw - 0.01
    widths = _widths(pdf, rows, total)
    hl, marked = set(t.highlight), set(t.rows)
    values = [list(r) for r in df.itertuples(index=False)]
    with pdf.table(col_widths=widths, width=min(sum(widths), total), align="LEFT", line_height=size * 0.5,
                   headings_style=FontFace(emphasis="BOLD", fill_color=HEAD_FILL), repeat_headings=1,
                   padding=0.6) as tab:
        for i, r in enumerate(rows):
            row = tab.row()
            for j, text in enumerate(r):
                style = None
                if i > 0 and (i - 1, cols[j]) in hl:
                    style = FontFace(emphasis="BOLD", fill_color=CELL_FILL)
                elif i > 0 and (i - 1) in marked and j == 0:
                    style = FontFace(fill_color=ROW_FILL)
                # words left, numbers right (as in the HTML memo)
                left = i == 0 or isinstance(values[i - 1][j], str)
                row.cell(text, style=style, align="LEFT" if left else "RIGHT")
    if t.caption:
        _caption(pdf, t.caption)
    pdf.ln(2)


def _caption(pdf: _Doc, text: str) -> None:
    pdf.set_font(pdf.face, "", 7.5)
    pdf.set_text_color(85)
    pdf.multi_cell(0, 3.6, pdf.t(text), new_x="LMARGIN", new_y="NEXT")
    pdf.set_text_color(0)


def _text(pdf: _Doc, b: Text) -> None:
    pdf.set_font(pdf.face, "", 9)
    fill = {"note": (243, 243, 243), "warning": (255, 243, 205)}.get(b.kind)
    if fill:
        pdf.set_fill_color(*fill)
    pdf.multi_cell(0, 4.6, pdf.t(b.text), fill=bool(fill), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(1.5)


def _figure(pdf: _Doc, f: Figure, png: bytes | None) -> None:
    if png is None:
        _table(pdf, Table(f"{f.title} (the chart's data; the chart could not be drawn)", f.data.head(40),
                          caption=f"First {min(40, len(f.data))} of {len(f.data)} rows." if len(f.data) > 40 else ""))
        return
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        w_px, h_px = im.size
    w = min(pdf.w - 2 * PAGE_MARGIN, 235.0)
    h = w * h_px / w_px
    if pdf.get_y() + h + 8 > pdf.page_break_trigger:
        pdf.add_page()
    pdf.set_font(pdf.face, "B", 9)
    pdf.cell(0, 5, pdf.t(f.title), new_x="LMARGIN", new_y="NEXT")
    pdf.image(io.BytesIO(png), w=w, h=h)
    if f.caption:
        _caption(pdf, f.caption)
    pdf.ln(2)


def render(memo: Memo, pngs: Sequence[bytes | None] | None = None, charts_note: str = "",
           font: tuple[Path, Path | None] | None | str = "auto") -> bytes:
    """The memo as PDF bytes. `pngs`: one PNG per figure (in `memo.figures()` order);
    None draws them with `ui.images` when a browser is found. `font`: "auto"
    (`find_font`), None (the core Helvetica) or (regular, bold) paths."""
    figs = memo.figures()
    if pngs is None and figs:
        try:
            pngs = images.render([f.fig for f in figs], fmt="png")
        except images.ImageError as exc:
            pngs, charts_note = None, charts_note or str(exc)
    png_of = {id(f): (pngs[k] if pngs is not None else None) for k, f in enumerate(figs)}
    pdf = _Doc(memo, find_font() if font == "auto" else font)
    pdf.alias_nb_pages()
    pdf.add_page()
    pdf.set_font(pdf.face, "B", 17)
    pdf.multi_cell(0, 8, pdf.t(memo.title), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(pdf.face, "", 10)
    pdf.set_text_color(85)
    pdf.multi_cell(0, 5, pdf.t(f"{memo.subtitle}\n{memo.date} · SafeTab-P Studio {memo.version}"),
                   new_x="LMARGIN", new_y="NEXT")
    pdf.set_text_color(0)
    pdf.ln(2)
    for k, v in memo.facts:
        pdf.set_font(pdf.face, "B", 9)
        pdf.cell(70, 5, pdf.t(k))
        pdf.set_font(pdf.face, "", 9)
        pdf.multi_cell(0, 5, pdf.t(v), new_x="LMARGIN", new_y="NEXT")
    if charts_note:
        pdf.ln(2)
        _text(pdf, Text(f"The charts could not be drawn as pictures ({charts_note}); their data are listed "
                        "instead.", "warning"))
    pdf.ln(2)
    pdf.set_font(pdf.face, "B", 10)
    pdf.cell(0, 6, "Contents", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(pdf.face, "", 9)
    for i, s in enumerate(memo.sections, start=1):
        pdf.cell(0, 4.6, pdf.t(f"{i}. {s.title}"), new_x="LMARGIN", new_y="NEXT")
    for i, s in enumerate(memo.sections, start=1):
        pdf.add_page()
        pdf.start_section(pdf.t(f"{i}. {s.title}"), level=0)
        pdf.set_font(pdf.face, "B", 14)
        pdf.set_text_color(31, 90, 166)
        pdf.multi_cell(0, 7, pdf.t(f"{i}. {s.title}"), new_x="LMARGIN", new_y="NEXT")
        pdf.set_text_color(0)
        pdf.ln(1)
        for b in s.blocks:
            if isinstance(b, Text):
                _text(pdf, b)
            elif isinstance(b, Table):
                _table(pdf, b)
            elif isinstance(b, Figure):
                _figure(pdf, b, png_of[id(b)])
    return bytes(pdf.output())
