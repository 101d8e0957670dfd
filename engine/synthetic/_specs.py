"""The project's own (synthetic) spec files, and the code model `engine.synthetic.nation` draws from.

`write_synthetic_specs` writes the four spec files of SPEC section 4 shaped like the
2020 ones: major races at level 0 (never tabulated), about 20 Regional (level 1) and
about 270 Detailed (level 2) race groups, each with an "alone" (ALONE=True) and an
"alone or in any combination" (ALONE=False) iteration, about a quarter of the detailed
ones DETAILED_ONLY, one COARSE_ONLY "not specified" group per major race; ethnicity
iterations at levels 0/1/2. Every race code maps to exactly one iteration per
(level, ALONE) slice and every ethnicity code to at most one per level, so
h_r = h_e = 1 and S = 9 with max_race_codes = 8, like 2020.

`code_model` reads any spec files (the synthetic ones or the real 2020 ones) into what
the person generator needs: the race codes it may draw with their major race, the
Hispanic ethnicity codes and the not-Hispanic code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.inputs.specs import (
    CODE_TO_ITERATION_FILE,
    CODES_FILE,
    ETHNICITY_ITERATIONS_FILE,
    RACE_ITERATIONS_FILE,
    Specs,
)

#: Major races in CENRACE order, with the first digit of their synthetic race codes
#: and their Regional groups: (name, number of Detailed groups).
MAJOR_RACES: tuple[tuple[str, int, tuple[tuple[str, int], ...]], ...] = (
    ("White", 1, (("European", 40), ("Middle Eastern or North African", 15), ("Other White", 3))),
    (
        "Black or African American",
        3,
        (("African American", 3), ("Sub-Saharan African", 30), ("Caribbean", 12)),
    ),
    (
        "American Indian and Alaska Native",
        5,
        (
            ("American Indian", 70),
            ("Alaska Native", 20),
            ("Canadian Indian", 5),
            ("Central American Indian", 8),
            ("South American Indian", 6),
        ),
    ),
    (
        "Asian",
        4,
        (("East Asian", 8), ("South Asian", 10), ("Southeast Asian", 10), ("Central Asian", 6)),
    ),
    (
        "Native Hawaiian and Other Pacific Islander",
        7,
        (("Polynesian", 6), ("Micronesian", 6), ("Melanesian", 4)),
    ),
    ("Some Other Race", 8, (("Other race write-in", 5),)),
)
#: Regional groups that are DETAILED_ONLY (TotalOnly at USA/STATE, absent below).
DETAILED_ONLY_REGIONALS = frozenset({"South American Indian"})
#: Share of Detailed race groups whose alone iteration is DETAILED_ONLY (the AOIC one
#: follows with probability 0.85): about a quarter of all Detailed iterations, like 2020.
DETAILED_ONLY_SHARE = 0.3

#: Hispanic origin: regional group -> detailed groups (name, DETAILED_ONLY).
HISPANIC_GROUPS: tuple[tuple[str, tuple[tuple[str, bool], ...]], ...] = (
    (
        "Mexican, Mexican American, or Chicano",
        (("Mexican", False), ("Mexican American", False), ("Chicano(a)", False)),
    ),
    (
        "Central American",
        (
            ("Guatemalan", False),
            ("Honduran", False),
            ("Salvadoran", False),
            ("Nicaraguan", False),
            ("Other Central American", False),
        ),
    ),
    (
        "South American",
        (
            ("Colombian", False),
            ("Venezuelan", False),
            ("Ecuadorian", False),
            ("Peruvian", False),
            ("Argentinean", False),
            ("Other South American", False),
        ),
    ),
    ("Caribbean Hispanic", (("Puerto Rican", False), ("Cuban", False), ("Dominican", False))),
    (
        "Other Hispanic, Latino, or Spanish",
        (
            ("Spaniard", False),
            ("Spanish American", False),
            ("Hispanic", True),
            ("Latino(a)", True),
            ("Afro Latino(a)", True),
        ),
    ),
)
NOT_HISPANIC_CODE = "2000"

#: CENRACE categories (index = position in MAJOR_RACES) recognised in iteration names.
_MAJOR_KEYWORDS = (
    ("white",),
    ("black",),
    ("american indian", "alaska native"),
    ("asian",),
    ("hawaiian", "pacific"),
    ("some other race",),
)
SOR = 5
AIAN = 2


def _write(path: Path, header: str, rows: list[str]) -> None:
    path.write_text("\n".join([header] + rows) + "\n", encoding="utf-8")


def write_synthetic_specs(params_dir: str | Path, seed: int = 0) -> None:
    """Write the project's four synthetic spec files into `params_dir` (created if needed).

    Deterministic for a given seed (the seed only decides which groups are
    DETAILED_ONLY and how many codes each group has).
    """
    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(7,)))
    params_dir = Path(params_dir)
    params_dir.mkdir(parents=True, exist_ok=True)
    race_rows: list[str] = []
    codes_rows: list[str] = []
    mapping: list[tuple[str, str]] = []
    next_it = [1001]

    def new_it() -> str:
        code = f"{next_it[0]:04d}"
        next_it[0] += 1
        return code

    def b(x: bool) -> str:
        return "True" if x else "False"

    for major, digit, regionals in MAJOR_RACES:
        # Codes of this major race: digit000 is the checkbox code (major race only,
        # mapped to the first Regional and its "not specified" group); then each
        # Detailed group has 1-3 codes; the last group is "not specified".
        groups = []  # (regional idx, label, codes, detailed_only alone, aoic, coarse_only)
        next_code = digit * 1000 + 10
        for r, (reg, n_det) in enumerate(regionals):
            for k in range(1, n_det + 1):
                n_codes = int(rng.choice([1, 2, 3], p=[0.65, 0.25, 0.10]))
                label = f"{reg} {k:02d}"
                codes = []
                for j in range(n_codes):
                    codes.append(
                        (f"{next_code:04d}", label + ("" if n_codes == 1 else " " + "abc"[j]))
                    )
                    next_code += 1
                do_alone = reg in DETAILED_ONLY_REGIONALS or bool(
                    rng.random() < DETAILED_ONLY_SHARE
                )
                do_aoic = reg in DETAILED_ONLY_REGIONALS or (do_alone and bool(rng.random() < 0.85))
                groups.append((r, label, codes, do_alone, do_aoic, False))
            next_code = (next_code // 10 + 1) * 10  # leave a gap between regionals
        not_spec = [
            (f"{digit * 1000:04d}", f"{major} (checkbox)"),
            (f"{digit * 1000 + 999:04d}", f"{major}, not specified"),
        ]
        groups.append((0, f"Other {major}, not specified", not_spec, False, False, True))
        for code, name in [c for g in groups for c in g[2]]:
            codes_rows.append(f"{code}|{name}")

        for alone in (True, False):
            suffix = " alone" if alone else " alone or in any combination"
            top = new_it()
            top_name = major + (
                " alone" if alone else " alone or in combination with one or more other races"
            )
            race_rows.append(f"{top}|{top_name}|0|{b(alone)}|Null|Null")
            for r, (reg, _) in enumerate(regionals):
                reg_it = new_it()
                reg_do = reg in DETAILED_ONLY_REGIONALS
                race_rows.append(f"{reg_it}|{reg}{suffix}|1|{b(alone)}|{b(reg_do)}|False")
                for gr, label, codes, do_alone, do_aoic, coarse in groups:
                    if gr != r:
                        continue
                    det_it = new_it()
                    do = do_alone if alone else do_aoic
                    race_rows.append(f"{det_it}|{label}{suffix}|2|{b(alone)}|{b(do)}|{b(coarse)}")
                    for code, _ in codes:
                        mapping += [(top, code), (reg_it, code), (det_it, code)]

    eth_rows: list[str] = []
    nh, hi = new_it(), new_it()
    eth_rows.append(f"{nh}|Not Hispanic or Latino (of any race)|0|Null|Null")
    eth_rows.append(f"{hi}|Hispanic or Latino (of any race)|0|Null|Null")
    codes_rows.append(f"{NOT_HISPANIC_CODE}|Not Hispanic or Latino")
    mapping.append((nh, NOT_HISPANIC_CODE))
    next_code = 2010
    for reg, dets in HISPANIC_GROUPS:
        reg_it = new_it()
        eth_rows.append(f"{reg_it}|{reg}|1|False|False")
        for name, do in dets:
            det_it = new_it()
            eth_rows.append(f"{det_it}|{name}|2|{b(do)}|False")
            n_codes = int(rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2]))
            variants = ["", " (write-in)", " (edit generated)"][:n_codes]
            for v in variants:
                code = f"{next_code:04d}"
                next_code += 1
                codes_rows.append(f"{code}|{name}{v}")
                mapping += [(hi, code), (reg_it, code), (det_it, code)]
            next_code = (next_code // 10 + 1) * 10

    _write(
        params_dir / RACE_ITERATIONS_FILE,
        "ITERATION_CODE|ITERATION_NAME|LEVEL|ALONE|DETAILED_ONLY|COARSE_ONLY",
        race_rows,
    )
    _write(
        params_dir / ETHNICITY_ITERATIONS_FILE,
        "ITERATION_CODE|ITERATION_NAME|LEVEL|DETAILED_ONLY|COARSE_ONLY",
        eth_rows,
    )
    codes_rows.sort(key=lambda row: row.split("|", 1)[0])
    _write(params_dir / CODES_FILE, "RACE_ETH_CODE|RACE_ETH_NAME", codes_rows)
    _write(
        params_dir / CODE_TO_ITERATION_FILE,
        "ITERATION_CODE|RACE_ETH_CODE",
        [f"{i}|{c}" for i, c in mapping],
    )


# ---------------------------------------------------------------------------------
@dataclass
class CodeModel:
    """What the person generator draws from, derived from any spec files.

    race_codes: codes mapping to a Regional or Detailed race iteration (drawable in
    QRACE1..8); race_major: their CENRACE major race (0 White .. 5 Some Other Race);
    race_small: True for codes whose Detailed groups are all DETAILED_ONLY (they get
    the smallest weights); hisp_codes: codes mapping to an ethnicity iteration other
    than the not-Hispanic one; hisp_small likewise; nh_code: the QSPAN of not-Hispanic
    persons; hisp_as_race[i]: index in race_codes of hisp_codes[i], or -1.
    """

    race_codes: list[str]
    race_major: np.ndarray
    race_small: np.ndarray
    hisp_codes: list[str]
    hisp_small: np.ndarray
    nh_code: str
    hisp_as_race: np.ndarray


def _major_of_name(name: str) -> int | None:
    low = name.lower()
    for i, keys in enumerate(_MAJOR_KEYWORDS):
        if any(k in low for k in keys):
            return i
    return None


def code_model(specs: Specs) -> CodeModel:
    """Read the drawable codes out of parsed spec files (synthetic or real).

    A race code's major race is the level-0 ALONE=True race iteration it maps to that
    has the most codes (2020: "White alone" rather than "Other European alone (Sub-state
    ...)"), recognised by name (White, Black, American Indian/Alaska Native, Asian,
    Hawaiian/Pacific, Some Other Race); codes without one count as Some Other Race.
    The not-Hispanic code is the first code (in file order) of the level-0 ethnicity
    iteration whose name starts with "Not" that maps to no other ethnicity iteration.
    """
    its = specs.iterations
    size: dict[str, int] = {}
    for code, it_codes in specs.code_to_iterations.items():
        for i in it_codes:
            size[i] = size.get(i, 0) + 1

    not_hisp = [
        i.code
        for i in its.values()
        if i.kind == "ethnicity" and i.level == 0 and i.name.strip().lower().startswith("not")
    ]
    race_codes, race_major, race_small = [], [], []
    hisp_codes, hisp_small = [], []
    nh_candidates = []
    for code in specs.codes:  # file order
        it_codes = specs.code_to_iterations.get(code, ())
        race_tab = [its[i] for i in it_codes if its[i].kind == "race" and its[i].level in (1, 2)]
        eth = [its[i] for i in it_codes if its[i].kind == "ethnicity"]
        if race_tab:
            tops = [
                its[i]
                for i in it_codes
                if its[i].kind == "race" and its[i].level == 0 and its[i].alone
            ]
            major = None
            if tops:
                top = max(tops, key=lambda t: size.get(t.code, 0))
                major = _major_of_name(top.name)
            race_codes.append(code)
            race_major.append(SOR if major is None else major)
            det = [i for i in race_tab if i.level == 2 and i.alone]
            race_small.append(bool(det) and all(i.detailed_only for i in det))
        if eth:
            if any(i.code in not_hisp for i in eth):
                if all(i.code in not_hisp for i in eth):
                    nh_candidates.append(code)
            else:
                hisp_codes.append(code)
                det = [i for i in eth if i.level == 2]
                hisp_small.append(bool(det) and all(i.detailed_only for i in det))
    if not race_codes:
        raise ValueError("the spec files map no race code to a Regional or Detailed race iteration")
    if not hisp_codes:
        raise ValueError("the spec files map no code to a Hispanic ethnicity iteration")
    if not nh_candidates:
        raise ValueError(
            "the spec files have no not-Hispanic code: a code of the level-0 ethnicity iteration "
            'whose name starts with "Not" (and of no other ethnicity iteration)'
        )
    index = {c: i for i, c in enumerate(race_codes)}
    return CodeModel(
        race_codes=race_codes,
        race_major=np.asarray(race_major, dtype=np.int64),
        race_small=np.asarray(race_small, dtype=bool),
        hisp_codes=hisp_codes,
        hisp_small=np.asarray(hisp_small, dtype=bool),
        nh_code=nh_candidates[0],
        hisp_as_race=np.asarray([index.get(c, -1) for c in hisp_codes], dtype=np.int64),
    )
