"""Named scenarios: plans a committee keeps on disk and compares (pure; no Streamlit).

A scenario is a named plan: a `SafeTabConfig`, the planner's MOE targets per level key
(`ui.core.state.K_TARGETS`) and an optional note, with the times it was created and last
modified (UTC, ISO 8601).

Where: one SQLite database (the standard library's `sqlite3`), ``scenarios.sqlite3``
in the data folder `data_dir()`: ``$SAFETAB_STUDIO_DATA`` if set, else the user data
folder of the platform (`platformdirs.user_data_dir("safetab-p-studio")`, e.g.
``~/.local/share/safetab-p-studio`` on Linux). Table ``scenarios``: ``name`` (unique
after Unicode normalisation and case folding, `name_key`; the names of the built-in
plans are not allowed), ``config`` (config.json text), ``targets`` (JSON object),
``note``, ``created``, ``modified``. Every call opens and closes its own connection, so
several app sessions can share the store; the file is in WAL mode and writes are
serialised (`ScenarioStore`). What is read back passes the same checks as a link or a
plan file (`urlcodec.config_from_text`, `urlcodec.plan_targets`).

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
from urllib.parse import quote

from calculators.config import ConfigError, SafeTabConfig, decode_utf8, echo, loads_unique
from ui.core import plan_names, urlcodec
# the names of plans live in ui.core (ui.core.state needs them and may not import this module);
# scenarios.name_key, .is_built_in... stay where the pages and tests have always found them
from ui.core.plan_names import BUILT_IN_NAMES, is_built_in, name_key, suggested_name  # noqa: F401

#: Environment variable that moves the data folder (tests point it at tmp_path).
ENV_DATA = "SAFETAB_STUDIO_DATA"
APP_NAME = "safetab-p-studio"
DB_NAME = "scenarios.sqlite3"
#: The longest name a scenario may have (it heads tables and chart legends).
MAX_NAME = plan_names.MAX_NAME
MAX_NOTE = 2_000
#: The most scenarios the store keeps (each is a few kB; this bounds every listing).
MAX_SCENARIOS = 500
#: A plan file or config.json larger than this is refused (a plan is ~3 kB).
MAX_FILE = 200_000
PLAN_FORMAT = "safetab-p-studio plan"
PLAN_VERSION = 1
#: 2: names unique after NFKC and case folding (`name_key`); older duplicates renamed.
_SCHEMA_VERSION = 2


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
    """The app's own MOE targets as stored: the entries `urlcodec.target_problem`
    accepts (a target is advice for the planner, never part of config.json; a plan
    entering the app with bad targets is refused by `urlcodec.plan_targets`)."""
    return {str(k): int(v) for k, v in (targets or {}).items() if urlcodec.target_problem(k, v) is None}


# ------------------------------------------------------------------ the store
#: Seconds a write waits for another program's write lock before it says the store is busy.
WRITE_TIMEOUT = 1.0
#: Seconds a read may wait: only an older store not yet in WAL mode can make it wait
#: (in WAL mode readers never wait for a writer).
READ_TIMEOUT = 1.0


class ScenarioStore:
    """The scenarios in one SQLite file (created on first write).

    Concurrency: the file is in WAL mode (set on the first write), so reads never wait
    for a writer; every write is one ``BEGIN IMMEDIATE`` transaction, so two sessions
    saving at once are serialised (the second sees the first's name: "exists
    already"), and a write that cannot get the lock within `WRITE_TIMEOUT` says the
    store is busy. Names are unique after `name_key` (checked under the write lock).
    Rows this version cannot use (a name that is not valid text, e.g. NULL or BLOB,
    written by another program) are skipped and described in `skipped` after `all()`.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_path()
        #: What the last `all()` skipped, one sentence per row.
        self.skipped: list[str] = []

    # ---- connection
    def _uri(self, write: bool) -> str:
        return f"file:{quote(str(self.path.absolute()))}?mode={'rwc' if write else 'rw'}"

    @contextmanager
    def _connect(self, write: bool) -> Iterator[sqlite3.Connection]:
        if not write and not self.path.exists():
            yield None  # type: ignore[misc]  # nothing stored yet
            return
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self._uri(write), uri=True, isolation_level=None,
                                  timeout=WRITE_TIMEOUT if write else READ_TIMEOUT)
            with closing(con):
                if not write:
                    con.execute("PRAGMA query_only = ON")
                    _check_version(con)
                    yield con
                    return
                # WAL is persistent; readers then never wait for a writer. The switch is tried
                # without waiting, so that the whole write waits at most WRITE_TIMEOUT.
                con.execute("PRAGMA busy_timeout = 0")
                try:
                    con.execute("PRAGMA journal_mode = WAL")
                except sqlite3.OperationalError:
                    pass  # another program holds the old-style lock: this write waits below
                con.execute(f"PRAGMA busy_timeout = {int(WRITE_TIMEOUT * 1000)}")
                con.execute("BEGIN IMMEDIATE")  # the write lock first, so a transaction never has to upgrade
                try:
                    self._schema(con)
                    yield con
                except BaseException:
                    con.rollback()
                    raise
                con.execute("COMMIT")
        except sqlite3.IntegrityError:  # the write lock makes a clash of names unreachable; if not, say so
            raise ScenarioError("a scenario of that name exists already; choose another name or replace it") \
                from None
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                what = "save the change" if write else "read it"
                raise ScenarioError(
                    f"the scenario store {self.path} is busy: another program or app session is writing it "
                    f"(waited {WRITE_TIMEOUT if write else READ_TIMEOUT:g} s to {what}); try again in a "
                    "moment") from None
            raise ScenarioError(self._unusable(exc)) from None
        except sqlite3.DatabaseError as exc:
            raise ScenarioError(self._unusable(exc)) from None
        except OSError as exc:
            raise ScenarioError(f"the scenario store {self.path} could not be opened ({exc})") from None

    def _unusable(self, exc: Exception) -> str:
        return (f"the scenario store {self.path} could not be used ({str(exc)[:200]}); move it away or set "
                f"{ENV_DATA} to another folder")

    @staticmethod
    def _schema(con: sqlite3.Connection) -> None:
        version = _check_version(con)
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
            _rename_duplicates(con)
            con.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    # ---- reading
    def all(self) -> list[Scenario]:
        """Every scenario, most recently modified first; rows that cannot be shown are
        left in the store untouched and described in `self.skipped`."""
        self.skipped = []
        with self._connect(write=False) as con:
            if con is None or not _has_table(con):
                return []
            rows = con.execute(
                "SELECT rowid, name, config, targets, note, created, modified FROM scenarios "
                "ORDER BY modified DESC, name COLLATE NOCASE LIMIT ?", (MAX_SCENARIOS,)).fetchall()
        out = []
        for row in rows:
            why = _bad_name(row[1])
            if why:
                self.skipped.append(f"row {row[0]}: {why}")
            else:
                out.append(_scenario(*row[1:]))
        return out

    def names(self) -> list[str]:
        return [s.name for s in self.all()]

    def get(self, name: str) -> Scenario:
        name = clean_name(name)
        with self._connect(write=False) as con:
            row = None
            if con is not None and _has_table(con):
                rowid = _find(con, name)
                if rowid is not None:
                    row = con.execute("SELECT name, config, targets, note, created, modified FROM scenarios "
                                      "WHERE rowid = ?", (rowid,)).fetchone()
        if row is None:
            raise ScenarioError(f"there is no scenario named {name!r}")
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
        """Store a plan under `name`. An existing scenario of that name (after
        `name_key`) is replaced only with overwrite=True (it keeps its creation time)."""
        name = _new_name(name)
        note = _clean_note(note)
        cfg_text = config.to_json()
        tgt_text = json.dumps(clean_targets(targets), sort_keys=True)
        stamp = now()
        with self._connect(write=True) as con:
            rowid = _find(con, name)
            if rowid is not None and not overwrite:
                old = con.execute("SELECT name FROM scenarios WHERE rowid = ?", (rowid,)).fetchone()[0]
                raise ScenarioError(f"a scenario named {old!r} exists already; choose another name or replace it")
            if rowid is None:
                count = con.execute("SELECT COUNT(*) FROM scenarios").fetchone()[0]
                if count >= MAX_SCENARIOS:
                    raise ScenarioError(f"the store holds {MAX_SCENARIOS} scenarios, its limit; delete some first")
                con.execute("INSERT INTO scenarios (name, config, targets, note, created, modified) "
                            "VALUES (?, ?, ?, ?, ?, ?)", (name, cfg_text, tgt_text, note, stamp, stamp))
            else:
                con.execute("UPDATE scenarios SET name = ?, config = ?, targets = ?, note = ?, modified = ? "
                            "WHERE rowid = ?", (name, cfg_text, tgt_text, note, stamp, rowid))
        return self.get(name)

    def rename(self, old: str, new: str) -> Scenario:
        """Give a scenario another name (a change of case or spelling only is allowed)."""
        old, new = clean_name(old), _new_name(new)
        with self._connect(write=True) as con:
            rowid = _existing(con, old)
            clash = _find(con, new)
            if clash is not None and clash != rowid:
                taken = con.execute("SELECT name FROM scenarios WHERE rowid = ?", (clash,)).fetchone()[0]
                raise ScenarioError(f"a scenario named {taken!r} exists already")
            con.execute("UPDATE scenarios SET name = ?, modified = ? WHERE rowid = ?", (new, now(), rowid))
        return self.get(new)

    def delete(self, name: str) -> None:
        name = clean_name(name)
        with self._connect(write=True) as con:
            rowid = _existing(con, name)
            con.execute("DELETE FROM scenarios WHERE rowid = ?", (rowid,))

    def set_note(self, name: str, note: str) -> Scenario:
        name, note = clean_name(name), _clean_note(note)
        with self._connect(write=True) as con:
            rowid = _existing(con, name)
            con.execute("UPDATE scenarios SET note = ?, modified = ? WHERE rowid = ?", (note, now(), rowid))
        return self.get(name)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _check_version(con: sqlite3.Connection) -> int:
    version = con.execute("PRAGMA user_version").fetchone()[0]
    if version > _SCHEMA_VERSION:
        raise ScenarioError("the scenario store was written by a newer version of this app")
    return version


def _has_table(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'scenarios'").fetchone() \
        is not None


def _bad_name(name: Any) -> str | None:
    """Why a stored name cannot be shown (None if it can)."""
    if name is None:
        return "it has no name (NULL)"
    if not isinstance(name, str):
        return f"its name is not text (a {type(name).__name__})"
    try:
        if clean_name(name) != name:
            return "its name has extra spaces"
    except ScenarioError as exc:
        return f"its name is not valid ({exc})"
    return None


def _existing(con: sqlite3.Connection, name: str) -> int:
    """The rowid of the scenario `name` (any case); ScenarioError if there is none."""
    rowid = _find(con, name)
    if rowid is None:
        raise ScenarioError(f"there is no scenario named {name!r}")
    return rowid


def _find(con: sqlite3.Connection, name: str) -> int | None:
    """The rowid of the scenario whose name is `name` after `name_key` (the first, if an
    older version stored two), or None."""
    key = name_key(name)
    for rowid, stored in con.execute("SELECT rowid, name FROM scenarios ORDER BY rowid"):
        if isinstance(stored, str) and name_key(stored) == key:
            return rowid
    return None


def _rename_duplicates(con: sqlite3.Connection) -> None:
    """Names an older version kept apart although they are one name after `name_key`
    ("été" and "ÉTÉ"): the later ones get " (2)", " (3)"... so that every scenario stays
    and each can be found by its name."""
    rows = [(r, n) for r, n in con.execute("SELECT rowid, name FROM scenarios ORDER BY rowid")
            if isinstance(n, str)]
    taken = {name_key(n) for _r, n in rows}
    seen: set[str] = set()
    for rowid, name in rows:
        key = name_key(name)
        if key not in seen:
            seen.add(key)
            continue
        k = 2
        while True:
            cand = f"{name[: MAX_NAME - 6]} ({k})"
            if name_key(cand) not in taken:
                break
            k += 1
        taken.add(name_key(cand))
        seen.add(name_key(cand))
        con.execute("UPDATE scenarios SET name = ? WHERE rowid = ?", (cand, rowid))


def _new_name(name: Any) -> str:
    """A name a scenario may take: `clean_name`, and not a built-in plan's name."""
    name = clean_name(name)
    if is_built_in(name):
        raise ScenarioError(f"{name!r} is the name of a plan the app always offers; choose another name "
                            f"(e.g. {suggested_name(name)!r})")
    return name


def _clean_note(note: Any) -> str:
    text = "" if note is None else str(note).strip()
    if len(text) > MAX_NOTE:
        raise ScenarioError(f"a note has at most {MAX_NOTE:,} characters (this one has {len(text):,})")
    return text


def _scenario(name: str, cfg_text: Any, tgt_text: Any, note: Any, created: Any, modified: Any) -> Scenario:
    """A stored row as a Scenario; whatever is wrong with its plan (a configuration or MOE
    targets that do not pass `urlcodec`'s checks, NULL or BLOB values) makes it an
    invalid scenario with `problems`, never an error."""
    source = f"scenario {name!r}"
    problems: list[str] = []
    config: SafeTabConfig | None = None
    targets: dict[str, int] = {}
    if not isinstance(cfg_text, str):
        kind = "NULL" if cfg_text is None else type(cfg_text).__name__
        problems.append(f"the stored configuration is not text ({kind})")
    else:
        try:
            config = urlcodec.config_from_text(cfg_text, source)
        except ConfigError as exc:
            problems += exc.problems
    if tgt_text is not None:
        try:
            if not isinstance(tgt_text, str):
                raise ConfigError([f"the stored MOE targets are not text ({type(tgt_text).__name__})"], source)
            urlcodec.check_json_text(tgt_text, source)
            try:
                raw = json.loads(tgt_text)
            except (ValueError, RecursionError):
                raise ConfigError(["the stored MOE targets are not valid JSON"], source) from None
            targets = urlcodec.plan_targets(raw, source)
        except ConfigError as exc:
            problems += exc.problems
    text = lambda v: v if isinstance(v, str) else ""  # noqa: E731
    return Scenario(name, None if problems else config, targets, text(note)[:MAX_NOTE], text(created)[:40],
                    text(modified)[:40], tuple(problems))


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
        doc, changed = loads_unique(text)
    except ConfigError as exc:
        raise ScenarioError(f"{filename}: " + "; ".join(exc.problems)) from None
    except (ValueError, RecursionError) as exc:
        raise ScenarioError(f"{filename} is not valid JSON: {str(exc)[:120]}") from None
    if isinstance(doc, dict) and doc.get("format") == PLAN_FORMAT:
        if doc.get("version") != PLAN_VERSION:
            raise ScenarioError(f"{filename} is a plan file of another version ({doc.get('version')!r}, "
                                f"expected {PLAN_VERSION})")
        if changed:  # what json.loads would change silently (a config.json says so in from_json)
            raise ScenarioError(f"{filename}: " + "; ".join(changed[:20]))
        if not isinstance(doc.get("config"), dict):
            raise ScenarioError(f"{filename}: the plan file has no \"config\" object")
        try:
            config = SafeTabConfig.from_dict(doc["config"], source=filename)
        except ConfigError as exc:
            raise ScenarioError(f"{filename}: the plan's configuration is not valid:\n"
                                + "\n".join(f"- {p}" for p in exc.problems)) from None
        name = clean_name(doc.get("name") or Path(filename).stem)
        try:
            targets = urlcodec.plan_targets(doc.get("moe_targets"), filename)
        except ConfigError as exc:
            raise ScenarioError(f"{filename}: the plan's MOE targets are not valid:\n"
                                + "\n".join(f"- {p}" for p in exc.problems)) from None
        return PlanFile(name, config, targets,
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
