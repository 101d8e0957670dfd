"""The decision record of the scenario store (issue 42, item 3): every change a version with
who and when, deleted scenarios restored or purged, concurrent saves, and the migration of
a store written by the code before it (schema 2)."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from calculators.presets import production_2020
from ui.committee import scenarios
from tests.ui.committee.test_scenarios import _clock
from ui.committee.scenarios import ScenarioError, ScenarioStore

#: A store written by `ScenarioStore` of main at 7d96c20, before issue 42 (schema 2, WAL mode, checkpointed):
#: "County MOE 8" saved 2026-11-02 09:00 with targets and a note, then renamed to "County
#: MOE 8 (final)" at 2026-11-06 13:00; "r = 3" saved 11-03 10:30 (r = 3) and replaced
#: 11-05 12:00 (r = 4); "Été très large" saved 11-04 11:00 (r = 5, note "ünïcödé").
SCHEMA2 = Path(__file__).parent / "fixtures" / "scenarios-schema2.sqlite3"





def _t(day: int) -> str:
    return f"2026-12-{day:02d}T09:00:00+00:00"


def _summary(versions):
    return [(v.number, v.action, v.author, v.at, v.scenario.name) for v in versions]


def test_every_save_replace_rename_note_and_delete_is_a_version_with_who_and_when(store, prod, monkeypatch):
    _clock(monkeypatch, *(_t(d) for d in range(1, 9)))
    store.save("Plan", prod, {"(COUNTY, 2)": 8}, note="first", by="ana@example.org")
    store.save("plan", prod.updated(max_race_codes=3), note="second", overwrite=True, by="bo@example.org")
    store.rename("plan", "Plan B", by="ana@example.org")
    store.set_note("Plan B", "agreed", by="cy@example.org")
    s = store.get("plan b")
    assert (s.version, s.author, s.modified) == (4, "cy@example.org", _t(4))
    assert s.version_label == "version 4 by cy@example.org, 2026-12-04 09:00 UTC"
    hist = store.history("Plan B")
    assert _summary(hist) == [
        (4, "note", "cy@example.org", _t(4), "Plan B"),
        (3, "rename", "ana@example.org", _t(3), "Plan B"),
        (2, "replace", "bo@example.org", _t(2), "plan"),
        (1, "create", "ana@example.org", _t(1), "Plan"),
    ]
    # each version is the whole scenario as it was: nothing a replace or a rename overwrote is lost
    first = store.version("Plan B", 1).scenario
    assert first.config.max_race_codes == 8 and first.targets == {"(COUNTY, 2)": 8} and first.note == "first"
    assert hist[1].scenario.config.max_race_codes == 3 and hist[1].scenario.targets == {}
    assert {v.sid for v in hist} == {s.sid} and s.sid > 0
    gone = store.delete("Plan B", by="bo@example.org")
    assert (gone.number, gone.action, gone.author, gone.at) == (5, "delete", "bo@example.org", _t(5))
    assert store.names() == [] and not store.exists("Plan B")
    assert [(v.sid, v.scenario.name, v.author) for v in store.deleted()] == [(s.sid, "Plan B", "bo@example.org")]
    assert len(store.history(s.sid)) == 5  # the history of a deleted scenario, by its number
    # anyone may restore it: the plan and its history come back, the restore is a version too
    back = store.restore(s.sid, by="dee@example.org")
    assert (back.name, back.note, back.config.max_race_codes, back.version, back.author) == \
        ("Plan B", "agreed", 3, 6, "dee@example.org")
    assert back.created == _t(1) and back.modified == _t(6)
    assert store.deleted() == [] and store.history("Plan B")[0].action == "restore"


def test_a_change_without_a_signed_in_user_is_by_local(store, prod):
    store.save("mine", prod)
    store.rename("mine", "Mine")
    assert {v.author for v in store.history("Mine")} == {scenarios.LOCAL} == {"local"}


def test_restore_under_a_taken_name_asks_for_another_and_purge_removes_for_good(store, prod, monkeypatch):
    store.save("A", prod, by="ana@example.org")
    sid = store.get("A").sid
    store.delete("A", by="ana@example.org")
    store.save("a", prod.updated(max_race_codes=2), by="bo@example.org")  # the name is taken again
    with pytest.raises(ScenarioError, match="exists already; restore it under another name"):
        store.restore(sid, by="bo@example.org")
    assert store.restore(sid, by="bo@example.org", name="A (restored)").config.max_race_codes == 8
    with pytest.raises(ScenarioError, match="is not deleted"):
        store.purge(sid, by="op@example.org")  # only a deleted scenario can be purged
    store.delete("A (restored)", by="bo@example.org")
    assert store.purge(sid, by="op@example.org") == 4  # create, delete, restore, delete
    assert store.deleted() == []
    with pytest.raises(ScenarioError, match="no scenario number"):
        store.history(sid)
    with pytest.raises(ScenarioError, match="no scenario number"):
        store.restore(sid)
    (log,) = store.purged()
    assert log[:4] == (sid, "A (restored)", 4, "op@example.org")
    assert store.names() == ["a"] and len(store.history("a")) == 1  # the other scenario is untouched


def test_a_new_scenario_of_a_deleted_ones_name_has_its_own_history(store, prod):
    store.save("Same", prod)
    old = store.get("Same").sid
    store.delete("Same")
    store.save("Same", prod.updated(max_race_codes=2))
    new = store.get("Same")
    assert new.sid != old and new.version == 1
    assert [v.sid for v in store.deleted()] == [old]


def _save_replacing(path, r, barrier, out):
    barrier.wait(timeout=30)
    try:
        ScenarioStore(path).save("Shared plan", production_2020().updated(max_race_codes=r), overwrite=True,
                                 by=f"user{r}@example.org")
        out.append(r)
    except ScenarioError as exc:  # "busy" would be a loss: the test says so
        out.append(str(exc))


def test_two_users_saving_one_name_at_once_lose_neither_version(store, prod):
    store.save("Shared plan", prod)  # both users see it and press "Replace" at the same moment
    out: list = []
    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=_save_replacing, args=(store.path, r, barrier, out)) for r in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(out) == [2, 3]
    hist = store.history("Shared plan")
    assert [v.number for v in hist] == [3, 2, 1]
    kept = {(v.author, v.scenario.config.max_race_codes) for v in hist[:2]}
    assert kept == {("user2@example.org", 2), ("user3@example.org", 3)}  # neither replace is lost
    assert store.get("Shared plan").config.max_race_codes == hist[0].scenario.config.max_race_codes


def test_a_store_written_by_the_code_before_versions_is_migrated_in_place(tmp_path, prod):
    path = tmp_path / scenarios.DB_NAME
    shutil.copyfile(SCHEMA2, path)
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 2  # what today's code wrote
    store = ScenarioStore(path)
    before = {s.name: s for s in store.all()}
    assert set(before) == {"County MOE 8 (final)", "r = 3", "Été très large"}
    assert all(s.ok and s.version == 0 for s in before.values())  # read as it is: no history yet
    data = path.read_bytes()
    assert store.deleted() == [] and path.read_bytes() == data  # reading does not change the file
    with pytest.raises(ScenarioError, match="history starts with its next change"):
        store.history("r = 3")

    store.set_note("r = 3", "checked", by="ana@example.org")  # the first write migrates, in place
    after = {s.name: s for s in store.all()}
    assert set(after) == set(before)
    for name, old in before.items():
        new = after[name]
        assert new.config.to_dict() == old.config.to_dict() and new.targets == old.targets
        assert new.created == old.created
        if name != "r = 3":
            assert (new.note, new.modified) == (old.note, old.modified)
            (v,) = store.history(name)
            assert (v.number, v.action, v.author, v.at) == (1, "migrated", scenarios.UNKNOWN_AUTHOR, old.modified)
    assert after["County MOE 8 (final)"].targets == {"(COUNTY, 2)": 8}
    assert after["Été très large"].note == "ünïcödé" and after["Été très large"].config.max_race_codes == 5
    assert [(v.number, v.action, v.author) for v in store.history("r = 3")] == \
        [(2, "note", "ana@example.org"), (1, "migrated", scenarios.UNKNOWN_AUTHOR)]
    assert store.version("r = 3", 1).scenario.config.max_race_codes == 4
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 3
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == \
        [scenarios.DB_NAME]  # still one SQLite file
    store.delete("Été très large", by="bo@example.org")  # and the migrated store works as a new one does
    assert [v.scenario.note for v in store.deleted()] == ["ünïcödé"]


def test_a_row_removed_by_another_program_is_kept_among_the_deleted(store, prod):
    store.save("kept", prod)
    store.save("removed", prod.updated(max_race_codes=2), note="by hand")
    with sqlite3.connect(store.path) as con:
        con.execute("DELETE FROM scenarios WHERE name = 'removed'")
        con.execute("INSERT INTO scenarios SELECT 'added', config, targets, note, created, modified FROM scenarios "
                    "WHERE name = 'kept'")
    store.save("next", prod)  # the next write brings the record up to date
    (gone,) = store.deleted()
    assert gone.scenario.name == "removed" and gone.scenario.note == "by hand" and "another program" in gone.author
    assert store.restore(gone.sid).config.max_race_codes == 2
    assert store.history("added")[0].action == "migrated"


def test_saving_a_name_someone_has_just_taken_says_who_and_replaces_nothing(store, prod, monkeypatch):
    _clock(monkeypatch, _t(1), _t(2))
    store.save("Shared", prod, by="ana@example.org")  # saved a moment before the other user presses Save
    with pytest.raises(ScenarioError) as err:
        store.save("shared", prod.updated(max_race_codes=2), by="bo@example.org")
    assert str(err.value) == ("a scenario named 'Shared' exists already (version 1 by ana@example.org, 2026-12-01 "
                              "09:00 UTC); choose another name or replace it (what it holds stays in its history)")
    assert store.get("Shared").config.max_race_codes == 8 and len(store.history("Shared")) == 1
