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

The decision record (schema 3): every save, replace, rename, change of note, delete and
restore appends a *version* to the table ``versions`` (``sid`` the scenario's own number,
kept across renames; ``number`` 1, 2, ...; ``action``; ``author``, the signed-in user's
e-mail or `LOCAL`; ``at``, UTC; and the whole scenario as it was after the change). A
delete moves the scenario out of ``scenarios`` and leaves its versions: it is listed by
`ScenarioStore.deleted` and can be restored (`restore`) or, by an operator, purged
(`purge`, the one change that removes versions; it is logged in ``purged``). The table
``scenarios`` keeps the layout of schema 2 (the live scenarios), so a store of schema 2 is
read as it is and migrated in place by its first write: every scenario it holds becomes
version 1 of its history, author `UNKNOWN_AUTHOR`.

A plan also travels as a *plan file* (`plan_file_text` / `read_plan_file`):
``{"format": "safetab-p-studio plan", "version": 1, "name": ..., "config": {...},
"moe_targets": {...}, "note": ..., "created": ..., "modified": ...}``. Reading accepts a
plain config.json too (its name is then the file's name).

A scenario may keep a SafeTab-H plan beside SafeTab-P's (issue 45): its config.json keys
under the key ``"safetab_h"`` of the stored configuration text (and of a plan file), which
is taken out before SafeTab-P's configuration is checked; no change of schema. A plan
without it is stored exactly as before.

Every failure is a `ScenarioError` in plain words (a `ValueError`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from calculators.config import ConfigError, SafeTabConfig, decode_utf8, echo, loads_unique
from calculators.safetab_h import SafeTabHConfig
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
#: 3: every change kept as a version with its author and time (``versions``, ``purged``).
_SCHEMA_VERSION = 3
#: The author of a change when nobody signs in (local mode, see `ui.core.auth`).
LOCAL = "local"
#: The author of what a store held before it kept versions (or of a row another program wrote).
UNKNOWN_AUTHOR = "unknown (saved before versions were kept)"
#: The most versions (or deleted scenarios) one listing shows; the store keeps them all.
MAX_LISTED = 1_000
#: The key of the SafeTab-H plan in a stored configuration text and in a plan file.
H_KEY = "safetab_h"
#: What each kind of version is called on the page and in the memo.
ACTIONS = {
    "create": "saved",
    "replace": "replaced",
    "rename": "renamed",
    "note": "note changed",
    "delete": "deleted",
    "restore": "restored",
    "migrated": "kept from before versions were recorded",
}


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
    #: Its number in the decision record (kept across renames; 0: not recorded yet).
    sid: int = 0
    #: Its latest version and who made it (0 and "" in a store not yet migrated).
    version: int = 0
    author: str = ""
    #: The SafeTab-H plan kept beside SafeTab-P's (None: none was saved with it).
    h_config: SafeTabHConfig | None = None

    @property
    def ok(self) -> bool:
        return self.config is not None

    @property
    def version_label(self) -> str:
        """E.g. "version 3 by ana@example.org, 2026-12-06 09:14 UTC" ("" if not recorded)."""
        return version_label(self.version, self.author, self.modified)


@dataclass(frozen=True)
class Version:
    """One change of a scenario: what it was after the change (for a delete: what was
    deleted), who made it and when."""

    sid: int
    number: int
    action: str
    author: str
    at: str
    scenario: Scenario

    @property
    def label(self) -> str:
        return version_label(self.number, self.author, self.at)

    @property
    def what(self) -> str:
        return ACTIONS.get(self.action, self.action)


def version_label(number: int, author: str, at: str) -> str:
    """How a version is named on the page and in the memo."""
    if not number:
        return ""
    when = at.replace("T", " ")[:16]
    return f"version {number} by {author or UNKNOWN_AUTHOR}" + (f", {when} UTC" if when else "")


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
        # config, targets and note as found: a row another program wrote is kept as it is
        con.execute(
            "CREATE TABLE IF NOT EXISTS versions ("
            " id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " sid INTEGER,"
            " number INTEGER NOT NULL,"
            " action TEXT NOT NULL,"
            " author TEXT NOT NULL,"
            " at TEXT NOT NULL,"
            " name TEXT NOT NULL,"
            " config, targets, note, created)"
        )
        con.execute("CREATE INDEX IF NOT EXISTS versions_sid ON versions (sid, number)")
        con.execute("CREATE TABLE IF NOT EXISTS purged (sid INTEGER NOT NULL, name TEXT NOT NULL, versions INTEGER "
                    "NOT NULL, author TEXT NOT NULL, at TEXT NOT NULL)")
        if version < 2:
            _rename_duplicates(con)
        _adopt(con)
        if version < _SCHEMA_VERSION:
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
            live = _live(con)
        out = []
        for row in rows:
            why = _bad_name(row[1])
            if why:
                self.skipped.append(f"row {row[0]}: {why}")
            else:
                out.append(_with_version(_scenario(*row[1:]), live))
        return out

    def names(self) -> list[str]:
        return [s.name for s in self.all()]

    def get(self, name: str) -> Scenario:
        name = clean_name(name)
        with self._connect(write=False) as con:
            row, live = None, {}
            if con is not None and _has_table(con):
                rowid = _find(con, name)
                if rowid is not None:
                    row = con.execute("SELECT name, config, targets, note, created, modified FROM scenarios "
                                      "WHERE rowid = ?", (rowid,)).fetchone()
                    live = _live(con)
        if row is None:
            raise ScenarioError(f"there is no scenario named {name!r}")
        return _with_version(_scenario(*row), live)

    def exists(self, name: str) -> bool:
        try:
            self.get(name)
        except ScenarioError:
            return False
        return True

    def history(self, name_or_sid: str | int) -> list[Version]:
        """Every version of a scenario (by its name, or its `sid` for a deleted one),
        newest first (at most `MAX_LISTED`)."""
        with self._connect(write=False) as con:
            sid = self._sid(con, name_or_sid)
            rows = con.execute(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE sid = ? ORDER BY number DESC LIMIT ?",
                               (sid, MAX_LISTED)).fetchall()
        return [_version(*r) for r in rows]

    def version(self, name_or_sid: str | int, number: int) -> Version:
        """One version of a scenario (see `history`)."""
        with self._connect(write=False) as con:
            sid = self._sid(con, name_or_sid)
            row = con.execute(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE sid = ? AND number = ?",
                              (sid, int(number))).fetchone()
        if row is None:
            raise ScenarioError(f"scenario {name_or_sid!r} has no version {number}")
        return _version(*row)

    def deleted(self) -> list[Version]:
        """The deleted scenarios (each as its deleting version: what was deleted, by whom,
        when), most recently deleted first."""
        with self._connect(write=False) as con:
            if con is None or not _has_versions(con):
                return []
            rows = con.execute(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE action = 'delete' AND number = "
                               "(SELECT MAX(number) FROM versions v WHERE v.sid = versions.sid) "
                               "ORDER BY at DESC, id DESC LIMIT ?", (MAX_LISTED,)).fetchall()
        return [_version(*r) for r in rows]

    def purged(self) -> list[tuple[int, str, int, str, str]]:
        """The purge log, newest first: (sid, name, versions removed, by whom, when)."""
        with self._connect(write=False) as con:
            if con is None or con.execute("SELECT 1 FROM sqlite_master WHERE name = 'purged'").fetchone() is None:
                return []
            return con.execute("SELECT sid, name, versions, author, at FROM purged ORDER BY rowid DESC LIMIT ?",
                               (MAX_LISTED,)).fetchall()

    def _sid(self, con: sqlite3.Connection | None, name_or_sid: str | int) -> int:
        if con is None or not _has_versions(con):
            raise ScenarioError(f"scenario {name_or_sid!r} has no recorded history yet (its history starts with its "
                                "next change)")
        if isinstance(name_or_sid, int):
            if con.execute("SELECT 1 FROM versions WHERE sid = ?", (name_or_sid,)).fetchone() is None:
                raise ScenarioError(f"there is no scenario number {name_or_sid} in the record")
            return name_or_sid
        name = clean_name(name_or_sid)
        rowid = _find(con, name)
        found = _live(con).get(con.execute("SELECT name FROM scenarios WHERE rowid = ?", (rowid,)).fetchone()[0]) \
            if rowid is not None else None
        if found is None:
            raise ScenarioError(f"there is no scenario named {name!r}" + (
                " with a recorded history (its history starts with its next change)" if rowid is not None else ""))
        return found[0]

    # ---- writing
    def save(self, name: str, config: SafeTabConfig, targets: Mapping[str, Any] | None = None,
             note: str = "", overwrite: bool = False, by: str = LOCAL,
             h_config: SafeTabHConfig | None = None) -> Scenario:
        """Store a plan under `name`, as a new version by `by`, with its SafeTab-H plan if
        given. An existing scenario of that name (after `name_key`) is replaced only with
        overwrite=True (it keeps its creation time, and what it held stays in its history)."""
        name = _new_name(name)
        note = _clean_note(note)
        by = _clean_author(by)
        cfg_text = config.to_json() if h_config is None else \
            json.dumps({**config.to_dict(), H_KEY: h_config.to_dict()}, indent=2) + "\n"
        tgt_text = json.dumps(clean_targets(targets), sort_keys=True)
        stamp = now()
        with self._connect(write=True) as con:
            rowid = _find(con, name)
            if rowid is not None and not overwrite:  # e.g. another user saved this name a moment ago
                old, modified = con.execute("SELECT name, modified FROM scenarios WHERE rowid = ?", (rowid,)).fetchone()
                _sid, number, author = _live(con).get(old, (0, 0, ""))
                raise ScenarioError(f"a scenario named {old!r} exists already"
                                    + (f" ({version_label(number, author, modified)})" if number else "")
                                    + "; choose another name or replace it (what it holds stays in its history)")
            if rowid is None:
                self._room(con)
                con.execute("INSERT INTO scenarios (name, config, targets, note, created, modified) "
                            "VALUES (?, ?, ?, ?, ?, ?)", (name, cfg_text, tgt_text, note, stamp, stamp))
                _record(con, None, "create", by, stamp, (name, cfg_text, tgt_text, note, stamp))
            else:
                sid = _sid_of_row(con, rowid)
                con.execute("UPDATE scenarios SET name = ?, config = ?, targets = ?, note = ?, modified = ? "
                            "WHERE rowid = ?", (name, cfg_text, tgt_text, note, stamp, rowid))
                _record_row(con, sid, "replace", by, stamp, rowid)
        return self.get(name)

    def rename(self, old: str, new: str, by: str = LOCAL) -> Scenario:
        """Give a scenario another name (a change of case or spelling only is allowed)."""
        old, new, by = clean_name(old), _new_name(new), _clean_author(by)
        with self._connect(write=True) as con:
            rowid = _existing(con, old)
            clash = _find(con, new)
            if clash is not None and clash != rowid:
                taken = con.execute("SELECT name FROM scenarios WHERE rowid = ?", (clash,)).fetchone()[0]
                raise ScenarioError(f"a scenario named {taken!r} exists already")
            sid, stamp = _sid_of_row(con, rowid), now()
            con.execute("UPDATE scenarios SET name = ?, modified = ? WHERE rowid = ?", (new, stamp, rowid))
            _record_row(con, sid, "rename", by, stamp, rowid)
        return self.get(new)

    def delete(self, name: str, by: str = LOCAL) -> Version:
        """Move a scenario to the deleted scenarios (its versions stay; `restore` brings
        it back). Returns the deleting version."""
        name, by = clean_name(name), _clean_author(by)
        with self._connect(write=True) as con:
            rowid = _existing(con, name)
            sid, stamp = _sid_of_row(con, rowid), now()
            number = _record_row(con, sid, "delete", by, stamp, rowid)
            con.execute("DELETE FROM scenarios WHERE rowid = ?", (rowid,))
        return self.version(sid, number)

    def restore(self, sid: int, by: str = LOCAL, name: str | None = None) -> Scenario:
        """Bring a deleted scenario back, under its name or `name` (anyone may)."""
        by = _clean_author(by)
        with self._connect(write=True) as con:
            last = _deleted_version(con, sid)
            name = _new_name(name if name and name.strip() else last.scenario.name)
            clash = _find(con, name)
            if clash is not None:
                taken = con.execute("SELECT name FROM scenarios WHERE rowid = ?", (clash,)).fetchone()[0]
                raise ScenarioError(f"a scenario named {taken!r} exists already; restore it under another name")
            self._room(con)
            stamp = now()
            _n, cfg, tgt, note, created = con.execute(
                "SELECT name, config, targets, note, created FROM versions WHERE sid = ? AND number = ?",
                (sid, last.number)).fetchone()
            content = (name, cfg, tgt if tgt is not None else "{}", note if note is not None else "",
                       created if isinstance(created, str) else stamp)
            con.execute("INSERT INTO scenarios (name, config, targets, note, created, modified) "
                        "VALUES (?, ?, ?, ?, ?, ?)", (*content, stamp))
            _record(con, sid, "restore", by, stamp, content)
        return self.get(name)

    def purge(self, sid: int, by: str) -> int:
        """Remove a deleted scenario and every version of it for good (an operator's
        decision, checked by the page: `ui.core.auth`); logged in ``purged``. Returns how
        many versions were removed."""
        by = _clean_author(by)
        with self._connect(write=True) as con:
            last = _deleted_version(con, sid)
            n = con.execute("DELETE FROM versions WHERE sid = ?", (sid,)).rowcount
            con.execute("INSERT INTO purged (sid, name, versions, author, at) VALUES (?, ?, ?, ?, ?)",
                        (sid, last.scenario.name, n, by, now()))
        return n

    def set_note(self, name: str, note: str, by: str = LOCAL) -> Scenario:
        name, note, by = clean_name(name), _clean_note(note), _clean_author(by)
        with self._connect(write=True) as con:
            rowid = _existing(con, name)
            sid, stamp = _sid_of_row(con, rowid), now()
            con.execute("UPDATE scenarios SET note = ?, modified = ? WHERE rowid = ?", (note, stamp, rowid))
            _record_row(con, sid, "note", by, stamp, rowid)
        return self.get(name)

    @staticmethod
    def _room(con: sqlite3.Connection) -> None:
        count = con.execute("SELECT COUNT(*) FROM scenarios").fetchone()[0]
        if count >= MAX_SCENARIOS:
            raise ScenarioError(f"the store holds {MAX_SCENARIOS} scenarios, its limit; delete some first")


# ------------------------------------------------------------------ the record (versions)
_VERSION_COLUMNS = "sid, number, action, author, at, name, config, targets, note, created"


def _has_versions(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'versions'").fetchone() \
        is not None


def _live(con: sqlite3.Connection) -> dict[str, tuple[int, int, str]]:
    """The live scenarios of the record: name -> (sid, latest version, its author), from
    each scenario's latest version unless it is a delete ({} before schema 3)."""
    if not _has_versions(con):
        return {}
    rows = con.execute("SELECT v.sid, v.number, v.name, v.author FROM versions v JOIN "
                       "(SELECT sid, MAX(number) AS n FROM versions GROUP BY sid) m "
                       "ON v.sid = m.sid AND v.number = m.n WHERE v.action != 'delete'").fetchall()
    return {name: (sid, number, author) for sid, number, name, author in rows}


def _with_version(s: Scenario, live: Mapping[str, tuple[int, int, str]]) -> Scenario:
    sid, number, author = live.get(s.name, (0, 0, ""))
    return replace(s, sid=sid, version=number, author=author)


def _record(con: sqlite3.Connection, sid: int | None, action: str, author: str, at: str,
            content: tuple[Any, Any, Any, Any, Any]) -> int:
    """Append a version (content = name, config, targets, note, created); a new
    scenario (sid None) takes the id of its first version as its number. Returns the
    version's number."""
    if sid is None:
        cur = con.execute("INSERT INTO versions (sid, number, action, author, at, name, config, targets, note, created)"
                          " VALUES (NULL, 1, ?, ?, ?, ?, ?, ?, ?, ?)", (action, author, at, *content))
        con.execute("UPDATE versions SET sid = id WHERE id = ?", (cur.lastrowid,))
        return 1
    number = con.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM versions WHERE sid = ?", (sid,)).fetchone()[0]
    con.execute("INSERT INTO versions (sid, number, action, author, at, name, config, targets, note, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (sid, number, action, author, at, *content))
    return number


def _record_row(con: sqlite3.Connection, sid: int, action: str, author: str, at: str, rowid: int) -> int:
    """Append a version holding the scenarios row `rowid` as it is now."""
    row = con.execute("SELECT name, config, targets, note, created FROM scenarios WHERE rowid = ?", (rowid,)).fetchone()
    return _record(con, sid, action, author, at, row)


def _sid_of_row(con: sqlite3.Connection, rowid: int) -> int:
    name = con.execute("SELECT name FROM scenarios WHERE rowid = ?", (rowid,)).fetchone()[0]
    return _live(con)[name][0]  # every named row has a live version (`_adopt`, at the start of each write)


def _adopt(con: sqlite3.Connection) -> None:
    """Make the record match the table of live scenarios (run by every write, so it
    also migrates a store of schema 2): a row without a live version (kept from before
    versions, or written by another program) gets one ("migrated", `UNKNOWN_AUTHOR`);
    a live version whose row is gone (removed by another program) gets a delete, so
    that it is listed among the deleted scenarios and can be restored."""
    live = _live(con)
    names = set()
    for row in con.execute("SELECT name, config, targets, note, created, modified FROM scenarios ORDER BY rowid") \
            .fetchall():
        if not isinstance(row[0], str):
            continue  # skipped by `all()`, left untouched
        names.add(row[0])
        if row[0] not in live:
            _record(con, None, "migrated", UNKNOWN_AUTHOR, row[5] if isinstance(row[5], str) and row[5] else now(),
                    row[:5])
    for name, (sid, _n, _a) in live.items():
        if name not in names:
            last = con.execute("SELECT name, config, targets, note, created FROM versions WHERE sid = ? "
                               "ORDER BY number DESC LIMIT 1", (sid,)).fetchone()
            _record(con, sid, "delete", "another program (the row was removed outside the app)", now(), last)


def _deleted_version(con: sqlite3.Connection, sid: Any) -> Version:
    """The deleting version of the deleted scenario `sid`; ScenarioError if it is not deleted."""
    row = con.execute(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE sid = ? ORDER BY number DESC LIMIT 1",
                      (int(sid),)).fetchone()
    if row is None:
        raise ScenarioError(f"there is no scenario number {sid} in the record (purged?)")
    if row[2] != "delete":
        raise ScenarioError(f"scenario {row[5]!r} is not deleted")
    return _version(*row)


def _version(sid, number, action, author, at, name, cfg, tgt, note, created) -> Version:
    return Version(sid, number, action, author, at,
                   replace(_scenario(name, cfg, tgt, note, created, at), sid=sid, version=number, author=author))


def _clean_author(by: Any) -> str:
    """Who makes a change, as recorded: the signed-in e-mail (or name), or `LOCAL`."""
    text = " ".join(str(by or "").split())[:200]
    return text or LOCAL


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
    h_config: SafeTabHConfig | None = None
    if isinstance(cfg_text, str) and f'"{H_KEY}"' in cfg_text:
        try:
            cfg_text, h_config = _split_h(cfg_text, source)
        except ConfigError as exc:
            problems += exc.problems
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
                    text(modified)[:40], tuple(problems), h_config=None if problems else h_config)


def _split_h(cfg_text: str, source: str) -> tuple[str, SafeTabHConfig | None]:
    """A stored configuration text without its SafeTab-H plan, and that plan checked
    (`SafeTabHConfig.from_dict`; ConfigError naming each problem)."""
    urlcodec.check_json_text(cfg_text, source)
    try:
        doc, changed = loads_unique(cfg_text)
    except (ValueError, RecursionError):
        return cfg_text, None  # not JSON: SafeTab-P's check says so
    if changed:
        raise ConfigError(changed[:20], source)
    if not isinstance(doc, dict) or H_KEY not in doc:
        return cfg_text, None
    h_config = SafeTabHConfig.from_dict(doc.pop(H_KEY), f"{source} (SafeTab-H plan)")
    return json.dumps(doc, indent=2), h_config


# ------------------------------------------------------------------ plan files
def file_stem(name: str) -> str:
    """A file name (without extension) for a scenario: letters, digits, spaces and
    ``-_.()`` kept, anything else (slashes, colons...) replaced by ``_``."""
    stem = "".join(ch if ch.isalnum() or ch in " -_.()" else "_" for ch in name).strip(" .")
    return stem or "plan"


def plan_file_text(name: str, config: SafeTabConfig, targets: Mapping[str, Any] | None = None,
                   note: str = "", created: str = "", modified: str = "",
                   h_config: SafeTabHConfig | None = None) -> str:
    """A plan as a JSON file that keeps its name, MOE targets and SafeTab-H plan (see module doc)."""
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
    if h_config is not None:
        doc[H_KEY] = h_config.to_dict()
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def scenario_file_text(s: Scenario) -> str:
    if s.config is None:
        raise ScenarioError(f"scenario {s.name!r} has an invalid configuration and cannot be exported")
    return plan_file_text(s.name, s.config, s.targets, s.note, s.created, s.modified, s.h_config)


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
    h_config: SafeTabHConfig | None = None


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
        try:
            h_config = SafeTabHConfig.from_dict(doc[H_KEY], filename) if H_KEY in doc else None
        except ConfigError as exc:
            raise ScenarioError(f"{filename}: the plan's SafeTab-H configuration is not valid:\n"
                                + "\n".join(f"- {p}" for p in exc.problems)) from None
        return PlanFile(name, config, targets,
                        _clean_note(doc.get("note") if isinstance(doc.get("note"), str) else ""),
                        str(doc.get("created") or "")[:40], str(doc.get("modified") or "")[:40], True, h_config)
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
