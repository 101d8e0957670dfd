"""The four SafeTab-P spec files of PARAMS_DIR (SPEC section 4) and what follows from them.

`load_specs` reads and checks the files (the rules of SPEC §4 and of production's input
validation, ``safetab_utils/input_validation.py``); `Specs` answers which characteristic
iterations each geography level tabulates and the stability S of each population group
level (SPEC section 1: S = h_r * max(2, r) + h_e, h_r and h_e counted within the
tabulation class of the level's geography, as production's
``IterationManager.create_race_eth_codes_to_iterations`` does).
"""

from __future__ import annotations

import re
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

#: Tabulation classes (production's REGION_GRANULARITY_MAPPING): USA, STATE and PR-STATE
#: tabulate the iterations that are not COARSE_ONLY ("detailed"), every other geography
#: those that are not DETAILED_ONLY ("coarse").
STATE_CLASS, SUBSTATE_CLASS = "state", "substate"
TABULATION_CLASSES = (STATE_CLASS, SUBSTATE_CLASS)
_CLASS_NAMES = {STATE_CLASS: "national and state", SUBSTATE_CLASS: "sub-state"}

_ITERATION_CODE = re.compile(r"[0-9]{4}")
_RACE_ETH_CODE = re.compile(r"[1-9][0-9]{3}")


def tabulation_class(geo: str) -> str:
    """STATE_CLASS for USA, STATE and PR-STATE; SUBSTATE_CLASS for the others (SPEC §1)."""
    return STATE_CLASS if geo in STATE_OR_ABOVE else SUBSTATE_CLASS


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
        return self.in_class(tabulation_class(geo))

    def in_class(self, cls: str) -> bool:
        """Whether geographies of tabulation class `cls` tabulate this iteration."""
        if self.level not in ITERATION_LEVELS:
            return False
        return not self.coarse_only if cls == STATE_CLASS else not self.detailed_only


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
    @cached_property
    def _class_slices(self) -> dict[tuple[str, int, bool | None, str], dict[str, frozenset[str]]]:
        """(kind, level, alone, tabulation class) -> code -> the iterations of that slice
        the code maps to, restricted to those the class tabulates."""
        out: dict[tuple[str, int, bool | None, str], dict[str, frozenset[str]]] = {}
        in_class = {cls: frozenset(c for c, it in self.iterations.items() if it.in_class(cls))
                    for cls in TABULATION_CLASSES}
        for (kind, level, alone), by_code in self._slices.items():
            for cls in TABULATION_CLASSES:
                keep = in_class[cls]
                out[(kind, level, alone, cls)] = {code: its & keep for code, its in by_code.items()}
        return out

    def _height(self, kind: str, level: int, alones: tuple[bool | None, ...], geo: str) -> int:
        cls = tabulation_class(geo)
        return max((len(its) for alone in alones
                    for its in self._class_slices.get((kind, level, alone, cls), {}).values()), default=0)

    def h_r(self, level: int, geo: str) -> int:
        """The most iterations one race code maps to within one (level, ALONE) slice of
        the iterations `geo`'s tabulation class tabulates (SPEC §1).

        Production counts the ALONE=True slice only (it assumes the ALONE=False slice has
        the same shape); the larger of the two is taken here, which is the same on every
        spec production accepts and never understates S otherwise.
        """
        return self._height(RACE, level, (True, False), geo)

    def h_e(self, level: int, geo: str) -> int:
        """The most iterations one ethnicity code maps to within the level, among those
        `geo`'s tabulation class tabulates (SPEC §1)."""
        return self._height(ETHNICITY, level, (None,), geo)

    def stability(self, level: int, max_race_codes: int, geo: str) -> int:
        """S = h_r * max(2, r) + h_e of population group level (geo, level) (SPEC §1),
        at least 1."""
        return max(1, _stability(max_race_codes, self.h_r(level, geo), self.h_e(level, geo)))


# ---------------------------------------------------------------------- loading
_FLAGS = {"True": True, "False": False}


def load_specs(params_dir: str | Path, log: ProblemLog | None = None) -> Specs:
    """Read and check the four spec files of `params_dir` (SPEC §4).

    The rules, each as production's input validation has them: ITERATION_CODE four
    digits, unique across both iteration files (race and ethnicity codes disjoint);
    LEVEL 0, 1 or 2; ALONE True/False; DETAILED_ONLY and COARSE_ONLY Null exactly on
    level-0 rows and True/False elsewhere, never both True; RACE_ETH_CODE [1-9] and three
    digits, unique; every mapping row names a known iteration and code, once; and no
    code maps to two iterations of one (level, ALONE, tabulation class) slice
    (production's "hierarchy height" check, which makes h_r = h_e = 1).

    With a `log`, problems are added to it and a best-effort Specs is returned;
    without one, an InputError is raised if there is any problem.
    """
    params_dir = Path(params_dir)
    own_log = log is None
    log = log if log is not None else ProblemLog()
    iterations: dict[str, Iteration] = {}
    where: dict[str, str] = {}
    # Codes of rows that have a problem of their own: mapping rows naming them are not
    # reported again (one bad flag must not make every mapping row of its code an error).
    rejected: set[str] = set()
    rejected_codes: set[str] = set()
    # Whether each file could be read at all: when one could not (missing, unreadable,
    # wrong header), mapping rows are not checked against it (every row would be an error).
    read_whole = True

    for fname, header, kind in (
        (RACE_ITERATIONS_FILE, RACE_ITERATION_HEADER, RACE),
        (ETHNICITY_ITERATIONS_FILE, ETHNICITY_ITERATION_HEADER, ETHNICITY),
    ):
        rows = read_pipe_table(params_dir / fname, header, log)
        read_whole &= rows is not None
        for line, row in rows or []:
            code = row["ITERATION_CODE"]
            if not _ITERATION_CODE.fullmatch(code):
                log.add(fname, line, "ITERATION_CODE", code, "an iteration code of four digits (e.g. 3001)")
                rejected.add(code.strip())
                continue
            if code in iterations:
                log.add(fname, line, "ITERATION_CODE", code, f"a unique iteration code (already defined in {where[code]})")
                continue
            if row["LEVEL"] not in ("0", "1", "2"):
                log.add(fname, line, "LEVEL", row["LEVEL"], "0, 1 or 2")
                rejected.add(code)
                continue
            level = int(row["LEVEL"])
            flags: dict[str, bool] = {}
            ok = True
            if kind == RACE:
                if row["ALONE"] in _FLAGS:
                    flags["ALONE"] = _FLAGS[row["ALONE"]]
                else:
                    log.add(fname, line, "ALONE", row["ALONE"], "True or False")
                    ok = False
            for col in ("DETAILED_ONLY", "COARSE_ONLY"):
                # LEVEL 0 <=> Null (production: _check_for_invalid_iteration_metadata).
                if level == 0:
                    if row[col] != "Null":
                        log.add(fname, line, col, row[col], "Null (level-0 rows carry Null flags)")
                        ok = False
                elif row[col] in _FLAGS:
                    flags[col] = _FLAGS[row[col]]
                else:
                    log.add(fname, line, col, row[col], f"True or False (Null only on level-0 rows; LEVEL is {level})")
                    ok = False
            if ok and flags.get("DETAILED_ONLY") and flags.get("COARSE_ONLY"):
                log.add(fname, line, "COARSE_ONLY", row["COARSE_ONLY"],
                        "not True when DETAILED_ONLY is True (the iteration would be tabulated nowhere)")
                ok = False
            if not ok:
                rejected.add(code)
                continue
            iterations[code] = Iteration(
                code=code,
                name=row["ITERATION_NAME"].strip(),  # the 2020 files end some names with a space
                level=level,
                kind=kind,
                alone=flags.get("ALONE") if kind == RACE else None,
                detailed_only=flags.get("DETAILED_ONLY", False),
                coarse_only=flags.get("COARSE_ONLY", False),
            )
            where[code] = f"{fname} line {line}"

    codes: dict[str, str] = {}
    code_rows = read_pipe_table(params_dir / CODES_FILE, CODES_HEADER, log)
    if code_rows == []:
        log.add(CODES_FILE, None, None, None, "at least one race or ethnicity code (the file has only its header)")
        code_rows = None
    for line, row in code_rows or []:
        code = row["RACE_ETH_CODE"]
        if not _RACE_ETH_CODE.fullmatch(code):
            log.add(CODES_FILE, line, "RACE_ETH_CODE", code, "a code of four digits not starting with 0 (e.g. 1010)")
            rejected_codes.add(code.strip())
        elif code in codes:
            log.add(CODES_FILE, line, "RACE_ETH_CODE", code, "a unique code (it appears twice)")
        else:
            codes[code] = row["RACE_ETH_NAME"].strip()

    mapping: dict[str, list[str]] = defaultdict(list)
    map_line: dict[tuple[str, str], int] = {}
    for line, row in read_pipe_table(params_dir / CODE_TO_ITERATION_FILE, CODE_TO_ITERATION_HEADER, log) or []:
        it_code, code = row["ITERATION_CODE"], row["RACE_ETH_CODE"]
        if it_code in rejected:
            continue
        if it_code not in iterations:
            if read_whole:
                log.add(CODE_TO_ITERATION_FILE, line, "ITERATION_CODE", it_code,
                        f"an iteration code defined in {RACE_ITERATIONS_FILE} or {ETHNICITY_ITERATIONS_FILE}")
            continue
        if code not in codes:
            if code_rows is not None and code not in rejected_codes:
                log.add(CODE_TO_ITERATION_FILE, line, "RACE_ETH_CODE", code, f"a code listed in {CODES_FILE}")
            continue
        if (code, it_code) in map_line:
            if iterations[it_code].level in ITERATION_LEVELS:  # production counts it twice
                log.add(CODE_TO_ITERATION_FILE, line, "RACE_ETH_CODE", code,
                        f"each (ITERATION_CODE, RACE_ETH_CODE) pair once ({it_code}|{code} is already on line "
                        f"{map_line[(code, it_code)]})")
            continue
        map_line[(code, it_code)] = line
        mapping[code].append(it_code)

    specs = Specs(iterations=iterations, codes=codes,
                  code_to_iterations={c: tuple(v) for c, v in mapping.items()})
    _check_hierarchy_height(specs, map_line, log)
    if own_log:
        log.raise_if_any()
    return specs


def _check_hierarchy_height(specs: Specs, map_line: dict[tuple[str, str], int], log: ProblemLog) -> None:
    """Production's `_check_iteration_hierarchy_height`: within one (kind, level, ALONE,
    tabulation class) slice a code maps to at most one iteration. One problem per code and
    slice, on the line of its second mapping row."""
    for (kind, level, alone, cls), by_code in specs._class_slices.items():
        for code, its in sorted(by_code.items()):
            if len(its) < 2:
                continue
            lines = sorted(map_line[(code, it)] for it in its)
            slice_ = f"LEVEL={level}" + (f", ALONE={alone}" if kind == RACE else "")
            log.add(CODE_TO_ITERATION_FILE, lines[1], "RACE_ETH_CODE", code,
                    f"at most one iteration per {kind} code among those labelled {slice_} and tabulated at the "
                    f"{_CLASS_NAMES[cls]} level (found {', '.join(sorted(its))}; SafeTab-P counts each code "
                    f"once per such slice: stability S = h_r max(2, r) + h_e with h_r = h_e = 1)")
