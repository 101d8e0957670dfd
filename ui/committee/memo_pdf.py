"""The decision memo as a PDF (pure; no Streamlit), written with fpdf2.

Landscape US Letter or A4 (`PAPERS`). Page 1 is the decision sheet; the appendix
follows from page 2, its sections flowing on from one another (a section's heading
always has its first block under it, so no page holds only a heading), with bookmarks
per section, page numbers, the memo's date and version on every page. Tables take
column widths that fit the longest word of every column (a word is never broken
inside a table; the font shrinks a little for wide tables), numbers printed by
`ui.committee.memo.memo_text` (4 significant digits, counts whole) and right-aligned. Charts are
JPEG pictures drawn by `ui.committee.images` at the size they print at (two half-width charts
side by side), each scaled to fit its page with its axes and legend; without a browser
the charts' data are listed instead, with a note.

Text needs a Unicode font for ρ, ε, σ², Θ₁, ⌊1.96σ⌋: DejaVu Sans (Debian's
fonts-dejavu-core, installed with Chromium), else Liberation Sans, else FreeSans, looked
up in the usual font folders (`find_font`). Characters the font lacks are written in
plain letters ("rho", "eps", ...), so the PDF is always produced.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from fpdf import FPDF

from ui.committee import images
from ui.committee.memo import (GEOGRAPHY_POINTER, SHEET_TITLE, Figure, Memo, Table, Text, appendix_label,
                               memo_text)

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
#: The paper sizes offered (landscape): fpdf2's names.
PAPERS = {"A4": "A4", "US Letter": "Letter"}
PAGE_MARGIN = 12
HEAD_FILL = (238, 243, 251)
CELL_FILL = (253, 226, 225)
ROW_FILL = (255, 243, 205)
#: Table cell padding (mm) and a little room beyond the text and fpdf2's cell margins.
PAD = 0.6
SLACK = 0.8
#: Gap between two half-width charts (mm).
GAP = 6.0
#: A row of charts that does not fit the room left on a page is drawn this much smaller
#: (at least) rather than start a page and leave the rest of this one blank.
SHRINK = 0.8


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


@lru_cache(maxsize=8)
def _cmap(path: Path) -> frozenset[int]:
    from fontTools.ttLib import TTFont

    with TTFont(str(path), lazy=True) as f:
        return frozenset(f.getBestCmap())


class _Doc(FPDF):
    def __init__(self, memo: Memo, font: tuple[Path, Path | None] | None, paper: str):
        super().__init__(orientation="L", unit="mm", format=PAPERS.get(paper, paper))
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
        #: (page, x, y, w, h) of every chart placed, for the tests' checks of the layout.
        self.placed: list[tuple[int, float, float, float, float]] = []
        #: Widths measured in this document, by font, size and text (`get_string_width`).
        self._measured: dict[tuple, float] = {}

    def get_string_width(self, s: str, normalized: bool = False, markdown: bool = False) -> float:
        """FPDF's width of `s` in the current font, measured once per font, size, spacing and
        text: laying the tables out measures the same cells at each font size tried and again
        when wrapping them (over 100,000 measurements for a comparison memo). FPDF's width
        includes character spacing and stretching, so they are part of the key too."""
        key = (self.font_family, self.font_style, self.font_size_pt, self.char_spacing, self.font_stretching,
               s, normalized, markdown)
        width = self._measured.get(key)
        if width is None:
            width = self._measured[key] = super().get_string_width(s, normalized, markdown)
        return width

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

    @property
    def room(self) -> float:
        """Height left on the page above the bottom margin (mm)."""
        return self.page_break_trigger - self.get_y()

    @property
    def body_height(self) -> float:
        return self.page_break_trigger - self.t_margin

    def footer(self) -> None:
        self.set_y(-PAGE_MARGIN)
        self.set_font(self.face, "", 7)
        self.set_text_color(90)
        self.cell(0, 4, self.t(f"{self.memo.title} · {self.memo.date} · SafeTab-P Studio {self.memo.version} · "
                                f"page {self.page_no()}/{{nb}}"), align="C")
        self.set_text_color(0)


# ------------------------------------------------------------------ tables
def _word_width(pdf: _Doc, text: str) -> float:
    return max((pdf.get_string_width(w) for w in text.split()), default=0.0)


def _widths(pdf: _Doc, rows: list[list[str]], total: float) -> list[float] | None:
    """Column widths (mm) at the current font: each at least its longest word (header
    and cells) plus padding, so no word is ever broken; the space left shared out in
    proportion to how much more each column's whole texts would take. None if the
    longest words alone do not fit in `total`."""
    n = len(rows[0])
    extra = 2 * PAD + 2 * pdf.c_margin + SLACK  # fpdf2 keeps the padding and a cell margin on each side
    size = pdf.font_size_pt
    pdf.set_font(pdf.face, "B", size)  # the header is drawn bold, wider than the same text in regular
    head_words = [_word_width(pdf, c) for c in rows[0]]
    head_texts = [pdf.get_string_width(c) for c in rows[0]]
    pdf.set_font(pdf.face, "", size)
    need = [max([head_words[j]] + [_word_width(pdf, r[j]) for r in rows[1:]]) + extra for j in range(n)]
    if sum(need) > total:
        return None
    want = [max([min(head_texts[j], 0.6 * total)] + [min(pdf.get_string_width(r[j]), 0.6 * total) for r in rows[1:]])
            + extra for j in range(n)]
    want = [max(w, m) for w, m in zip(want, need, strict=True)]
    if sum(want) <= total:
        return want
    spare, more = total - sum(need), [w - m for w, m in zip(want, need, strict=True)]
    k = spare / sum(more) if sum(more) else 0.0
    return [m + k * x for m, x in zip(need, more, strict=True)]


def _wrap(pdf: _Doc, text: str, width: float) -> list[str]:
    """Lines of `text` within `width` mm at the current font, broken at spaces (the
    column widths of `_widths` fit every word). Only a word wider than the column at the
    smallest font, such as a plan named with 80 characters and no space, is cut into
    pieces that fit (`_pieces`), rather than running over the next column or off the page."""
    out: list[str] = []
    for para in text.split("\n"):
        line = ""
        for word in para.split(" "):
            cand = f"{line} {word}" if line else word
            if line and pdf.get_string_width(cand) > width:
                out.append(line)
                line = word
            else:
                line = cand
            if pdf.get_string_width(line) > width:
                *whole, line = _pieces(pdf, line, width)
                out.extend(whole)
        out.append(line)
    return out


def _pieces(pdf: _Doc, text: str, width: float) -> list[str]:
    """`text` cut, character by character, into pieces of at most `width` mm (at least
    one character each)."""
    out, piece = [], ""
    for ch in text:
        if piece and pdf.get_string_width(piece + ch) > width:
            out.append(piece)
            piece = ch
        else:
            piece += ch
    return out + [piece]


def _table_layout(pdf: _Doc, t: Table) -> tuple:
    """How `_table` lays `t` out: (font size, column widths, header lines, body lines, header
    height, row heights, line height, columns, values)."""
    df = t.df
    cols = [str(c) for c in df.columns]
    values = [list(r) for r in df.itertuples(index=False)]
    rows = [[pdf.t(c) for c in cols]] + [[pdf.t(memo_text(v)) for v in r] for r in values]
    total = pdf.epw - 0.01
    size, widths = 8.0, None
    while widths is None and size >= 5.0:  # the largest font at which no word needs breaking
        pdf.set_font(pdf.face, "", size)
        widths = _widths(pdf, rows, total)
        if widths is None:
            size -= 0.5
    if widths is None:  # even at 5 pt: an equal share each (cannot happen with the memo's tables)
        widths = [total / len(cols)] * len(cols)
    lh = size * 0.45
    inner = [w - 2 * PAD - 2 * pdf.c_margin for w in widths]
    pdf.set_font(pdf.face, "B", size)
    head = [_wrap(pdf, c, inner[j]) for j, c in enumerate(rows[0])]
    pdf.set_font(pdf.face, "", size)
    body = [[_wrap(pdf, c, inner[j]) for j, c in enumerate(r)] for r in rows[1:]]
    head_h = max(len(c) for c in head) * lh + 2 * PAD
    heights = [max(len(c) for c in r) * lh + 2 * PAD for r in body]
    return size, widths, head, body, head_h, heights, lh, cols, values


def _table_height(pdf: _Doc, t: Table) -> float:
    """The height (mm) `_table` draws `t` at on one page: title, header, rows, caption."""
    _size, _widths_, _head, _body, head_h, heights, _lh, _cols, _values = _table_layout(pdf, t)
    cap = 0.0
    if t.caption:
        pdf.set_font(pdf.face, "", 7.5)
        cap = 3.6 * len(pdf.multi_cell(0, 3.6, pdf.t(t.caption), dry_run=True, output="LINES"))
    pdf.set_font(pdf.face, "B", 9)
    title = 5 * len(pdf.multi_cell(0, 5, pdf.t(t.title), dry_run=True, output="LINES"))
    return title + head_h + sum(heights) + cap + 2


def _table(pdf: _Doc, t: Table) -> None:
    """A table drawn cell by cell (fpdf2's own table layout costs a second or more per
    memo): widths from `_widths` (`_table_layout`), words never broken, the header repeated
    on every page the table runs onto, words left and numbers right, highlighted cells and rows."""
    size, widths, head, body, head_h, heights, lh, cols, values = _table_layout(pdf, t)
    if pdf.room < 6 + head_h + sum(heights[:2]):  # the title with the header and a row or two
        pdf.add_page()
    pdf.set_font(pdf.face, "B", 9)
    pdf.multi_cell(0, 5, pdf.t(t.title), new_x="LMARGIN", new_y="NEXT")
    hl, marked = set(t.highlight), set(t.rows)
    pdf.set_draw_color(150)
    pdf.set_line_width(0.15)

    def draw_row(lines_row, h, bold, fills, aligns):
        """One row: each cell's box, then its text, once (`bold`: every cell, or a list
        with one flag per cell: a highlighted cell is bold, and drawn only in bold)."""
        y = pdf.get_y()
        x = pdf.l_margin
        bolds = bold if isinstance(bold, list) else [bold] * len(lines_row)
        for j, lines in enumerate(lines_row):
            w = widths[j]
            fill = fills[j]
            if fill is not None:
                pdf.set_fill_color(*fill)
            pdf.rect(x, y, w, h, style="DF" if fill is not None else "D")
            pdf.set_font(pdf.face, "B" if bolds[j] else "", size)
            for k, line in enumerate(lines):
                ty = y + PAD + lh * (k + 0.78)
                if aligns[j] == "R":
                    tx = x + w - PAD - pdf.c_margin - pdf.get_string_width(line)
                else:
                    tx = x + PAD + pdf.c_margin
                pdf.text(tx, ty, line)
            x += w
        pdf.set_y(y + h)

    header_fills = [HEAD_FILL] * len(cols)
    left = ["L"] * len(cols)
    draw_row(head, head_h, True, header_fills, left)
    for i, (lines, h) in enumerate(zip(body, heights, strict=True)):
        if pdf.get_y() + h > pdf.page_break_trigger:
            pdf.add_page()
            draw_row(head, head_h, True, header_fills, left)
        fills = [CELL_FILL if (i, c) in hl else ROW_FILL if (i in marked and j == 0) else None
                 for j, c in enumerate(cols)]
        aligns = ["L" if isinstance(values[i][j], str) else "R" for j in range(len(cols))]
        # highlighted cells in bold, the rest as usual: each text drawn once (issue 40 item 6)
        draw_row(lines, h, [(i, c) in hl for c in cols], fills, aligns)
    pdf.set_draw_color(0)
    if t.caption:
        _caption(pdf, t.caption)
    pdf.ln(2)


def _caption(pdf: _Doc, text: str) -> None:
    pdf.set_font(pdf.face, "", 7.5)
    pdf.set_text_color(70)
    pdf.multi_cell(0, 3.6, pdf.t(text), new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.set_text_color(0)


def _text(pdf: _Doc, b: Text) -> None:
    pdf.set_font(pdf.face, "", 9)
    fill = {"note": (243, 243, 243), "warning": (255, 243, 205)}.get(b.kind)
    if fill:
        pdf.set_fill_color(*fill)
    pdf.multi_cell(0, 4.6, pdf.t(b.text), fill=bool(fill), new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.ln(1.5)


# ------------------------------------------------------------------ figures
def _pixels(img: bytes) -> tuple[int, int]:
    """(width, height) of a PNG or JPEG picture, read from its header."""
    if img[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", img[16:24])
    from PIL import Image

    with Image.open(io.BytesIO(img)) as im:
        return im.size


def _fit(pdf: _Doc, w_px: int, h_px: int, width: float, head: float) -> tuple[float, float]:
    """(w, h) mm of a picture `width` mm wide, made smaller if it would not fit a page
    with its title (`head` mm) and a caption line: every chart fits its page whole."""
    h = width * h_px / w_px
    limit = pdf.body_height - head - 8
    if h > limit:
        return limit * w_px / h_px, limit
    return width, h


def _figures(pdf: _Doc, figs: list[Figure], pics: dict[int, bytes | None], after: float = 0.0) -> None:
    """One row of charts: a whole-width one, or two half-width ones side by side. `after`:
    room (mm) kept under the row for the note that ends its section, so that the note
    never stands alone on a page."""
    if any(pics[id(f)] is None for f in figs):
        for f in figs:
            _table(pdf, Table(f"{f.title} (the chart's data; the chart could not be drawn)", f.data.head(40),
                              caption=f"First {min(40, len(f.data))} of {len(f.data)} rows." if len(f.data) > 40
                              else ""))
        return
    pdf.set_font(pdf.face, "B", 9)
    col = (pdf.epw - GAP) / 2 if len(figs) == 2 or figs[0].half else pdf.epw
    heads = [4.6 * len(pdf.multi_cell(col, 4.6, pdf.t(f.title), dry_run=True, output="LINES", align="L"))
             for f in figs]
    head = max(heads)
    sizes = [_fit(pdf, *_pixels(pics[id(f)]), col, head) for f in figs]
    caps = 0.0
    pdf.set_font(pdf.face, "", 7.5)
    for f in figs:
        if f.caption:
            caps = max(caps, 3.6 * len(pdf.multi_cell(col, 3.6, pdf.t(f.caption), dry_run=True, output="LINES")))
    need = head + max(h for _w, h in sizes) + caps + 3 + after
    if pdf.room < need:
        scale = (pdf.room - head - caps - 3 - after) / max(h for _w, h in sizes)
        if scale >= SHRINK:  # a little smaller, on this page
            sizes = [(w * scale, h * scale) for w, h in sizes]
        else:
            pdf.add_page()
    top = pdf.get_y()
    bottom = top
    for k, f in enumerate(figs):
        x = pdf.l_margin + k * (col + GAP)
        w, h = sizes[k]
        pdf.set_xy(x, top)
        pdf.set_font(pdf.face, "B", 9)
        pdf.multi_cell(col, 4.6, pdf.t(f.title), new_x="LEFT", new_y="NEXT", align="L")
        y = top + head
        pdf.image(io.BytesIO(pics[id(f)]), x=x, y=y, w=w, h=h)
        pdf.placed.append((pdf.page_no(), x, y, w, h))
        yc = y + h + 0.5
        if f.caption:
            pdf.set_xy(x, yc)
            pdf.set_font(pdf.face, "", 7.5)
            pdf.set_text_color(70)
            pdf.multi_cell(col, 3.6, pdf.t(f.caption), new_x="LEFT", new_y="NEXT", align="L")
            pdf.set_text_color(0)
            yc = pdf.get_y()
        bottom = max(bottom, yc)
    pdf.set_xy(pdf.l_margin, bottom + 2)


def _rows(blocks: list) -> list:
    """The blocks with consecutive half-width figures paired into rows (lists)."""
    out: list = []
    for b in blocks:
        if isinstance(b, Figure):
            if b.half and out and isinstance(out[-1], list) and len(out[-1]) == 1 and out[-1][0].half:
                out[-1].append(b)
            else:
                out.append([b])
        else:
            out.append(b)
    return out


def _first_height(pdf: _Doc, block) -> float:
    """About how much room a block needs to start on a page with its heading (mm)."""
    if isinstance(block, list):
        f = block[0]
        w_px, h_px = f.size
        col = (pdf.epw - GAP) / 2 if f.half else pdf.epw
        return min(col * h_px / w_px, pdf.body_height - 20) + 10
    if isinstance(block, Text):
        return 12.0
    return 28.0  # a table's title, header and first rows


def _text_height(pdf: _Doc, b: Text) -> float:
    """The height `_text` draws `b` at (mm)."""
    pdf.set_font(pdf.face, "", 9)
    return 4.6 * len(pdf.multi_cell(0, 4.6, pdf.t(b.text), dry_run=True, output="LINES")) + 1.5


def _block(pdf: _Doc, b, pics: dict[int, bytes | None], after: float = 0.0) -> None:
    if isinstance(b, Text):
        _text(pdf, b)
    elif isinstance(b, Table):
        _table(pdf, b)
    elif isinstance(b, list):
        _figures(pdf, b, pics, after)


# ------------------------------------------------------------------ the document
def pictures(memo: Memo, renderer=None) -> list[bytes]:
    """JPEG pictures of the memo's figures, each at the size it prints at (half or whole
    page width), drawn by `renderer` (a `ui.committee.images.Renderer`) or a browser started for
    them. ImageError if they cannot be drawn."""
    figs = memo.figures()
    if not figs:
        return []
    draw = renderer.render if renderer is not None else images.render
    return draw([f.fig for f in figs], fmt="jpeg", sizes=[f.size for f in figs], scale=2.0)


def render(memo: Memo, pngs: Sequence[bytes | None] | None = None, charts_note: str = "",
           font: tuple[Path, Path | None] | None | str = "auto", paper: str = "A4", renderer=None,
           layout: list | None = None) -> bytes:
    """The memo as PDF bytes, landscape `paper` ("A4" or "US Letter"). `pngs`: one
    picture (PNG or JPEG) per figure (in `memo.figures()` order); None draws them with
    `renderer` or `ui.committee.images` when a browser is found. `font`: "auto" (`find_font`),
    None (the core Helvetica) or (regular, bold) paths. `layout`, if given, receives
    (page, x, y, w, h) of every chart placed (mm)."""
    figs = memo.figures()
    if pngs is None and figs:
        try:
            pngs = pictures(memo, renderer)
        except images.ImageError as exc:
            pngs, charts_note = None, charts_note or str(exc)
    pics = {id(f): (pngs[k] if pngs is not None else None) for k, f in enumerate(figs)}
    pdf = _Doc(memo, find_font() if font == "auto" else font, paper)
    pdf.alias_nb_pages()

    # ---- page 1: the decision sheet
    pdf.add_page()
    pdf.start_section(pdf.t(SHEET_TITLE), level=0)
    pdf.set_font(pdf.face, "B", 15)
    pdf.multi_cell(0, 7, pdf.t(memo.title), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(pdf.face, "", 9)
    pdf.set_text_color(70)
    pdf.multi_cell(0, 4.5, pdf.t(f"{SHEET_TITLE} · {memo.subtitle} · {memo.date} · SafeTab-P Studio "
                                 f"{memo.version}"), new_x="LMARGIN", new_y="NEXT")
    pdf.set_text_color(0)
    pdf.ln(1.5)
    half = pdf.epw / 2
    pdf.set_font(pdf.face, "B", 8)
    key_w = min(max((pdf.get_string_width(pdf.t(k)) for k, _v in memo.facts), default=10) + 3, half / 2)
    y = y_next = pdf.get_y()
    for i, (k, v) in enumerate(memo.facts):  # two columns of key facts
        x = pdf.l_margin + (i % 2) * half
        if i % 2 == 0:
            y = y_next
        pdf.set_xy(x, y)
        pdf.set_font(pdf.face, "B", 8)
        pdf.multi_cell(key_w, 4.2, pdf.t(k), new_x="RIGHT", new_y="TOP", align="L")
        y_key = y + 4.2 * len(pdf.multi_cell(key_w, 4.2, pdf.t(k), dry_run=True, output="LINES"))
        pdf.set_xy(x + key_w, y)
        pdf.set_font(pdf.face, "", 8)
        pdf.multi_cell(half - key_w - 2, 4.2, pdf.t(v), new_x="LMARGIN", new_y="NEXT", align="L")
        y_next = max(y_next, pdf.get_y(), y_key)
    pdf.set_y(y_next)
    pdf.ln(2)
    if charts_note:
        _text(pdf, Text(f"The charts could not be drawn as pictures ({charts_note}); their data are listed "
                        "instead.", "warning"))
    for b in memo.sheet:
        _block(pdf, b, pics)
    contents = pdf.t("Appendix: " + " · ".join(f"{appendix_label(i)}. {s.title}"
                                               for i, s in enumerate(memo.sections)))
    pdf.set_font(pdf.face, "", 8)
    contents_h = 4 * len(pdf.multi_cell(0, 4, contents, dry_run=True, output="LINES"))
    # the outcome per geography under the sheet if it fits on page 1, else at the top of
    # page 2 with a pointer here: the sheet itself is never pushed off page 1
    later = bool(memo.sheet_geography) and (pdf.page_no() > 1 or pdf.room < contents_h + sum(
        _table_height(pdf, b) if isinstance(b, Table) else _text_height(pdf, b) for b in memo.sheet_geography))
    if later:
        _text(pdf, Text(GEOGRAPHY_POINTER, "note"))
    else:
        for b in memo.sheet_geography:
            _block(pdf, b, pics)
    pdf.set_font(pdf.face, "", 8)
    pdf.set_text_color(70)
    pdf.multi_cell(0, 4, contents, new_x="LMARGIN", new_y="NEXT")
    pdf.set_text_color(0)

    # ---- the appendix, from page 2, sections flowing on (a sheet that ran onto page 2 is
    # followed there, so that no page holds only its last line)
    if pdf.page_no() == 1:
        pdf.add_page()
    else:
        pdf.ln(4)
    if later:
        for b in memo.sheet_geography:
            _block(pdf, b, pics)
        pdf.ln(2)
    for i, s in enumerate(memo.sections):
        rows = _rows(s.blocks)
        title = f"{appendix_label(i)}. {s.title}"
        need = 10 + sum(_first_height(pdf, r) for r in rows[:2 if rows and isinstance(rows[0], Text) else 1])
        if i and pdf.room < need:  # a heading always has its first block under it
            pdf.add_page()
        elif i:
            pdf.ln(3)
        pdf.start_section(pdf.t(title), level=0)
        pdf.set_font(pdf.face, "B", 13)
        pdf.set_text_color(31, 90, 166)
        pdf.multi_cell(0, 6.5, pdf.t(title), new_x="LMARGIN", new_y="NEXT")
        pdf.set_text_color(0)
        pdf.ln(1)
        for k, b in enumerate(rows):
            last_note = k == len(rows) - 2 and isinstance(b, list) and isinstance(rows[-1], Text)
            _block(pdf, b, pics, _text_height(pdf, rows[-1]) if last_note else 0.0)
    if layout is not None:
        layout.extend(pdf.placed)
    return bytes(pdf.output())
