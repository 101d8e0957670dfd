"""Named scenarios: plans a committee keeps on disk and compares (pure; no Streamlit).

A scenario is a named plan: a `SafeTabConfig`, the planner's MOE targets per level key
(`ui.core.state.K_TARGETS`) and an optional note, with the times it was created and last
modified (UTC, ISO 8601).

Where: one SQLite database (the standard library's `sqlite3`), ``scenarios.sqlite3``
in the data folder `data_dir()`: ``$SAFETAB_STUDIO_DATA`` if set, else the user data
folder of the platform (`platformdirs.user_data_dir("safetab-p-studio")`, e.g.
``~/.local/share/safetab-p-studio`` on Linux). Table ``scenarios``: ``name`` (unique,
compared without regard to case), ``config`` (config.json text), ``targets`` (JSON
object), ``note``, ``created``, ``modified``. Every call opens and closes its own
connection, so several app sessions can share the store.

A plan also travels as a *plan file* (`plan_file_text` / `read_plan_file`):
``{"format": "safetab-p-studio plan", "version": 1, "name": ..., "config": {...},
"moe_targets": {...}, "note": ..., "created": ..., "modified": ...}``. Reading accepts a
plain config.json too (its name is then the file's name).

Every failure is a `ScenarioError` in plain words (a `ValueError`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from calculators.config import ConfigError, SafeTabConfig, decode_utf8
from calculators.levels import PopulationGroupLevel
from ui.core import urlcodec

#: Environment variable that moves the data folder (tests point it at tmp_path).
ENV_DATA = "SAFETAB_STUDIO_DATA"
APP_NAME = "safetab-p-studio"
DB_NAME = "scenarios.sqlite3"
#: The longest name a scenario may have (it heads tables and chart legends).
MAX_NAME = 80
MAX_NOTE = 2_000
#: The most scenarios the store keeps (each is a few kB; this bounds every listing).
MAX_SCENARIOS = 500
#: A plan file or config.json larger than this is refused (a plan is ~3 kB).
MAX_FILE = 200_000
PLAN_FORMAT = "safetab-p-studio plan"
PLAN_VERSION = 1
_SCHEMA_VERSION = 1


class ScenarioError(ValueError):
    """A scenario could not be saved, read, renamed or deleted; the message says why."""


@dataclass(frozen=True)
class Scenario:
    """A named plan. `config` is None when the stored configuration no longer passes
    validation (then `problems` says why); such a scenario can still be renamed or
    deleted, so nothing is lost silently."""

    name: str
    config: SafeTabConfig | None
    targets: dict[str, int] = field(default_factory=dict)
    note: str = ""
    created: str = ""
    modified: str = ""
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.config is not None


# ------------------------------------------------------------------ location
def data_dir() -> Path:
    """The folder of the store: $SAFETAB_STUDIO_DATA, else the platform's user data
    folder for "safetab-p-studio" (platformdirs)."""
    env = os.environ.get(ENV_DATA, "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False))


def default_path() -> Path:
    return data_dir() / DB_NAME


def now() -> str:
    """The current UTC time as ISO 8601 to the second (how the store writes times)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


# ------------------------------------------------------------------ names
def clean_name(name: Any) -> str:
    """A scenario name as stored: spaces collapsed and trimmed; ScenarioError if it is
    empty, too long or holds control characters."""
    if not isinstance(name, str):
        raise ScenarioError("a scenario name must be text")
    text = " ".join(name.split())
    if not text:
        raise ScenarioError("a scenario needs a name")
    if len(text) > MAX_NAME:
        raise ScenarioError(f"a scenario name has at most {MAX_NAME} characters (this one has {len(text)})")
    if any(unicodedata.category(ch).startswith("C") for ch in text):
        raise ScenarioError("a scenario name cannot hold control characters")
    return text


def clean_targets(targets: Mapping[str, Any] | None) -> dict[str, int]:
    """MOE targets keyed by valid level keys, whole numbers >= 1 (others are dropped:
    a target is advice for the planner, never part of config.json)."""
    out: dict[str, int] = {}
    for key, value in (targets or {}).items():
        try:
            PopulationGroupLevel.parse(str(key))
        except ValueError:
            continue
        if isinstance(value, bool):
            continue
        try:
            m = float(value)
        except (TypeError, ValueError):
            continue
        if m >= 1 and m == int(m) and m < 1e12:
            out[str(key)] = int(m)
    return out


# ------------------------------------------------------------------ the store
class ScenarioStore:
    """The scenarios in one SQLite file (created on first write)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_path()

    # ---- connection
    @contextmanager
    def _connect(self, write: bool) -> Iterator[sqlite3.Connection]:
        if not write and not self.path.exists():
            yield None  # type: ignore[misc]  # nothing stored yet
            return
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=10)) as con:
                with con:  # one transaction: committed, or rolled back on error
                    self._schema(con)
                    yield con
        except sqlite3.DatabaseError as exc:
            raise ScenarioError(f"the scenario store {self.path} could not be used ({exc}); "
                                f"move it away or set {ENV_DATA} to another folder") from None
        except OSError as exc:
            raise ScenarioError(f"the scenario store {self.path} could not be opened ({exc})") from None

    @staticmethod
    def _schema(con: sqlite3.Connection) -> None:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > _SCHEMA_VERSION:
            raise ScenarioError("the scenario store was written by a newer version of this app")
        con.execute(
            "CREATE TABLE IF NOT EXISTS scenarios ("
            " name TEXT PRIMARY KEY COLLATE NOCASE,"
            " config TEXT NOT NULL,"
            " targets TEXT NOT NULL DEFAULT '{}',"
            " note TEXT NOT NULL DEFAULT '',"
            " created TEXT NOT NULL,"
            " modified TEXT NOT NULL)"
        )
        if version < _SCHEMA_VERSION:
            con.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    # ---- reading
    def all(self) -> list[Scenario]:
        """Every scenario, most recently modified first."""
        with self._connect(write=False) as con:
            if con is None:
                return []
            rows = con.execute(
                "SELECT name, config, targets, note, created, modified FROM scenarios "
                "ORDER BY modified DESC, name COLLATE NOCASE LIMIT ?", (MAX_SCENARIOS,)).fetchall()
        return [_scenario(*row) for row in rows]

    def names(self) -> list[str]:
        return [s.name for s in self.all()]

    def get(self, name: str) -> Scenario:
        with self._connect(write=False) as con:
            row = None if con is None else con.execute(
                "SELECT name, config, targets, note, created, modified FROM scenarios WHERE name = ?",
                (clean_name(name),)).fetchone()
        if row is None:
            raise ScenarioError(f"there is no scenario named {clean_name(name)!r}")
        return _scenario(*row)

    def exists(self, name: str) -> bool:
        try:
            self.get(name)
        except ScenarioError:
            return False
        return True

    # ---- writing
    def save(self, name: str, config: SafeTabConfig, targets: Mapping[str, Any] | None = None,
             note: str = "", overwrite: bool = False) -> Scenario:
        """Store a plan under `name`. An existing scenario of that name (any case) is
        replaced only with overwrite=True (it keeps its creation time)."""
        name = clean_name(name)
        note = _clean_note(note)
        cfg_text = config.to_json()
        tgt_text = json.dumps(clean_targets(targets), sort_keys=True)
        stamp = now()
        with self._connect(write=True) as con:
            old = con.execute("SELECT name, created FROM scenarios WHERE name = ?", (name,)).fetchone()
            if old is not None and not overwrite:
                raise ScenarioError(f"a scenario named {old[0]!r} exists already; choose another name or replace it")
            if old is None:
                count = con.execute("SELECT COUNT(*) FROM scenarios").fetchone()[0]
                if count >= MAX_SCENARIOS:
                    raise ScenarioError(f"the store holds {MAX_SCENARIOS} scenarios, its limit; delete some first")
                con.execute("INSERT INTO scenarios VALUES (?, ?, ?, ?, ?, ?)",
                            (name, cfg_text, tgt_text, note, stamp, stamp))
            else:
                con.execute("UPDATE scenarios SET name = ?, config = ?, targets = ?, note = ?, modified = ? "
                            "WHERE name = ?", (name, cfg_text, tgt_text, note, stamp, name))
        return self.get(name)

    def rename(self, old: str, new: str) -> Scenario:
        """Give a scenario another name (a change of case only is allowed)."""
        old, new = clean_name(old), clean_name(new)
        with self._connect(write=True) as con:
            if con.execute("SELECT 1 FROM scenarios WHERE name = ?", (old,)).fetchone() is None:
                raise ScenarioError(f"there is no scenario named {old!r}")
            if old.casefold() != new.casefold():
                clash = con.execute("SELECT name FROM scenarios WHERE name = ?", (new,)).fetchone()
                if clash is not None:
                    raise ScenarioError(f"a scenario named {clash[0]!r} exists already")
            con.execute("UPDATE scenarios SET name = ?, modified = ? WHERE name = ?", (new, now(), old))
        return self.get(new)

    def delete(self, name: str) -> None:
        name = clean_name(name)
        with self._connect(write=True) as con:
            if con.execute("DELETE FROM scenarios WHERE name = ?", (name,)).rowcount == 0:
                raise ScenarioError(f"there is no scenario named {name!r}")

    def set_note(self, name: str, note: str) -> Scenario:
        name, note = clean_name(name), _clean_note(note)
        with self._connect(write=True) as con:
            if con.execute("UPDATE scenarios SET note = ?, modified = ? WHERE name = ?",
                           (note, now(), name)).rowcount == 0:
                raise ScenarioError(f"there is no scenario named {name!r}")
        return self.get(name)


def _clean_note(note: Any) -> str:
    text = "" if note is None else str(note).strip()
    if len(text) > MAX_NOTE:
        raise ScenarioError(f"a note has at most {MAX_NOTE:,} characters (this one has {len(text):,})")
    return text


def _scenario(name: str, cfg_text: str, tgt_text: str, note: str, created: str, modified: str) -> Scenario:
    try:
        config: SafeTabConfig | None = SafeTabConfig.from_json(cfg_text, f"scenario {name!r}")
        problems: tuple[str, ...] = ()
    except ConfigError as exc:
        config, problems = None, tuple(exc.problems)
    try:
        targets = clean_targets(json.loads(tgt_text))
    except (ValueError, TypeError, AttributeError):
        targets = {}
    return Scenario(name, config, targets, note or "", created, modified, problems)


# ------------------------------------------------------------------ plan files
def file_stem(name: str) -> str:
    """A file name (without extension) for a scenario: letters, digits, spaces and
    ``-_.()`` kept, anything else (slashes, colons...) replaced by ``_``."""
    stem = "".join(ch if ch.isalnum() or ch in " -_.()" else "_" for ch in name).strip(" .")
    return stem or "plan"


def plan_file_text(name: str, config: SafeTabConfig, targets: Mapping[str, Any] | None = None,
                   note: str = "", created: str = "", modified: str = "") -> str:
    """A plan as a JSON file that keeps its name and MOE targets (see module doc)."""
    doc = {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "name": clean_name(name),
        "note": _clean_note(note),
        "created": created or now(),
        "modified": modified or created or now(),
        "moe_targets": clean_targets(targets),
        "config": config.to_dict(),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def scenario_file_text(s: Scenario) -> str:
    if s.config is None:
        raise ScenarioError(f"scenario {s.name!r} has an invalid configuration and cannot be exported")
    return plan_file_text(s.name, s.config, s.targets, s.note, s.created, s.modified)


@dataclass(frozen=True)
class PlanFile:
    """What `read_plan_file` found: the plan, its name and targets (None if the file
    was a plain config.json, which has none), note and times."""

    name: str
    config: SafeTabConfig
    targets: dict[str, int] | None
    note: str = ""
    created: str = ""
    modified: str = ""
    is_plan_file: bool = False


def read_plan_file(data: bytes | str, filename: str) -> PlanFile:
    """A plan file or a plain config.json. ScenarioError (listing every problem) if it
    is neither. A config.json is named after the file (without .json)."""
    if isinstance(data, bytes):
        if len(data) > MAX_FILE:
            raise ScenarioError(f"{filename} is {len(data):,} bytes; a plan is a few kB (at most {MAX_FILE:,})")
        try:
            text = decode_utf8(data, filename)
        except ConfigError as exc:
            raise ScenarioError(f"{filename}: " + "; ".join(exc.problems)) from None
    else:
        text = data
    if len(text) > MAX_FILE:
        raise ScenarioError(f"{filename} is too large to be a plan (at most {MAX_FILE:,} characters)")
    try:
        urlcodec.check_json_text(text, filename)  # size and nesting bounded before parsing
        doc = json.loads(text)
    except ConfigError as exc:
        raise ScenarioError(f"{filename}: " + "; ".join(exc.problems)) from None
    except (ValueError, RecursionError) as exc:
        raise ScenarioError(f"{filename} is not valid JSON: {str(exc)[:120]}") from None
    if isinstance(doc, dict) and doc.get("format") == PLAN_FORMAT:
        if doc.get("version") != PLAN_VERSION:
            raise ScenarioError(f"{filename} is a plan file of another version ({doc.get('version')!r}, "
                                f"expected {PLAN_VERSION})")
        if not isinstance(doc.get("config"), dict):
            raise ScenarioError(f"{filename}: the plan file has no \"config\" object")
        try:
            config = SafeTabConfig.from_dict(doc["config"], source=filename)
        except ConfigError as exc:
            raise ScenarioError(f"{filename}: the plan's configuration is not valid:\n"
                                + "\n".join(f"- {p}" for p in exc.problems)) from None
        name = clean_name(doc.get("name") or Path(filename).stem)
        tg = doc.get("moe_targets")
        return PlanFile(name, config, clean_targets(tg if isinstance(tg, dict) else {}),
                        _clean_note(doc.get("note") if isinstance(doc.get("note"), str) else ""),
                        str(doc.get("created") or "")[:40], str(doc.get("modified") or "")[:40], True)
    try:
        config = SafeTabConfig.from_json(text, filename)
    except ConfigError as exc:
        raise ScenarioError(f"{filename} is neither a plan file nor a valid config.json:\n"
                            + "\n".join(f"- {p}" for p in exc.problems)) from None
    stem = Path(filename).name
    for ext in (".plan.json", ".json"):
        if stem.lower().endswith(ext):
            stem = stem[: -len(ext)]
            break
    return PlanFile(clean_name(stem[:MAX_NAME] or "imported config.json"), config, None)
