"""The one configuration model of SafeTab-P parameters (SPEC section 4, `config.json`).

Used by the app, the engine and the command line alike. It is immutable: edits make
copies (`SafeTabConfig.updated`). Reading and writing keep every key, including keys
this project does not know (they are carried along untouched).

Validation problems are reported in plain words through `ConfigError`, one message
per problem, each naming the key, the value and what was expected.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from calculators.levels import (
    POPULATION_GROUP_LEVELS,
    US_STATE_CODES,
    PopulationGroupLevel,
)


class ConfigError(ValueError):
    """Invalid configuration; `problems` holds one plain-words message per problem."""

    def __init__(self, problems: list[str], source: str | None = None):
        self.problems = list(problems)
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(self.problems))


class SafeTabConfig(BaseModel):
    """Typed SafeTab-P `config.json`.

    Budgets are zCDP rho per population group level (epsilon when
    ``privacy_defn == "puredp"``); ``privacy_budget_p_stage_1_fraction`` is gamma.
    """

    model_config = ConfigDict(extra="allow", frozen=True, validate_default=True)

    max_race_codes: int = 8
    privacy_budget_p_level_1_usa: float = 0.0
    privacy_budget_p_level_2_usa: float = 0.0
    privacy_budget_p_level_1_state: float = 0.0
    privacy_budget_p_level_2_state: float = 0.0
    privacy_budget_p_level_1_county: float = 0.0
    privacy_budget_p_level_2_county: float = 0.0
    privacy_budget_p_level_1_tract: float = 0.0
    privacy_budget_p_level_2_tract: float = 0.0
    privacy_budget_p_level_1_place: float = 0.0
    privacy_budget_p_level_2_place: float = 0.0
    privacy_budget_p_level_1_aiannh: float = 0.0
    privacy_budget_p_level_2_aiannh: float = 0.0
    privacy_budget_p_level_1_pr_state: float = 0.0
    privacy_budget_p_level_2_pr_state: float = 0.0
    privacy_budget_p_level_1_pr_county: float = 0.0
    privacy_budget_p_level_2_pr_county: float = 0.0
    privacy_budget_p_level_1_pr_tract: float = 0.0
    privacy_budget_p_level_2_pr_tract: float = 0.0
    privacy_budget_p_level_1_pr_place: float = 0.0
    privacy_budget_p_level_2_pr_place: float = 0.0
    privacy_budget_p_stage_1_fraction: float = 0.1
    thresholds_p: dict[str, list[int]] = Field(default_factory=dict)
    zero_suppression_chance: float = 0.0
    allow_negative_counts: bool = True
    run_us: bool = True
    run_pr: bool = True
    reader: Literal["csv", "cef"] = "csv"
    state_filter_us: list[str] = Field(default_factory=lambda: list(US_STATE_CODES))
    privacy_defn: Literal["zcdp", "puredp"] = "zcdp"

    # ------------------------------------------------------------------ validation
    @field_validator("max_race_codes")
    @classmethod
    def _check_max_race_codes(cls, v: int) -> int:
        if not 1 <= v <= 8:
            raise ValueError(f"must be a whole number from 1 to 8 (got {v})")
        return v

    @field_validator("*", mode="after")
    @classmethod
    def _check_budget(cls, v: Any, info: Any) -> Any:
        if info.field_name.startswith("privacy_budget_p_level_"):
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"must be a finite number >= 0 (got {v})")
        return v

    @field_validator("privacy_budget_p_stage_1_fraction")
    @classmethod
    def _check_gamma(cls, v: float) -> float:
        if not (0 < v < 1):
            raise ValueError(f"must be strictly between 0 and 1 (got {v})")
        return v

    @field_validator("zero_suppression_chance")
    @classmethod
    def _check_p(cls, v: float) -> float:
        if not (0 <= v < 1):
            raise ValueError(f"must be at least 0 and less than 1 (got {v}); 0 turns suppression off")
        return v

    @field_validator("thresholds_p")
    @classmethod
    def _check_thresholds(cls, v: dict[str, list[int]]) -> dict[str, list[int]]:
        problems = []
        for key, values in v.items():
            try:
                PopulationGroupLevel.parse(key)
            except ValueError as exc:
                problems.append(str(exc))
                continue
            if len(values) != 3:
                problems.append(f"{key} must list exactly 3 thresholds (got {len(values)})")
            elif any(b < a for a, b in zip(values, values[1:])):
                problems.append(f"{key} thresholds must be non-decreasing (got {values})")
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
                f"Puerto Rico runs with run_pr): {unknown}"
            )
        return v

    @model_validator(mode="after")
    def _check_thresholds_present(self) -> "SafeTabConfig":
        missing = [lvl.key for lvl in self.tabulated_levels() if lvl.key not in self.thresholds_p]
        if missing:
            raise ValueError(
                "thresholds_p has no thresholds for tabulated levels (rho > 0): " + ", ".join(missing)
            )
        return self

    # ------------------------------------------------------------------ accessors
    @property
    def gamma(self) -> float:
        return self.privacy_budget_p_stage_1_fraction

    def rho(self, level: PopulationGroupLevel) -> float:
        """Budget of one population group level (rho, or epsilon for pure DP)."""
        return getattr(self, level.budget_key)

    def rho_exact(self, level: PopulationGroupLevel) -> Fraction:
        """The budget as the exact decimal written in the file (0.159 -> 159/1000)."""
        return to_fraction(self.rho(level))

    @property
    def gamma_exact(self) -> Fraction:
        return to_fraction(self.gamma)

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
        """A validated copy with some keys changed (raises ConfigError)."""
        data = self.to_dict()
        data.update(changes)
        return SafeTabConfig.from_dict(data)

    def with_rho(self, level: PopulationGroupLevel, rho: float) -> "SafeTabConfig":
        return self.updated(**{level.budget_key: rho})

    def with_thresholds(self, level: PopulationGroupLevel, thresholds: Iterable[int]) -> "SafeTabConfig":
        tp = dict(self.thresholds_p)
        tp[level.key] = [int(x) for x in thresholds]
        return self.updated(thresholds_p=tp)

    def to_dict(self) -> dict[str, Any]:
        """All keys, known and unknown, as plain JSON values."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def write(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str | None = None) -> "SafeTabConfig":
        if not isinstance(data, dict):
            raise ConfigError(["the configuration must be a JSON object of keys and values"], source)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_plain_messages(exc, data), source) from None

    @classmethod
    def from_json(cls, text: str, source: str | None = None) -> "SafeTabConfig":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                [f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"], source
            ) from None
        return cls.from_dict(data, source)

    @classmethod
    def read(cls, path: str | Path) -> "SafeTabConfig":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError([f"cannot read the file ({exc.strerror})"], str(path)) from None
        return cls.from_json(text, str(path))


def to_fraction(x: float | int | str | Fraction) -> Fraction:
    """Exact rational of a decimal number as written (shortest repr of a float)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, float):
        return Fraction(repr(x))
    return Fraction(x)


def _plain_messages(exc: ValidationError, data: dict[str, Any]) -> list[str]:
    """Turn pydantic errors into one plain sentence per problem."""
    out = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        key = loc[0] if loc else "configuration"
        where = ".".join(loc) if loc else "configuration"
        value = data.get(key, None) if loc else None
        kind = err["type"]
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if kind == "missing":
            text = f"{where} is missing"
        elif kind in ("int_type", "int_parsing", "int_from_float"):
            text = f"{where} must be a whole number (got {err.get('input')!r})"
        elif kind in ("float_type", "float_parsing"):
            text = f"{where} must be a number (got {err.get('input')!r})"
        elif kind in ("bool_type", "bool_parsing"):
            text = f"{where} must be true or false (got {err.get('input')!r})"
        elif kind == "literal_error":
            text = f"{where} must be {err['ctx']['expected']} (got {err.get('input')!r})"
        elif kind in ("list_type", "dict_type"):
            text = f"{where} must be a {'list' if kind == 'list_type' else 'mapping'} (got {err.get('input')!r})"
        elif key == "configuration" or not loc:
            text = msg
        else:
            text = f"{where} {msg}" if not msg.startswith(where) else msg
        if value is not None and kind == "missing":
            text += f" (got {value!r})"
        out.append(text)
    return out
