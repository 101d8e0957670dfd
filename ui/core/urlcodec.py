"""The shareable link: a configuration (and the planner's MOE targets) as a URL token.

Token = URL-safe base64 (no padding) of zlib-compressed compact JSON
``{"v": 1, "c": <config.json keys>, "t": {"(GEO, LEVEL)": moe target}, "n": plan name,
"e": 1 if edited, "h": <SafeTab-H config.json keys>}`` ("t", "n", "e" and "h" optional;
"h" is the SafeTab-H plan planned beside SafeTab-P's, checked by `SafeTabHConfig.from_dict`).
Every key of the configuration is kept; the configuration is checked as strictly as a
config.json file (`SafeTabConfig.from_dict`). Decoding never raises anything but
`ConfigError`, whose `.problems` say in plain words what is wrong.

`config_from_text` is the one way the app reads configuration JSON a person typed,
pasted or uploaded: text longer than `MAX_PAYLOAD` or nested deeper than `MAX_DEPTH`
is refused before it is parsed (Python's JSON parser recurses, so a deeply nested text
would otherwise raise RecursionError).

`plan_targets` is the one way the app reads the MOE targets that come with a plan (a
link, a plan file, the scenario store): whole numbers of persons from 1 to
`MAX_TARGET` keyed by population group level; anything else (Infinity, NaN, a
400-digit number, a string, an unknown level) refuses the plan with a message.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from typing import Any

import numpy as np

from calculators.config import ConfigError, SafeTabConfig, echo, loads_unique
from calculators.levels import POPULATION_GROUP_LEVELS
from calculators.safetab_h import SafeTabHConfig

#: The query parameter that carries the configuration.
PARAM = "config"
VERSION = 1
#: Decompressed payloads larger than this are refused (a configuration is ~2 kB).
MAX_PAYLOAD = 1_000_000
#: JSON nested deeper than this is refused (a link's payload is 4 levels deep).
MAX_DEPTH = 32
#: Links longer than this are refused before they are decoded (a plan's link is about
#: 800 characters, its name and every MOE target included; about 1,600 with a SafeTab-H plan).
MAX_TOKEN = 16_000
#: The largest MOE target a plan may carry, in persons. The planner takes typed targets
#: up to `ui.core.planner.TARGET_MAX`; a plan's own targets can be larger, because a level's
#: target starts as the MOE its budget achieves, and the noisiest valid plan (pure DP,
#: scale `calculators.config.MAX_NOISE_SCALE` = 9e10) has an exact MOE of about 3e11.
MAX_TARGET = 10**12
#: Problems of one plan's targets listed before the rest are only counted.
SHOWN_PROBLEMS = 10
_LEVEL_KEYS = frozenset(lvl.key for lvl in POPULATION_GROUP_LEVELS)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest nesting of [ ] and { } in JSON text (brackets inside strings do not count)."""
    bare = _STRINGS.sub('""', text).encode("utf-8", "replace")
    b = np.frombuffer(bare, dtype=np.uint8)
    step = np.isin(b, (ord("["), ord("{"))).astype(np.int64) - np.isin(b, (ord("]"), ord("}")))
    return int(np.cumsum(step).max(initial=0))


def check_json_text(text: str, source: str) -> None:
    """ConfigError unless `text` is small and shallow enough to parse safely."""
    if len(text) > MAX_PAYLOAD:
        raise ConfigError([(f"the text is {len(text):,} characters long; a SafeTab-P config.json is a few "
                            f"thousand (at most {MAX_PAYLOAD:,} are read)")], source)
    depth = json_depth(text)
    if depth > MAX_DEPTH:
        raise ConfigError([(f"the JSON is nested {depth:,} levels deep; a SafeTab-P config.json has 3 "
                            f"(at most {MAX_DEPTH} are read)")], source)


def config_from_text(text: str, source: str) -> SafeTabConfig:
    """`SafeTabConfig.from_json` of text a person gave, bounded first (`check_json_text`);
    only ConfigError, in plain words, for anything wrong with it."""
    check_json_text(text, source)
    try:
        return SafeTabConfig.from_json(text, source)
    except RecursionError:
        raise ConfigError([f"the JSON is nested too deeply (at most {MAX_DEPTH} levels are read)"], source) from None


def target_problem(key: Any, value: Any) -> str | None:
    """Why (key, value) is not a MOE target a plan may carry, or None if it is one: the key
    a population group level ("(COUNTY, 2)"), the value a JSON number that is a whole
    number of persons from 1 to MAX_TARGET (9 or 9.0; never Infinity, NaN, true, "9")."""
    if key not in _LEVEL_KEYS:
        return f"MOE target {echo(key)}: not a population group level written as \"(COUNTY, 2)\""
    where = f"MOE target of {key}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{where} must be a number of persons (got {echo(value)})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where} must be a finite number of persons (got {echo(value)})"
    if value != int(value):
        return f"{where} must be a whole number of persons (got {echo(value)})"
    if not 1 <= value <= MAX_TARGET:
        return f"{where} must be from 1 to {MAX_TARGET:,} persons (got {echo(value)})"
    return None


def plan_targets(raw: Any, source: str) -> dict[str, int]:
    """The MOE targets of a plan entering the app (a link's "t", a plan file's
    "moe_targets", a stored scenario's targets): {level key: whole persons}, or
    ConfigError naming every bad entry (the first SHOWN_PROBLEMS, then their number)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError([f"the MOE targets must be a mapping of levels to persons (got {echo(raw)})"], source)
    if len(raw) > len(POPULATION_GROUP_LEVELS):
        raise ConfigError([f"the plan has {len(raw):,} MOE targets; there are {len(POPULATION_GROUP_LEVELS)} "
                           "population group levels"], source)
    problems = [p for p in (target_problem(k, v) for k, v in raw.items()) if p]
    if problems:
        raise ConfigError(cap_problems(problems), source)
    return {k: int(v) for k, v in raw.items()}


def cap_problems(problems: list[str], shown: int = SHOWN_PROBLEMS) -> list[str]:
    """The first `shown` problems, then one line with the number of the others."""
    if len(problems) <= shown:
        return list(problems)
    return list(problems[:shown]) + [f"... and {len(problems) - shown:,} more problems"]


#: The longest plan name a link carries.
MAX_NAME = 80


class Decoded(tuple):
    """What `decode` returns: the pair (configuration, MOE targets), which unpacks as
    before, plus the plan's name (`.name`, None if the link has none) and whether the
    plan was edited since it got that name (`.edited`) and the SafeTab-H plan it carries
    (`.h_config`, None if none)."""

    name: str | None
    edited: bool
    h_config: SafeTabHConfig | None

    def __new__(cls, config: SafeTabConfig, targets: dict[str, int], name: str | None = None,
                edited: bool = False, h_config: SafeTabHConfig | None = None):
        self = super().__new__(cls, (config, targets))
        self.name, self.edited, self.h_config = name, edited, h_config
        return self


def _name(value: Any) -> str | None:
    """A plan name from a link: printable text, spaces collapsed, at most MAX_NAME."""
    if not isinstance(value, str):
        return None
    text = " ".join("".join(ch for ch in value if ch.isprintable()).split())[:MAX_NAME]
    return text or None


def encode(config: SafeTabConfig, targets: dict[str, int] | None = None, name: str | None = None,
           edited: bool = False, h_config: SafeTabHConfig | None = None) -> str:
    """The URL token of a configuration and (optionally) its MOE targets, the plan's
    name (key "n"; "e": 1 if edited since it got that name) and the SafeTab-H plan ("h")."""
    payload: dict[str, Any] = {"v": VERSION, "c": config.to_dict()}
    if h_config is not None:
        payload["h"] = h_config.to_dict()
    if targets:
        payload["t"] = {k: int(v) for k, v in sorted(targets.items()) if v is not None}
    if _name(name):
        payload["n"] = _name(name)
        if edited:
            payload["e"] = 1
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii").rstrip("=")


def decode(token: str) -> Decoded:
    """(configuration, MOE targets) of a token, with `.name` and `.edited` (`Decoded`);
    ConfigError in plain words if damaged."""
    source = "shared link"
    damaged = (
        "the link's configuration is damaged or incomplete (was the address cut off "
        "when it was copied?)"
    )
    if not isinstance(token, str) or not token.strip():
        raise ConfigError(["the link carries no configuration"], source)
    text = token.strip()
    if len(text) > MAX_TOKEN:
        raise ConfigError([f"the link's configuration is {len(text):,} characters long; a plan's link carries "
                           f"about 800 (at most {MAX_TOKEN:,} are read)"], source)
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_PAYLOAD)
        if inflater.unconsumed_tail:
            raise ConfigError(["the link's configuration is too large to be a SafeTab-P config"], source)
        if not inflater.eof:
            raise ValueError("truncated")
        text = raw.decode("utf-8")
        check_json_text(text, source)
        payload, changed = loads_unique(text)
    except ConfigError:
        raise
    except (binascii.Error, zlib.error, ValueError, UnicodeDecodeError, RecursionError):
        raise ConfigError([damaged], source) from None
    if not isinstance(payload, dict) or "c" not in payload:
        raise ConfigError([damaged], source)
    if changed:  # what json.loads would change silently; the app never writes a key twice or a long number
        raise ConfigError(changed[:20], source)
    if payload.get("v") != VERSION:
        raise ConfigError(
            [(f"the link was made by another version of this app (format {payload.get('v')!r}, "
              f"expected {VERSION})")],
            source,
        )
    config = SafeTabConfig.from_dict(payload["c"], source=source)
    targets = plan_targets(payload.get("t"), source)
    h_config = SafeTabHConfig.from_dict(payload["h"], source=f"{source} (SafeTab-H plan)") if "h" in payload else None
    return Decoded(config, targets, _name(payload.get("n")), payload.get("e") == 1, h_config)


def share_url(base_url: str | None, token: str, page: str | None = None) -> str:
    """The full link: the app's address with ``?config=<token>`` (relative if unknown).
    A trailing ``/<page>`` of base_url is dropped, so the link opens the app's first page."""
    base = (base_url or "").split("?")[0].split("#")[0]
    if page and base.rstrip("/").endswith("/" + page):
        base = base.rstrip("/")[: -len(page)]
    return f"{base}?{PARAM}={token}"
