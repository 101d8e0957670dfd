"""Input problems and the error that carries them.

Every problem names the file, the line (1-based, the header is line 1; for Parquet the
1-based row), the column (config.json: the key), the value found (cut to a short prefix)
and what was expected, so a user can fix the input without a debugger.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Echoed values are cut to this many characters (as calculators.config.ECHO_LIMIT;
#: engine.errors imports nothing of the project).
ECHO_LIMIT = 60

#: The longest "expected" text kept (ours are shorter; a library's message may quote a file).
_EXPECTED_LIMIT = 1200
#: How many problems an error message lists before it only gives the total.
SHOWN_PROBLEMS = 20


@dataclass(frozen=True)
class Problem:
    """One problem. A `value` longer than `ECHO_LIMIT` characters is cut to that
    prefix when the Problem is made (`length` keeps its full length), so a 100 MB
    field never becomes a 100 MB message or is held in memory twice."""

    file: str
    line: int | None
    column: str | None
    value: str | None
    expected: str
    length: int | None = None

    def __post_init__(self) -> None:
        if len(self.expected) > _EXPECTED_LIMIT:  # e.g. a library's message quoting the file
            object.__setattr__(self, "expected", self.expected[:_EXPECTED_LIMIT] + "...")
        if self.value is not None and len(self.value) > ECHO_LIMIT:
            object.__setattr__(self, "length", len(self.value))
            object.__setattr__(self, "value", self.value[:ECHO_LIMIT])

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            # Parquet has rows (1-based), text files lines (the header is line 1)
            where += f", {'row' if self.file.endswith('.parquet') else 'line'} {self.line}"
        if self.column:
            # config.json has keys; the pipe-delimited files have columns
            where += f", {'key' if self.file.endswith('.json') else 'column'} {self.column}"
        if self.value is None:
            return f"{where}: {self.expected}"
        found = repr(self.value) + (f"... ({self.length:,} characters)" if self.length else "")
        return f"{where}: found {found}; expected {self.expected}"


class InputError(Exception):
    """Invalid input files. Raised before any noise is drawn or any file is written."""

    def __init__(self, problems: list[Problem], total: int | None = None, context: str | None = None):
        self.problems = list(problems)
        self.total = total if total is not None else len(self.problems)
        #: What was being read, said before the count (e.g. "the spec files of DIR are not valid").
        self.context = context
        super().__init__(self.report())

    def __reduce__(self):
        # pickled whole (e.g. from a worker process of a parallel study), not as its text
        return (InputError, (self.problems, self.total, self.context))

    def report(self, limit: int = SHOWN_PROBLEMS) -> str:
        where = f"{self.context}: " if self.context else ""
        lines = [f"Invalid input: {where}{self.total} problem{'s' if self.total != 1 else ''} found."]
        lines += [f"  - {p}" for p in self.problems[:limit]]
        if self.total > min(limit, len(self.problems)):
            lines.append(f"  ... and {self.total - min(limit, len(self.problems))} more.")
        return "\n".join(lines)


class ProblemLog:
    """Collects problems; keeps the first few in full and counts the rest."""

    def __init__(self, keep: int = 200):
        self.keep = keep
        self.problems: list[Problem] = []
        self.total = 0

    def add(self, file: str, line: int | None, column: str | None, value, expected: str) -> None:
        self.total += 1
        if len(self.problems) < self.keep:
            self.problems.append(
                Problem(file, line, column, None if value is None else str(value), expected)
            )

    def count(self, n: int) -> None:
        """Count n further problems already represented by an example."""
        self.total += n

    def __bool__(self) -> bool:
        return self.total > 0

    def raise_if_any(self) -> None:
        if self.total:
            raise InputError(self.problems, self.total)


class OutputError(Exception):
    """OUT_DIR cannot be written (a symbolic link, no permission, a read-only or full disk,
    another run writing it). Raised before the computation wherever it can be checked;
    OUT_DIR is left as it was, unless `on_disk` says what is there instead. The command
    line exits 1."""

    def __init__(self, message: str, on_disk: str | None = None):
        super().__init__(message)
        self.on_disk = on_disk

    def __reduce__(self):
        return (OutputError, (str(self), self.on_disk))


class WorkerLost(RuntimeError):
    """A worker process of a parallel accuracy study (`--jobs`) ended without finishing
    its trial: killed (e.g. by the out-of-memory killer) or crashed. The study fails and
    nothing is written. The command line exits 1."""


class UsageError(ValueError):
    """The arguments ask for something unsafe or impossible (OUT_DIR not empty, OUT_DIR
    over an input folder, --overwrite of a folder this tool did not write). Exit 2."""
