"""The four SafeTab-P spec files of PARAMS_DIR (SPEC section 4) and what follows from them.

`load_specs` reads and checks the files; `Specs` answers which characteristic iterations
each geography level tabulates and the stability S of each iteration level
(SPEC section 1: S = h_r * max(2, r) + h_e).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from calculators.budget import stability as _stability
from calculators.levels import ITERATION_LEVELS, STATE_OR_ABOVE
from engine.errors import ProblemLog
from engine.inputs.tables import read_pipe_table

RACE_ITERATIONS_FILE = "race-characteristic-iterations.txt"
ETHNICITY_ITERATIONS_FILE = "ethnicity-characteristic-iterations.txt"
CODES_FILE = "race-and-ethnicity-codes.txt"
CODE_TO_ITERATION_FILE = "race-and-ethnicity-code-to-iteration.txt"
SPEC_FILES = (RACE_ITERATIONS_FILE, ETHNICITY_ITERATIONS_FILE, CODES_FILE, CODE_TO_ITERATION_FILE)

RACE_ITERATION_HEADER = ["ITERATION_CODE", "ITERATION_NAME", "LEVEL", "ALONE", "DETAILED_ONLY", "COARSE_ONLY"]
ETHNICITY_ITERATION_HEADER = ["ITERATION_CODE", "ITERATION_NAME", "LEVEL", "DETAILED_ONLY", "COARSE_ONLY"]
CODES_HEADER = ["RACE_ETH_CODE", "RACE_ETH_NAME"]
CODE_TO_ITERATION_HEADER = ["ITERATION_CODE", "RACE_ETH_CODE"]

RACE = "race"
ETHNICITY = "ethnicity"


@dataclass(frozen=True)
class Iteration:
    """One characteristic iteration (a row of an iteration spec file)."""

    code: str
    name: str
    level: int
    kind: str  # RACE or ETHNICITY
    alone: bool | None  # None for ethnicity iterations
    detailed_only: bool
    coarse_only: bool

    def tabulated_at(self, geo: str) -> bool:
        """SPEC §1: USA/STATE/PR-STATE skip COARSE_ONLY; sub-state levels skip DETAILED_ONLY."""
        if self.level not in ITERATION_LEVELS:
            return False
        if geo in STATE_OR_ABOVE:
            return not self.coarse_only
        return not self.detailed_only


@dataclass(frozen=True)
class Specs:
    """Parsed spec files. Iterations keep file order (race file first)."""

    iterations: dict[str, Iteration]
    codes: dict[str, str]
    code_to_iterations: dict[str, tuple[str, ...]] = field(repr=False)

    # ------------------------------------------------------------------ tabulation
    def tabulated(self, geo: str, level: int) -> list[Iteration]:
        """Iterations of `level` that geography level `geo` tabulates, in file order."""
        return [it for it in self.iterations.values() if it.level == level and it.tabulated_at(geo)]

    def count_tabulated(self, geo: str, level: int) -> int:
        return len(self.tabulated(geo, level))

    # ------------------------------------------------------------------ membership
    @cached_property
    def _slices(self) -> dict[tuple[str, int, bool | None], dict[str, frozenset[str]]]:
        """(kind, level, alone) -> code -> the iterations of that slice the code maps to."""
        out: dict[tuple[str, int, bool | None], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for code, iters in self.code_to_iterations.items():
            for it_code in iters:
                it = self.iterations[it_code]
                if it.level in ITERATION_LEVELS:
                    out[(it.kind, it.level, it.alone)][code].add(it_code)
        return {k: {c: frozenset(s) for c, s in v.items()} for k, v in out.items()}

    def race_alone(self, level: int) -> dict[str, frozenset[str]]:
        return self._slices.get((RACE, level, True), {})

    def race_aoic(self, level: int) -> dict[str, frozenset[str]]:
        return self._slices.get((RACE, level, False), {})

    def ethnicity(self, level: int) -> dict[str, frozenset[str]]:
        return self._slices.get((ETHNICITY, level, None), {})

    def person_iterations(self, race_codes: frozenset[str], eth_code: str, level: int) -> frozenset[str]:
        """SPEC §1: alone = intersection, AOIC = union over the race codes, plus ethnicity.

        The geography filter (`Iteration.tabulated_at`) is applied by the caller.
        """
        alone_map, aoic_map = self.race_alone(level), self.race_aoic(level)
        alone: frozenset[str] | None = None
        aoic: set[str] = set()
        for code in race_codes:
            a = alone_map.get(code, frozenset())
            alone = a if alone is None else alone & a
            aoic |= aoic_map.get(code, frozenset())
        eth = self.ethnicity(level).get(eth_code, frozenset())
        return frozenset(aoic) | (alone or frozenset()) | eth

    # ------------------------------------------------------------------ stability
    def h_r(self, level: int) -> int:
        """The most iterations one race code maps to within one (level, ALONE) slice."""
        sizes = [len(s) for alone in (True, False) for s in self._slices.get((RACE, level, alone), {}).values()]
        return max(sizes, default=0)

    def h_e(self, level: int) -> int:
        """The most iterations one ethnicity code maps to within the level."""
        return max((len(s) for s in self.ethnicity(level).values()), default=0)

    def stability(self, level: int, max_race_codes: int) -> int:
        """S = h_r * max(2, r) + h_e (SPEC §1), at least 1."""
        return max(1, _stability(max_race_codes, self.h_r(level), self.h_e(level)))


# ---------------------------------------------------------------------- loading
def _flag(value: str, level: int, allow_null: bool) -> bool | None:
    if value == "True":
        return True
    if value == "False":
        return False
    if value == "Null" and allow_null:
        return None
    raise ValueError


def load_specs(params_dir: str | Path, log: ProblemLog | None = None) -> Specs:
    """Read and check the four spec files of `params_dir`.

    With a `log`, problems are added to it and a best-effort Specs is returned;
    without one, an InputError is raised if there is any problem.
    """
    params_dir = Path(params_dir)
    own_log = log is None
    log = log if log is not None else ProblemLog()
    iterations: dict[str, Iteration] = {}
    where: dict[str, str] = {}

    for fname, header, kind in (
        (RACE_ITERATIONS_FILE, RACE_ITERATION_HEADER, RACE),
        (ETHNICITY_ITERATIONS_FILE, ETHNICITY_ITERATION_HEADER, ETHNICITY),
    ):
        for line, row in read_pipe_table(params_dir / fname, header, log):
            code = row["ITERATION_CODE"]
            if not code:
                log.add(fname, line, "ITERATION_CODE", code, "a non-empty iteration code")
                continue
            if code in iterations:
                log.add(fname, line, "ITERATION_CODE", code, f"a unique iteration code (already defined in {where[code]})")
                continue
            if row["LEVEL"] not in ("0", "1", "2"):
                log.add(fname, line, "LEVEL", row["LEVEL"], "0, 1 or 2")
                continue
            level = int(row["LEVEL"])
            flags = {}
            ok = True
            for col in (["ALONE"] if kind == RACE else []) + ["DETAILED_ONLY", "COARSE_ONLY"]:
                # Level-0 rows carry Null flags (SPEC §4); ALONE is needed at every level.
                allow_null = level == 0 and col != "ALONE"
                try:
                    flags[col] = _flag(row[col], level, allow_null)
                except ValueError:
                    log.add(fname, line, col, row[col], "True or False" + (" (or Null on level-0 rows)" if level == 0 else ""))
                    ok = False
            if not ok:
                continue
            if flags["DETAILED_ONLY"] and flags["COARSE_ONLY"]:
                log.add(fname, line, "COARSE_ONLY", row["COARSE_ONLY"],
                        "not True when DETAILED_ONLY is True (the iteration would be tabulated nowhere)")
                continue
            iterations[code] = Iteration(
                code=code,
                name=row["ITERATION_NAME"],
                level=level,
                kind=kind,
                alone=flags.get("ALONE") if kind == RACE else None,
                detailed_only=bool(flags["DETAILED_ONLY"]),
                coarse_only=bool(flags["COARSE_ONLY"]),
            )
            where[code] = f"{fname} line {line}"

    codes: dict[str, str] = {}
    for line, row in read_pipe_table(params_dir / CODES_FILE, CODES_HEADER, log):
        code = row["RACE_ETH_CODE"]
        if not code or " " in code:
            log.add(CODES_FILE, line, "RACE_ETH_CODE", code, "a non-empty code without spaces")
        elif code == "Null":
            log.add(CODES_FILE, line, "RACE_ETH_CODE", code, "a code other than the word Null (it marks a missing race)")
        elif code in codes:
            log.add(CODES_FILE, line, "RACE_ETH_CODE", code, "a unique code (it appears twice)")
        else:
            codes[code] = row["RACE_ETH_NAME"]

    mapping: dict[str, list[str]] = defaultdict(list)
    for line, row in read_pipe_table(params_dir / CODE_TO_ITERATION_FILE, CODE_TO_ITERATION_HEADER, log):
        it_code, code = row["ITERATION_CODE"], row["RACE_ETH_CODE"]
        if it_code not in iterations:
            log.add(CODE_TO_ITERATION_FILE, line, "ITERATION_CODE", it_code,
                    f"an iteration code defined in {RACE_ITERATIONS_FILE} or {ETHNICITY_ITERATIONS_FILE}")
            continue
        if code not in codes:
            log.add(CODE_TO_ITERATION_FILE, line, "RACE_ETH_CODE", code, f"a code listed in {CODES_FILE}")
            continue
        if it_code not in mapping[code]:
            mapping[code].append(it_code)

    specs = Specs(iterations=iterations, codes=codes,
                  code_to_iterations={c: tuple(v) for c, v in mapping.items()})
    if own_log:
        log.raise_if_any()
    return specs
