"""The shareable link: a configuration (and the planner's MOE targets) as a URL token.

Token = URL-safe base64 (no padding) of zlib-compressed compact JSON
``{"v": 1, "c": <config.json keys>, "t": {"(GEO, LEVEL)": moe target}, "n": plan name,
"e": 1 if edited}`` ("t", "n" and "e" optional).
Every key of the configuration is kept; the configuration is checked as strictly as a
config.json file (`SafeTabConfig.from_dict`). Decoding never raises anything but
`ConfigError`, whose `.problems` say in plain words what is wrong.

`config_from_text` is the one way the app reads configuration JSON a person typed,
pasted or uploaded: text longer than `MAX_PAYLOAD` or nested deeper than `MAX_DEPTH`
is refused before it is parsed (Python's JSON parser recurses, so a deeply nested text
would otherwise raise RecursionError).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from typing import Any

import numpy as np

from calculators.config import ConfigError, SafeTabConfig
from calculators.levels import PopulationGroupLevel

#: The query parameter that carries the configuration.
PARAM = "config"
VERSION = 1
#: Decompressed payloads larger than this are refused (a configuration is ~2 kB).
MAX_PAYLOAD = 1_000_000
#: JSON nested deeper than this is refused (a link's payload is 4 levels deep).
MAX_DEPTH = 32
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


#: The longest plan name a link carries.
MAX_NAME = 80


class Decoded(tuple):
    """What `decode` returns: the pair (configuration, MOE targets), which unpacks as
    before, plus the plan's name (`.name`, None if the link has none) and whether the
    plan was edited since it got that name (`.edited`)."""

    name: str | None
    edited: bool

    def __new__(cls, config: SafeTabConfig, targets: dict[str, int], name: str | None = None,
                edited: bool = False):
        self = super().__new__(cls, (config, targets))
        self.name, self.edited = name, edited
        return self


def _name(value: Any) -> str | None:
    """A plan name from a link: printable text, spaces collapsed, at most MAX_NAME."""
    if not isinstance(value, str):
        return None
    text = " ".join("".join(ch for ch in value if ch.isprintable()).split())[:MAX_NAME]
    return text or None


def encode(config: SafeTabConfig, targets: dict[str, int] | None = None, name: str | None = None,
           edited: bool = False) -> str:
    """The URL token of a configuration and (optionally) its MOE targets and the plan's
    name (key "n"; "e": 1 if edited since it got that name)."""
    payload: dict[str, Any] = {"v": VERSION, "c": config.to_dict()}
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
        payload = json.loads(text)
    except ConfigError:
        raise
    except (binascii.Error, zlib.error, ValueError, UnicodeDecodeError, RecursionError):
        raise ConfigError([damaged], source) from None
    if not isinstance(payload, dict) or "c" not in payload:
        raise ConfigError([damaged], source)
    if payload.get("v") != VERSION:
        raise ConfigError(
            [(f"the link was made by another version of this app (format {payload.get('v')!r}, "
              f"expected {VERSION})")],
            source,
        )
    config = SafeTabConfig.from_dict(payload["c"], source=source)
    targets: dict[str, int] = {}
    raw_targets = payload.get("t") or {}
    if isinstance(raw_targets, dict):
        for key, value in raw_targets.items():
            try:
                PopulationGroupLevel.parse(key)
                m = int(value)
            except (ValueError, TypeError):
                continue
            if m >= 1:
                targets[key] = m
    return Decoded(config, targets, _name(payload.get("n")), payload.get("e") == 1)


def share_url(base_url: str | None, token: str, page: str | None = None) -> str:
    """The full link: the app's address with ``?config=<token>`` (relative if unknown).
    A trailing ``/<page>`` of base_url is dropped, so the link opens the app's first page."""
    base = (base_url or "").split("?")[0].split("#")[0]
    if page and base.rstrip("/").endswith("/" + page):
        base = base.rstrip("/")[: -len(page)]
    return f"{base}?{PARAM}={token}"
