"""The scenario store (ui.committee.scenarios): named plans kept in SQLite under a data folder."""

from __future__ import annotations

import json
import sqlite3

import pytest

from ui.committee import scenarios
from ui.committee.scenarios import ScenarioError, ScenarioStore



def _clock(monkeypatch, *stamps):
    """scenarios.now() returns these times, in order (no dependence on the real clock)."""
    it = iter(stamps)
    monkeypatch.setattr(scenarios, "now", lambda: next(it))


def test_save_list_get_and_a_restart_keep_everything(store, prod, monkeypatch):
    _clock(monkeypatch, "2026-01-01T10:00:00+00:00", "2026-01-02T10:00:00+00:00")
    other = prod.updated(max_race_codes=3)
    store.save("County MOE 8", prod, {"(COUNTY, 2)": 8, "(USA, 2)": 3}, note="asked by the committee")
    store.save("r = 3", other)
    # a new store object on the same file: what an app restart sees
    again = ScenarioStore(store.path)
    listed = again.all()
    assert [s.name for s in listed] == ["r = 3", "County MOE 8"]  # most recently modified first
    s = again.get("county moe 8")  # names are found whatever their case
    assert s.name == "County MOE 8" and s.ok
    assert s.config.to_dict() == prod.to_dict()
    assert s.targets == {"(COUNTY, 2)": 8, "(USA, 2)": 3}
    assert s.note == "asked by the committee"
    assert (s.created, s.modified) == ("2026-01-01T10:00:00+00:00",) * 2
    assert again.get("r = 3").config.max_race_codes == 3


def test_overwrite_needs_consent_and_keeps_the_creation_time(store, prod, monkeypatch):
    _clock(monkeypatch, "2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00", "2026-03-01T00:00:00+00:00")
    store.save("Plan A", prod)
    with pytest.raises(ScenarioError, match="exists already"):
        store.save("PLAN a", prod.updated(max_race_codes=2))
    assert store.get("Plan A").config.max_race_codes == 8  # untouched
    s = store.save("PLAN a", prod.updated(max_race_codes=2), overwrite=True)
    assert s.name == "PLAN a" and s.config.max_race_codes == 2
    assert (s.created, s.modified) == ("2026-01-01T00:00:00+00:00", "2026-03-01T00:00:00+00:00")
    assert len(store.all()) == 1


def test_rename_and_delete(store, prod):
    store.save("A", prod)
    store.save("B", prod)
    with pytest.raises(ScenarioError, match="exists already"):
        store.rename("A", "b")
    assert store.rename("A", "a").name == "a"  # a change of case only
    assert store.rename("a", "Committee choice").name == "Committee choice"
    assert set(store.names()) == {"B", "Committee choice"}
    store.delete("committee CHOICE")
    assert store.names() == ["B"]
    with pytest.raises(ScenarioError, match="no scenario named 'A'"):
        store.delete("A")
    with pytest.raises(ScenarioError, match="no scenario named"):
        store.rename("nope", "x")
    with pytest.raises(ScenarioError, match="no scenario named"):
        store.get("nope")


@pytest.mark.parametrize("name, message", [
    ("", "needs a name"), ("   ", "needs a name"), ("x" * 81, "at most 80"), ("a\x00b", "control"),
    (None, "must be text"),
])
def test_bad_names_are_refused_in_plain_words(store, prod, name, message):
    with pytest.raises(ScenarioError, match=message):
        store.save(name, prod)
    assert not store.path.exists()  # nothing was written


def test_names_are_tidied(store, prod):
    assert store.save("  County   plan \t B ", prod).name == "County plan B"


def test_nothing_saved_means_an_empty_list_and_no_file(store):
    assert store.all() == [] and not store.exists("x") and not store.path.exists()


def test_an_invalid_stored_plan_is_listed_not_lost(store, prod):
    store.save("good", prod)
    bad = prod.to_dict() | {"max_race_codes": 99}
    with sqlite3.connect(store.path) as con:
        con.execute("INSERT INTO scenarios VALUES (?, ?, '{}', '', 'x', 'x')", ("broken", json.dumps(bad)))
    listed = {s.name: s for s in store.all()}
    assert listed["good"].ok and not listed["broken"].ok
    assert any("max_race_codes" in p for p in listed["broken"].problems)
    store.rename("broken", "broken (old version)")
    store.delete("broken (old version)")
    assert store.names() == ["good"]


def test_a_damaged_store_is_a_plain_error_naming_the_file(tmp_path, prod):
    path = tmp_path / "scenarios.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    s = ScenarioStore(path)
    with pytest.raises(ScenarioError, match="scenarios.sqlite3 could not be used"):
        s.all()
    with pytest.raises(ScenarioError, match="SAFETAB_STUDIO_DATA"):
        s.save("x", prod)


def test_a_store_of_a_newer_version_is_refused(store, prod):
    store.save("x", prod)
    with sqlite3.connect(store.path) as con:
        con.execute("PRAGMA user_version = 99")
    with pytest.raises(ScenarioError, match="newer version"):
        store.all()


def test_the_store_is_bounded(store, prod, monkeypatch):
    monkeypatch.setattr(scenarios, "MAX_SCENARIOS", 2)
    store.save("a", prod)
    store.save("b", prod)
    with pytest.raises(ScenarioError, match="limit"):
        store.save("c", prod)
    store.save("a", prod.updated(max_race_codes=2), overwrite=True)  # replacing is fine


def test_location_follows_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DATA, str(tmp_path / "elsewhere"))
    assert ScenarioStore().path == tmp_path / "elsewhere" / "scenarios.sqlite3"


def test_default_location_is_the_platform_user_data_folder(monkeypatch):
    from platformdirs import user_data_dir

    monkeypatch.delenv(scenarios.ENV_DATA, raising=False)
    assert scenarios.data_dir() == scenarios.Path(user_data_dir("safetab-p-studio", appauthor=False))
    assert scenarios.default_path().name == "scenarios.sqlite3"


def test_targets_are_cleaned():
    # the rule of urlcodec.target_problem: whole JSON numbers of persons, 1 to MAX_TARGET
    assert scenarios.clean_targets({"(COUNTY, 2)": 8, "(USA, 2)": 3.0, "(NOPE, 2)": 5, "(STATE, 1)": 0,
                                    "(TRACT, 2)": 2.5, "(PLACE, 2)": True, "(AIANNH, 2)": None,
                                    "(USA, 1)": "3", "(STATE, 2)": float("inf"), "(TRACT, 1)": 10**400}) == \
        {"(COUNTY, 2)": 8, "(USA, 2)": 3}


def test_plan_file_round_trip_keeps_name_targets_and_note(prod):
    text = scenarios.plan_file_text("Committee plan B", prod.updated(max_race_codes=4), {"(COUNTY, 2)": 9},
                                    note="for the June meeting", created="2026-01-01T00:00:00+00:00")
    doc = json.loads(text)
    assert doc["format"] == scenarios.PLAN_FORMAT and doc["name"] == "Committee plan B"
    p = scenarios.read_plan_file(text.encode(), "whatever.plan.json")
    assert p.is_plan_file and p.name == "Committee plan B" and p.note == "for the June meeting"
    assert p.config.max_race_codes == 4 and p.targets == {"(COUNTY, 2)": 9}
    assert p.created == "2026-01-01T00:00:00+00:00"


def test_a_plain_config_json_is_named_after_its_file(prod):
    p = scenarios.read_plan_file(prod.to_json().encode(), "county-moe-8.json")
    assert not p.is_plan_file and p.name == "county-moe-8" and p.targets is None
    assert p.config.to_dict() == prod.to_dict()


@pytest.mark.parametrize("data, message", [
    (b"{not json", "not valid JSON"),
    (b'{"format": "safetab-p-studio plan", "version": 7, "config": {}}', "another version"),
    (b'{"format": "safetab-p-studio plan", "version": 1}', "no \"config\""),
    (b'{"max_race_codes": 99}', "neither a plan file nor a valid config.json"),
    (b" " * 300_000, "a plan is a few kB"),
])
def test_bad_plan_files_are_refused_in_plain_words(data, message):
    with pytest.raises(ScenarioError, match=message):
        scenarios.read_plan_file(data, "upload.json")


def test_an_invalid_plan_in_a_plan_file_lists_its_problems(prod):
    doc = json.loads(scenarios.plan_file_text("x", prod))
    doc["config"]["max_race_codes"] = 0
    with pytest.raises(ScenarioError, match="max_race_codes"):
        scenarios.read_plan_file(json.dumps(doc), "x.plan.json")


def test_a_key_given_twice_in_a_plan_file_is_refused_not_resolved_silently(prod):
    text = scenarios.plan_file_text("x", prod, {"(COUNTY, 2)": 9})
    twice = text.replace('"max_race_codes": 8,', '"max_race_codes": 8, "max_race_codes": 3,', 1)
    assert twice != text
    with pytest.raises(ScenarioError, match='x.plan.json: the key "max_race_codes" appears more than once'):
        scenarios.read_plan_file(twice, "x.plan.json")
    twice = text.replace('"(COUNTY, 2)": 9', '"(COUNTY, 2)": 9, "(COUNTY, 2)": 12', 1)
    with pytest.raises(ScenarioError, match='the key "\\(COUNTY, 2\\)" appears more than once'):
        scenarios.read_plan_file(twice, "x.plan.json")


def test_a_budget_a_float_cannot_hold_in_a_plan_file_is_refused(prod):
    text = scenarios.plan_file_text("x", prod)
    tiny = text.replace('"privacy_budget_p_level_2_usa": 2.134', '"privacy_budget_p_level_2_usa": 1e-400', 1)
    assert tiny != text
    with pytest.raises(ScenarioError, match='x.plan.json: "privacy_budget_p_level_2_usa": 1e-400 cannot be used '
                                            'exactly .* would be read as 0.0'):
        scenarios.read_plan_file(tiny, "x.plan.json")
    with pytest.raises(ScenarioError, match="cannot be used exactly"):  # a config.json goes the same way
        scenarios.read_plan_file(json.dumps(prod.to_dict()).replace("2.134", "1e-400", 1), "config.json")


def test_file_stem():
    assert scenarios.file_stem("r = 3 / γ 0.2: draft") == "r _ 3 _ γ 0.2_ draft"
    assert scenarios.file_stem("../..") == "_"  # no path can be formed
    assert scenarios.file_stem("...") == "plan"


def test_hostile_plan_files_are_refused_in_plain_words():
    """Deep nesting, bytes that are not UTF-8 and oversized files: a ScenarioError, never a crash."""
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(scenarios.ScenarioError, match="nested"):
        scenarios.read_plan_file(deep.encode(), "deep.json")
    with pytest.raises(scenarios.ScenarioError, match="not UTF-8"):
        scenarios.read_plan_file(b'{"name": "caf\xe9"}', "latin1.plan.json")


# ------------------------------------------------------------------ issue 21: hostile stores and names
def _raw_insert(path, *rows):
    """Rows written by another program (or an older version), bypassing the store."""
    with sqlite3.connect(path) as con:
        con.executemany("INSERT INTO scenarios (name, config, targets, note, created, modified) "
                        "VALUES (?, ?, ?, ?, ?, ?)", rows)


def test_malformed_rows_are_skipped_and_reported_the_rest_stays_usable(store, prod):
    store.path.parent.mkdir(parents=True)
    with sqlite3.connect(store.path) as con:  # a table another program made, with no NOT NULL constraints
        con.execute("CREATE TABLE scenarios (name PRIMARY KEY, config, targets, note, created, modified)")
    store.save("good", prod, {"(COUNTY, 2)": 8})
    cfg = prod.to_json()
    _raw_insert(store.path,
                (None, cfg, "{}", "", "t", "t"),                       # NULL name
                (b"\x00blob", cfg, "{}", "", "t", "t"),                # BLOB name
                ("null config", None, "{}", "", "t", "t"),
                ("blob config", b"{}", "{}", "", "t", "t"),
                ("infinite target", cfg, '{"(COUNTY, 2)": Infinity}', "", "t", "t"),
                ("huge target", cfg, '{"(COUNTY, 2)": 1' + "0" * 400 + "}", None, None, 5))
    listed = {s.name: s for s in store.all()}
    assert sorted(store.skipped) == ["row 2: it has no name (NULL)", "row 3: its name is not text (a bytes)"]
    assert set(listed) == {"good", "null config", "blob config", "infinite target", "huge target"}
    assert listed["good"].ok and listed["good"].targets == {"(COUNTY, 2)": 8}
    assert listed["null config"].problems == ("the stored configuration is not text (NULL)",)
    assert listed["blob config"].problems == ("the stored configuration is not text (bytes)",)
    assert listed["infinite target"].problems == \
        ("MOE target of (COUNTY, 2) must be a finite number of persons (got Infinity)",)
    assert "must be from 1 to 1,000,000,000,000 persons" in listed["huge target"].problems[0]
    assert listed["huge target"].note == "" and listed["huge target"].modified == ""
    assert not any(s.ok for n, s in listed.items() if n != "good")
    store.save("another", prod)  # the store stays usable: save, rename, delete
    store.delete("infinite target")
    assert "infinite target" not in store.names() and store.get("good").ok


@pytest.mark.parametrize("first, second", [("été", "ÉTÉ"), ("Straße", "STRASSE"), ("caf\u00e9", "cafe\u0301"),
                                           ("Plan Ⅻ", "plan xii"), ("ﬁnal", "FINAL")])
def test_names_are_one_name_after_unicode_normalisation_and_case_folding(store, prod, first, second):
    store.save(first, prod)
    with pytest.raises(ScenarioError, match="exists already"):
        store.save(second, prod.updated(max_race_codes=2))
    s = store.save(second, prod.updated(max_race_codes=2), overwrite=True)  # "Replace" replaces that row
    assert store.names() == [second] and s.config.max_race_codes == 2
    assert store.get(first).name == second and store.exists(first)
    store.save("other", prod)
    with pytest.raises(ScenarioError, match="exists already"):
        store.rename("other", first)
    assert store.rename(second, first).name == first  # a change of spelling only


def test_an_older_store_with_names_that_are_now_one_is_migrated_without_loss(tmp_path, prod):
    path = tmp_path / scenarios.DB_NAME
    with sqlite3.connect(path) as con:  # the schema of version 1, which compared names by ASCII case only
        con.execute("CREATE TABLE scenarios (name TEXT PRIMARY KEY COLLATE NOCASE, config TEXT NOT NULL, targets "
                    "TEXT NOT NULL DEFAULT '{}', note TEXT NOT NULL DEFAULT '', created TEXT NOT NULL, modified TEXT "
                    "NOT NULL)")
        con.execute("PRAGMA user_version = 1")
        for i, name in enumerate(["été", "ÉTÉ", "ÉTÉ (2)"]):
            con.execute("INSERT INTO scenarios VALUES (?, ?, '{}', ?, 't', 't')", (name, prod.to_json(), str(i)))
    store = ScenarioStore(path)
    assert sorted(store.names()) == ["ÉTÉ", "ÉTÉ (2)", "été"]  # reading changes nothing
    store.save("x", prod)  # the first write migrates
    notes = {s.name: s.note for s in store.all()}
    assert notes == {"été": "0", "ÉTÉ (3)": "1", "ÉTÉ (2)": "2", "x": ""}  # every plan kept, each findable
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 3  # schema 3 keeps versions (issue 42)


def test_built_in_plan_names_cannot_be_taken(store, prod):
    for name in ("2020 production plan", "  current   PLAN ", "Sample-Data Plan"):
        with pytest.raises(ScenarioError, match="is the name of a plan the app always offers"):
            store.save(name, prod)
    store.save("mine", prod)
    with pytest.raises(ScenarioError, match="always offers"):
        store.rename("mine", "2020 Production Plan")
    assert scenarios.suggested_name("2020 production plan") == "2020 production plan (copy)"
    assert scenarios.suggested_name("County plan") == "County plan"
    store.save(scenarios.suggested_name("2020 production plan"), prod)


def _save_in_process(path, name, barrier):
    from calculators.presets import production_2020 as _prod

    barrier.wait(timeout=60)
    try:
        ScenarioStore(path).save(name, _prod())
        return "saved"
    except ScenarioError as exc:
        return str(exc)


def test_concurrent_saves_of_one_name_say_exists_already(tmp_path):
    """Six processes save one name at once (a barrier lets them go together), five times.
    The processes are forked from this one: the store's modules are loaded already, where
    each spawned process imported them again (about a second of CPU each); the race is the
    same, separate processes with their own connections to one SQLite file."""
    import multiprocessing as mp

    path = tmp_path / scenarios.DB_NAME
    ctx = mp.get_context("fork")
    results = []
    with ctx.Manager() as manager, ctx.Pool(6) as pool:
        for round_ in range(5):
            barrier = manager.Barrier(6)
            results += pool.starmap(_save_in_process, [(path, f"same {round_}", barrier)] * 6)
    assert results.count("saved") == 5, results
    others = [r for r in results if r != "saved"]
    assert len(others) == 25 and all(r.startswith("a scenario named 'same ") and "exists already" in r
                                     for r in others), others
    assert sorted(ScenarioStore(path).names()) == [f"same {i}" for i in range(5)]


def test_a_locked_store_can_still_be_read_and_a_write_says_busy(store, prod):
    store.save("before", prod)
    holder = sqlite3.connect(store.path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # another program holds the write lock
        holder.execute("UPDATE scenarios SET note = 'being written' WHERE name = 'before'")
        assert store.names() == ["before"] and store.get("before").note == ""  # reads never wait (WAL)
        with pytest.raises(ScenarioError) as err:
            store.save("during", prod)
        assert "is busy: another program or app session is writing it (waited 1 s to save the change)" \
            in str(err.value) and "move it away" not in str(err.value)
        assert scenarios.WRITE_TIMEOUT <= 1.0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.save("after", prod)
    assert sorted(store.names()) == ["after", "before"]
    with sqlite3.connect(store.path) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
