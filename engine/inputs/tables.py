"""Reading small pipe-delimited SafeTab-P files (SPEC section 4) with line numbers.

The real 2020 spec files use CRLF line ends and end with a blank line; both are
accepted, and so are CR line ends alone (pandas, production's reader, takes all three).
Large files (persons, geography) go through `engine.inputs.readers` instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from calculators.config import expected_file
from engine.errors import ProblemLog
from engine.inputs.readers import open_input

#: The most bytes of a spec file read: the 2020 files are under 200 kB; one that is
#: larger is refused before it is read (it would be held in memory several times over).
MAX_SPEC_BYTES = 64 << 20
_LINE_END = re.compile("\r\n|\r|\n")
_LINE_END_BYTES = re.compile(b"\r\n|\r|\n")


def read_pipe_table(
    path: Path, expected_header: list[str], log: ProblemLog
) -> list[tuple[int, dict[str, str]]] | None:
    """Rows of a small pipe-delimited file as (line number, {column: value}); None if the
    file could not be read at all (missing, unreadable, too large, wrong header).

    Problems (missing file, wrong header, wrong number of fields) go to `log`; rows
    with the wrong number of fields are skipped so later checks don't cascade. Header
    and values are as written: a space around a code, a level or a flag is the callers'
    to refuse, as production's patterns refuse it (only names may carry spaces).
    """
    name = path.name
    if not path.is_file():
        log.add(name, None, None, None, expected_file(path))
        return None
    try:
        with open_input(path) as fh:
            raw = fh.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        log.add(name, None, None, None, f"a readable file (cannot read it: {exc.strerror or exc})")
        return None
    if len(raw) > MAX_SPEC_BYTES:
        try:
            size = f"{path.stat().st_size:,} bytes"
        except OSError:
            size = "more bytes"
        log.add(name, None, None, None, f"found a file of {size}; expected a spec file of at most "
                                        f"{MAX_SPEC_BYTES:,} bytes (the 2020 files are under 200 kB); it was not read")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        # Name every line that is not UTF-8, then go on with the others so that one bad
        # byte does not hide the file's other problems (or cascade into the next file).
        text = raw.decode("utf-8", errors="replace")
        for i, line in enumerate(_LINE_END_BYTES.split(raw), start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                log.add(name, i, None, line.decode("utf-8", errors="replace"),
                        f"UTF-8 text (the byte 0x{line[exc.start]:02x} is not; SPEC §4: files are UTF-8)")
    # Lines end at CRLF, LF or a lone CR, as production's reader (pandas) ends them: a
    # file saved with CR line ends alone used to be one line, refused as a wrong header.
    # Not str.splitlines, which would also split inside a name at U+2028 or a form feed.
    lines = _LINE_END.split(text.removeprefix("\ufeff"))  # a byte-order mark is skipped, as pandas skips it
    if not lines or not lines[0]:
        log.add(name, 1, None, "", "a header row " + "|".join(expected_header))
        return None
    header = lines[0].split("|")
    if header != expected_header:
        log.add(name, 1, None, lines[0], "the header " + "|".join(expected_header))
        return None
    rows = []
    width = len(expected_header)
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != width:
            log.add(name, i, None, line, f"{width} fields separated by '|' (found {len(fields)})")
            continue
        rows.append((i, dict(zip(expected_header, fields))))
    return rows
