"""The one configuration model of SafeTab-P parameters (SPEC section 4, `config.json`).

Used by the app, the engine and the command line alike. It is immutable: edits make
copies (`SafeTabConfig.updated`, `with_rho`, `with_thresholds`).

It is as strict as production (``safetab_utils/config_validation.py`` and
``regions.validate_state_filter_us`` of the Census SafeTab-P code) and stricter where
docs/production-differences.md says so:

* every SafeTab-P key is required, except ``zero_suppression_chance``, which production
  treats as optional (absent: no suppression) and which stays absent when written back;
* an unknown key is an error naming the closest known key;
* JSON types are strict: true/false for switches, JSON numbers for budgets (never a
  string or a boolean), JSON integers for ``max_race_codes`` and thresholds (8.0 is not
  an integer), strings for state codes;
* at least one of ``run_us`` / ``run_pr``; with ``run_us``, a non-empty
  ``state_filter_us`` of US state FIPS codes without duplicates; thresholds for every
  (geography, level) of the runs that are on, budget-0 levels included (as production);
* every run that is on tabulates something (a budget > 0);
* values lie in documented sane ranges (``BUDGET_RANGE``, ``GAMMA_RANGE``,
  ``THRESHOLD_LIMIT``), so that no computation on a valid configuration can hang or
  overflow: the largest noise scale a valid configuration reaches is
  ``MAX_NOISE_SCALE`` (README, "Configuration ranges").

Validation problems are reported in plain words through `ConfigError`, one message
per problem, each naming the key, the value (cut to a short prefix) and what was
expected. ``reader: "cef"`` is a valid production value and is kept; the engine,
which reads only DATA_DIR's files, refuses to run with it (`engine.inputs.validate`).
"""

from __future__ import annotations

import difflib
import json
import math
import os
import stat
from collections import Counter
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Literal, Union

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from calculators.levels import (
    GEO_LEVELS_PR,
    GEO_LEVELS_US,
    POPULATION_GROUP_LEVELS,
    US_STATE_CODES,
    PopulationGroupLevel,
)

#: Non-zero level budgets (rho, or epsilon for pure DP) must lie in this range; 0 means
#: "not tabulated". At 1e-6 a stage-2 cell already has a MOE of about 4,400 persons
#: (S = 9, gamma = 0.1; 2020 used 0.008 and up); the bounds keep every noise scale where
#: the calculators are exact to the unit and the samplers fit 64 bits.
BUDGET_RANGE: tuple[float, float] = (1e-6, 1e6)
#: gamma (``privacy_budget_p_stage_1_fraction``) must lie in this closed range (and
#: 1 - gamma too, since the range is symmetric about 1/2).
GAMMA_RANGE: tuple[float, float] = (1e-4, 1 - 1e-4)
#: Thresholds must lie in [-THRESHOLD_LIMIT, THRESHOLD_LIMIT] (3,000 times the US population).
THRESHOLD_LIMIT = 10**12
#: The largest stability S that validated spec files give: h_r = h_e = 1 per tabulation
#: class (production's hierarchy check, `engine.inputs.specs`) and r <= 8: 1 * 8 + 1.
MAX_STABILITY = 9
#: The largest noise scale a valid configuration reaches, S / (share * budget) with the
#: smallest budget and share: 9 / (1e-6 * 1e-4) = 9e10 (the pure-DP scale; the zCDP
#: sigma^2 = S / (2 share rho) is half of it). The calculators and the exact samplers
#: accept more (`discrete_gaussian.MAX_SIGMA2`, `geometric.MAX_SCALE`).
MAX_NOISE_SCALE = MAX_STABILITY / (BUDGET_RANGE[0] * GAMMA_RANGE[0])
#: Echoed values are cut to this many characters in messages.
ECHO_LIMIT = 60
#: A configuration with more keys than this is refused before it is checked key by key
#: (config.json has 31; a hostile text may have 20,000, each a message to compute).
MAX_KEYS = 100
#: Problems listed in a ConfigError before the others are only counted.
SHOWN_PROBLEMS = 20

#: A JSON number (int or float, never a boolean or a string), kept as written.
Number = Union[int, float]


def shorten(text: str, limit: int = ECHO_LIMIT) -> str:
    """`text` cut to `limit` characters, saying how long it was (a 100 MB field must
    not make a 100 MB message)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def echo(value: Any, limit: int = ECHO_LIMIT) -> str:
    """A config value as a message shows it: as JSON (true, "Yes", 8.0), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return shorten(text, limit)


def reads_exactly(text: str, x: float) -> bool:
    """Whether the decimal `text` is the number `x` it reads as (its shortest text names
    the same number: "0.10" is 0.1), not a rounding of it ("8.0000000000000001" reads
    as 8.0, "1e-400" as 0.0)."""
    try:
        return Decimal(text) == Decimal(repr(x))
    except InvalidOperation:  # float() read it, so Decimal can; kept safe all the same
        return False


class _Literal(float):
    """A JSON number with a point or exponent, with the text it was written as (only
    while `loads_unique` reads it)."""

    text: str

    def __new__(cls, text: str) -> "_Literal":
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


class _LongInt(str):
    """The text of a JSON whole number too long for Python's int() (more than 4,300
    digits; only while `loads_unique` reads it)."""


#: Python's limit of digits for int() from text (sys.get_int_max_str_digits()).
_INT_DIGITS = 4300


def _parse_int(text: str) -> int | _LongInt:
    return _LongInt(text) if len(text.lstrip("-")) > _INT_DIGITS else int(text)


def loads_unique(text: str | bytes, **kwargs: Any) -> tuple[Any, list[str]]:
    """`json.loads(text, **kwargs)` and what it would change silently, in plain words:
    a key that appears more than once in one object (json.loads keeps its last value),
    and a number a float cannot hold as written ("1e-400" would be 0.0, a budget
    switched off; "2.1340000000000000001" would be 2.134), named by its key. Raises what
    json.loads raises."""
    problems: list[str] = []
    dups: list[str] = []

    def plain(key: str, v: Any) -> Any:
        if isinstance(v, _Literal):
            x = float(v)
            if not math.isfinite(x):  # 1e999 (the word Infinity is parse_constant's, for the checks to name)
                problems.append(f"{echo(key)}: {shorten(v.text)} is beyond the largest number a value can "
                                f"hold (about 1.8e308) and would be read as {x!r}")
            elif not reads_exactly(v.text, x):
                problems.append(f"{echo(key)}: {shorten(v.text)} cannot be used exactly (a number here holds "
                                f"about 17 significant digits) and would be read as {x!r}")
            return x
        if isinstance(v, _LongInt):
            problems.append(f"{echo(key)}: {shorten(str(v))} is a whole number of {len(v.lstrip('-')):,} digits; "
                            f"at most {_INT_DIGITS:,} digits are read")
            return str(v)
        if isinstance(v, list):
            return [plain(key, item) for item in v]
        return v

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for k, v in items:
            if k in seen:
                dups.append(k)
            seen[k] = plain(k, v)
        return seen

    obj = json.loads(text, object_pairs_hook=pairs, parse_float=_Literal, parse_int=_parse_int, **kwargs)
    obj = plain("", obj)
    return obj, [f"the key {echo(k)} appears more than once" for k in dict.fromkeys(dups)] + problems


class ConfigError(ValueError):
    """Invalid configuration; `problems` holds one plain-words message per problem."""

    def __init__(self, problems: list[str], source: str | None = None):
        problems = list(problems)
        #: How many problems were found (`problems` lists the first SHOWN_PROBLEMS of them).
        self.total = len(problems)
        if len(problems) > SHOWN_PROBLEMS:  # a bounded message, whatever the input
            problems = problems[:SHOWN_PROBLEMS] + [f"... and {len(problems) - SHOWN_PROBLEMS:,} more problems"]
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(self.problems))


def _budget_keys() -> list[str]:
    return [lvl.budget_key for lvl in POPULATION_GROUP_LEVELS]


class SafeTabConfig(BaseModel):
    """Typed SafeTab-P `config.json` (SPEC §4; rules in the module docstring).

    Budgets are zCDP rho per population group level (epsilon when
    ``privacy_defn == "puredp"``); ``privacy_budget_p_stage_1_fraction`` is gamma.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_race_codes: int
    privacy_budget_p_level_1_usa: Number
    privacy_budget_p_level_2_usa: Number
    privacy_budget_p_level_1_state: Number
    privacy_budget_p_level_2_state: Number
    privacy_budget_p_level_1_county: Number
    privacy_budget_p_level_2_county: Number
    privacy_budget_p_level_1_tract: Number
    privacy_budget_p_level_2_tract: Number
    privacy_budget_p_level_1_place: Number
    privacy_budget_p_level_2_place: Number
    privacy_budget_p_level_1_aiannh: Number
    privacy_budget_p_level_2_aiannh: Number
    privacy_budget_p_level_1_pr_state: Number
    privacy_budget_p_level_2_pr_state: Number
    privacy_budget_p_level_1_pr_county: Number
    privacy_budget_p_level_2_pr_county: Number
    privacy_budget_p_level_1_pr_tract: Number
    privacy_budget_p_level_2_pr_tract: Number
    privacy_budget_p_level_1_pr_place: Number
    privacy_budget_p_level_2_pr_place: Number
    privacy_budget_p_stage_1_fraction: Number
    thresholds_p: dict[str, list[int]]
    #: Optional as in production: absent means no suppression (and stays absent).
    zero_suppression_chance: Number = 0.0
    allow_negative_counts: bool
    run_us: bool
    run_pr: bool
    reader: Literal["csv", "cef"]
    state_filter_us: list[str]
    privacy_defn: Literal["zcdp", "puredp"]

    # ------------------------------------------------------------------ validation
    @field_validator("max_race_codes")
    @classmethod
    def _check_max_race_codes(cls, v: int) -> int:
        if not 1 <= v <= 8:
            raise ValueError(f"must be a whole number from 1 to 8 (got {echo(v)})")
        return v

    @field_validator(*_budget_keys())
    @classmethod
    def _check_budget(cls, v: Number) -> Number:
        lo, hi = BUDGET_RANGE
        if not _finite(v) or not (v == 0 or lo <= v <= hi):
            raise ValueError(
                f"must be 0 (the level is not tabulated) or a number from {lo:g} to {hi:g} "
                f"(got {echo(v)})"
            )
        return v

    @field_validator("privacy_budget_p_stage_1_fraction")
    @classmethod
    def _check_gamma(cls, v: Number) -> Number:
        lo, hi = GAMMA_RANGE
        if not (_finite(v) and lo <= v <= hi):
            raise ValueError(
                f"must be strictly between 0 and 1, within [{lo:g}, 1 - {lo:g}] (got {echo(v)})"
            )
        return v

    @field_validator("zero_suppression_chance")
    @classmethod
    def _check_p(cls, v: Number) -> Number:
        if not (_finite(v) and 0 <= v < 1):
            raise ValueError(
                f"must be at least 0 and less than 1 (got {echo(v)}); 0 turns suppression off"
            )
        return v

    @field_validator("thresholds_p")
    @classmethod
    def _check_thresholds(cls, v: dict[str, list[int]]) -> dict[str, list[int]]:
        problems = []
        known = [lvl.key for lvl in POPULATION_GROUP_LEVELS]
        if len(v) > MAX_KEYS:  # bounded work and messages; a few misspelled keys are each named
            raise ValueError(f"has {len(v):,} keys; there are {len(known)} population group levels "
                             f"(at most {MAX_KEYS} keys are read)")
        for key, values in v.items():
            try:
                level = PopulationGroupLevel.parse(key)
            except ValueError:
                problems.append(f"{echo(key)} is not a population group level{_did_you_mean(key, known)}")
                continue
            if key != level.key:
                # SafeTab-P looks a level's thresholds up by this exact text: another spelling
                # would be ignored there, and beside the exact one it would be a second value
                problems.append(f"{echo(key)} must be written exactly {echo(level.key)}")
                continue
            if len(values) != 3:
                problems.append(f"{key} must list exactly 3 thresholds (got {len(values)})")
            elif any(b < a for a, b in zip(values, values[1:])):
                problems.append(f"{key} thresholds must be non-decreasing (got {echo(values)})")
            elif any(abs(t) > THRESHOLD_LIMIT for t in values):
                problems.append(f"{key} thresholds must lie within ±{THRESHOLD_LIMIT:,} (got {echo(values)})")
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @field_validator("state_filter_us")
    @classmethod
    def _check_states(cls, v: list[str]) -> list[str]:
        unknown = [s for s in v if s not in US_STATE_CODES]
        if unknown:
            raise ValueError(
                f"contains codes that are not US state FIPS codes (2 digits, 50 states and DC; "
                f"Puerto Rico runs with run_pr): {echo(unknown)}"
            )
        dups = sorted(s for s, n in Counter(v).items() if n > 1)
        if dups:
            raise ValueError(f"lists a state more than once: {echo(dups)}")
        return v

    @model_validator(mode="after")
    def _check_runs(self) -> "SafeTabConfig":
        problems = []
        if not (self.run_us or self.run_pr):
            problems.append("run_us and run_pr are both false: at least one of them must be true")
        if self.run_us and not self.state_filter_us:
            problems.append("state_filter_us is empty: a US run (run_us: true) needs at least one state")
        # As production: thresholds for every (geography, level) of the runs that are
        # on, levels with budget 0 included.
        missing = [lvl.key for lvl in POPULATION_GROUP_LEVELS if self.runs_geo(lvl) and lvl.key not in self.thresholds_p]
        if missing:
            problems.append("thresholds_p has no thresholds for " + ", ".join(missing)
                            + " (every geography and iteration level of the runs that are on needs them)")
        for on, name, geos in ((self.run_us, "run_us", GEO_LEVELS_US), (self.run_pr, "run_pr", GEO_LEVELS_PR)):
            levels = [lvl for lvl in POPULATION_GROUP_LEVELS if lvl.geo in geos]
            if on and all(self.rho(lvl) == 0 for lvl in levels):
                problems.append(f"{name} is true but every one of its level budgets is 0, so nothing would be "
                                f"tabulated: give a level a budget or set {name} to false")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    # ------------------------------------------------------------------ accessors
    @property
    def gamma(self) -> float:
        return float(self.privacy_budget_p_stage_1_fraction)

    def rho(self, level: PopulationGroupLevel) -> float:
        """Budget of one population group level (rho, or epsilon for pure DP)."""
        return float(getattr(self, level.budget_key))

    def rho_exact(self, level: PopulationGroupLevel) -> Fraction:
        """The budget as the exact decimal written in the file (0.159 -> 159/1000)."""
        return to_fraction(getattr(self, level.budget_key))

    @property
    def gamma_exact(self) -> Fraction:
        return to_fraction(self.privacy_budget_p_stage_1_fraction)

    @property
    def suppression_chance(self) -> float:
        """p of SPEC §1 suppression; 0 (off) when the optional key is absent."""
        return float(self.zero_suppression_chance)

    def thresholds(self, level: PopulationGroupLevel) -> tuple[int, int, int]:
        t = self.thresholds_p[level.key]
        return (int(t[0]), int(t[1]), int(t[2]))

    def runs_geo(self, level: PopulationGroupLevel) -> bool:
        """Whether the run (US or PR) that owns this level is switched on."""
        return self.run_pr if level.is_pr else self.run_us

    def tabulated_levels(self) -> list[PopulationGroupLevel]:
        """Levels with rho > 0 whose run is on, in config order."""
        return [lvl for lvl in POPULATION_GROUP_LEVELS if self.runs_geo(lvl) and self.rho(lvl) > 0]

    def budgets(self) -> dict[PopulationGroupLevel, float]:
        """rho of every level (including 0 and levels of runs that are off)."""
        return {lvl: self.rho(lvl) for lvl in POPULATION_GROUP_LEVELS}

    # ------------------------------------------------------------------ edits / IO
    def updated(self, **changes: Any) -> "SafeTabConfig":
        """A validated copy with some keys changed (raises ConfigError).

        numpy scalars are taken as the Python numbers they hold (the planner computes
        budgets with numpy); anything else must have the strict JSON type.
        """
        data = self.to_dict()
        data.update({k: _plain(v) for k, v in changes.items()})
        return SafeTabConfig.from_dict(data)

    def with_rho(self, level: PopulationGroupLevel, rho: float) -> "SafeTabConfig":
        return self.updated(**{level.budget_key: rho})

    def with_thresholds(self, level: PopulationGroupLevel, thresholds: Iterable[int]) -> "SafeTabConfig":
        tp = dict(self.thresholds_p)
        tp[level.key] = [int(x) for x in thresholds]
        return self.updated(thresholds_p=tp)

    def to_dict(self) -> dict[str, Any]:
        """Every key as plain JSON values, as read (an absent zero_suppression_chance
        stays absent; budgets keep their int / float type)."""
        data = self.model_dump(mode="json")
        if "zero_suppression_chance" not in self.model_fields_set:
            del data["zero_suppression_chance"]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def write(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "SafeTabConfig":
        if not isinstance(data, dict):
            raise ConfigError(
                [f"the configuration must be a JSON object of keys and values (got {type(data).__name__})"], source)
        if len(data) > MAX_KEYS:
            raise ConfigError([f"the configuration has {len(data):,} keys; a SafeTab-P config.json has "
                               f"{len(cls.model_fields)} (at most {MAX_KEYS} are read)"], source)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_plain_messages(exc, data), source) from None
        except RecursionError:
            raise ConfigError(["the configuration is nested too deeply to be a SafeTab-P config.json"],
                              source) from None

    @classmethod
    def from_json(cls, text: str, source: str | None = None) -> "SafeTabConfig":
        try:
            data, changed = loads_unique(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                [f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"], source
            ) from None
        except RecursionError:
            raise ConfigError(["the JSON is nested too deeply to be a SafeTab-P config.json"], source) from None
        except ValueError as exc:  # e.g. a number of more than 4,300 digits (Python's limit)
            raise ConfigError([f"not a SafeTab-P config.json: {shorten(str(exc), 120)}"], source) from None
        if changed:
            raise ConfigError(changed, source)
        return cls.from_dict(data, source)

    @classmethod
    def read(cls, path: str | Path) -> "SafeTabConfig":
        """Read a config.json; unreadable files, anything but a regular file (a FIFO would
        block the read forever, /dev/zero never end it), a file of more than
        MAX_FILE_BYTES and non-UTF-8 bytes are ConfigErrors."""
        path = Path(path)
        try:
            raw = read_regular_file(path, MAX_FILE_BYTES)
        except FileNotFoundError:
            # said as every other missing input file is (expected_file)
            raise ConfigError([expected_file(path)], str(path)) from None
        except OSError as exc:
            raise ConfigError([f"cannot read the file ({exc.strerror or exc})"], str(path)) from None
        except ValueError as exc:
            raise ConfigError([str(exc)], str(path)) from None
        return cls.from_json(decode_utf8(raw, str(path)), str(path))


#: A config.json larger than this is refused before it is read (one is about 2 kB; a
#: larger one is read and its problems named key by key).
MAX_FILE_BYTES = 16_000_000


def special_file(mode: int) -> str | None:
    """What a file of this st_mode is if it is not a regular file ("a FIFO (named
    pipe)", "a folder"...), else None."""
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def expected_file(path: str | Path, alternative: str = "") -> str:
    """Why an input file cannot be used, as a "found ...; expected ..." sentence (the
    problem's whole text): "found no file at PATH (nor ALT); expected this input file
    there", or, where PATH exists but is not a regular file (a FIFO, a device, a
    folder), what it is instead (it is not opened: a FIFO would block the read forever)."""
    try:
        what = special_file(os.stat(path).st_mode)
    except OSError as exc:
        what = None
        if os.path.islink(path):  # dangling, or a loop of links
            return (f"found a symbolic link at {path} that leads to no file ({exc.strerror or exc}); expected this "
                    "input file there")
    if what:
        return f"found {what} at {path} (it was not opened); expected a regular file"
    return f"found no file at {path}{alternative}; expected this input file there"


def expected_folder(path: str | Path, what: str) -> str:
    """Why a folder argument cannot be used, as a "found ...; expected ..." sentence:
    "found no folder at PATH; expected WHAT there", or what PATH is instead (a file, a
    FIFO...)."""
    try:
        found = special_file(os.stat(path).st_mode) or "a file"
    except OSError:
        return f"found no folder at {path}; expected {what} there"
    return f"found {found}, not a folder, at {path}; expected {what}"


def read_regular_file(path: str | Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (symbolic links followed).
    ValueError in plain words for anything else, found before a byte is read: a FIFO,
    a device, a socket or a folder (checked before it is opened, and again on the open
    file, which is opened without blocking), or a larger file. OSError if unreadable."""
    what = special_file(os.stat(path).st_mode)
    if what:
        raise ValueError(f"is {what}, not a regular file; nothing was read from it")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        what = special_file(st.st_mode)
        if what:
            raise ValueError(f"is {what}, not a regular file; nothing was read from it")
        if st.st_size > limit:
            raise ValueError(f"is {st.st_size:,} bytes long; at most {limit:,} are read")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"is more than {limit:,} bytes long; at most {limit:,} are read")
    return data


def decode_utf8(raw: bytes, source: str | None = None) -> str:
    """The text of a config file; ConfigError naming the line of the first byte that is
    not UTF-8 (SPEC §4: files are UTF-8)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError([f"line {line}: the byte 0x{raw[exc.start]:02x} is not UTF-8 text "
                           "(SPEC §4: files are UTF-8)"], source) from None


def to_fraction(x: float | int | str | Fraction) -> Fraction:
    """Exact rational of a decimal number as written (shortest repr of a float)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, float):
        return Fraction(repr(x))
    return Fraction(x)


def _finite(v: Number) -> bool:
    """math.isfinite, False also for JSON integers beyond the float range (10**400)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _plain(value: Any) -> Any:
    """numpy scalars -> the Python number they hold (bools stay bools)."""
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        return item()
    return value


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
    return f"; did you mean {json.dumps(close[0])}?" if close else ""


#: What each strict type error expects, in plain words.
_EXPECTED = {
    "int_type": "a whole number written without a decimal point (e.g. 8, not 8.0, \"8\" or true)",
    "float_type": "a number (e.g. 0.159; not a string or true/false)",
    "bool_type": "true or false (not a string or a number)",
    "string_type": "a string in double quotes",
    "list_type": "a list [ ... ]",
    "dict_type": "a mapping { ... }",
}


def _plain_messages(exc: ValidationError, data: dict[str, Any]) -> list[str]:
    """Turn pydantic errors into one plain sentence per problem."""
    known = list(SafeTabConfig.model_fields)
    out = []
    missing = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "missing" and len(e["loc"]) == 1]
    if len(missing) == 1:
        out.append(f"{missing[0]} is missing (every SafeTab-P key is required)")
    elif missing:
        out.append(f"{len(missing)} keys are missing (every SafeTab-P key is required): " + ", ".join(missing))
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        key = loc[0] if loc else "configuration"
        kind = err["type"]
        # A union (a Number: the budgets, p, gamma) reports one error per member: name the key once.
        if len(loc) > 1 and loc[-1] in ("int", "float"):
            loc = loc[:-1]
            kind = "float_type" if kind in ("int_type", "float_type") else kind
        where = ".".join(loc) if loc else "configuration"
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        got = echo(err.get("input"))
        if kind == "missing" and len(loc) == 1:
            continue  # all in one message above
        if kind == "missing":
            text = f"{where} is missing"
        elif kind == "extra_forbidden":
            text = f"{echo(key)} is not a SafeTab-P config.json key{_did_you_mean(key, known)}"
        elif kind in _EXPECTED:
            text = f"{where} must be {_EXPECTED[kind]} (got {got})"
        elif kind == "literal_error":
            text = f"{where} must be {err['ctx']['expected'].replace(chr(39), chr(34))} (got {got})"
        elif not loc:
            text = msg
        else:
            text = f"{where} {msg}" if not msg.startswith(where) else msg
        if text not in out:
            out.append(text)
    return out
