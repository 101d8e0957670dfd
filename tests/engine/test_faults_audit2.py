"""The second fault audit's eight defects (issue 42, item 4), each reproduced through the
command line or the function a command calls, with the smallest data that shows it.

a. `accuracy --jobs 2`: a worker killed while sending its result ends the study within
   seconds (exit 1, naming the lost trial); workers end with their parent.
b. `truth`, `accuracy` and `legacy` outputs are owner-only (0700 folders, 0600 files).
c. a run killed between publishing its release and renaming its operator file into
   place: the next run puts the operator file in place (its manifest checksum matches).
d. Parquet with many tiny row groups: read in bounded memory.
e. (tests/ui/safetab/test_run_zip.py) the Run page's zip holds NOT-FOR-RELEASE.txt.
f. `profile` killed before its final link: the hidden partial file is removed next time.
g. a FIFO named person-records.parquet is named as a FIFO.
h. a profile over the sizes limit is refused once, before it is parsed.

Subprocesses are paused at a chosen point by a wrapper that signals through a file (no
test depends on timing); every wait has a deadline and every process started is killed
in teardown.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calculators.projection import MAX_PROFILE_SIZES, Profile, ProfileError
from tests.engine.conftest import Dataset
# the first fault audit's small inputs and helpers (ds: 60 persons in six blocks)
from tests.engine.test_faults import _cli, _dataset, _wait_for, ds  # noqa: F401 - ds is a fixture

REPO = Path(__file__).resolve().parents[2]
SAMPLE_PROFILE = REPO / "sample_data" / "profiles" / "sample.profile.json"
DEADLINE = 120  # seconds any wait may take before the test fails


# ------------------------------------------------------------------ helpers
@pytest.fixture
def procs():
    """Processes a test starts, each in its own process group: the group (its workers
    too) is killed in teardown, whatever the test left running."""
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            p.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:  # pragma: no cover - a grandchild holds the pipes
            pass


def _start(script: str, args, flag: Path, procs: list) -> subprocess.Popen:
    """`python -c script FLAG ARGS...` in the repository, its own process group."""
    proc = subprocess.Popen([sys.executable, "-c", script, str(flag), *map(str, args)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    procs.append(proc)
    return proc


# ------------------------------------------------------------------ g. a FIFO as the person file
def test_a_fifo_named_person_records_parquet_is_said_to_be_a_fifo(ds, capsys):
    (ds.data / "person-records.txt").unlink()
    fifo = ds.data / "person-records.parquet"
    os.mkfifo(fifo)
    code, text = _cli(["validate", ds.params, ds.data, "--quiet"], capsys)
    assert code == 1, text
    assert f"found a FIFO (named pipe) at {fifo}" in text and "expected a regular file" in text
    assert "found no file" not in text and "Traceback" not in text


def test_neither_person_file_still_names_both(ds, capsys):
    (ds.data / "person-records.txt").unlink()
    code, text = _cli(["validate", ds.params, ds.data, "--quiet"], capsys)
    assert code == 1
    assert "found no file at" in text and "(nor person-records.parquet)" in text


# ------------------------------------------------------------------ h. a profile over the sizes limit
def _profile_with_sizes(per_level: int, levels: int) -> tuple[bytes, int]:
    """The sample's profile with `levels` levels listing `per_level` sizes each; its text
    and the number of sizes it lists in all."""
    d = json.loads(SAMPLE_PROFILE.read_text())
    listed = sum(len(lv[h]["size_steps"]) for lv in d["levels"].values() for h in ("adaptive", "total_only"))
    for key in list(d["levels"])[:levels]:
        listed += per_level - len(d["levels"][key]["adaptive"]["size_steps"])
        d["levels"][key]["adaptive"] = {"size_steps": "ONES", "counts": "ONES"}
    # the text json.dumps writes for [1] * per_level, put in as text (dumping millions of
    # list items one by one took seconds)
    ones = "[" + ",".join(["1"] * per_level) + "]"
    return json.dumps(d, separators=(",", ":")).replace('"ONES"', ones).encode(), listed


def test_a_profile_over_the_sizes_limit_is_refused_once_before_it_is_parsed(monkeypatch):
    import calculators.projection as projection

    raw, listed = _profile_with_sizes(MAX_PROFILE_SIZES // 4 + 1, 6)  # 1.5 times the limit, over six levels

    def parse_refused(*a, **k):
        raise AssertionError("the JSON was parsed although its sizes could be counted first")

    monkeypatch.setattr(projection, "loads_unique", parse_refused)
    for data in (raw, gzip.compress(raw, 1)):
        with pytest.raises(ProfileError) as err:
            Profile.parse(data, "big.json")
        assert len(err.value.problems) == 1, err.value.problems
        assert f"more than {MAX_PROFILE_SIZES:,}" in err.value.problems[0]
        assert f"lists {listed:,} sizes" in err.value.problems[0]


def test_a_profile_over_the_sizes_limit_in_spelt_keys_is_said_once(monkeypatch):
    """Keys the text count cannot see (a JSON escape in "size_steps") meet the reader's own
    count, which now stops at the limit with one problem instead of one per level."""
    import calculators.projection as projection

    monkeypatch.setattr(projection, "MAX_PROFILE_SIZES", 30)
    raw = _profile_with_sizes(10, 8)[0].replace(b'"size_steps"', b'"size\\u005fsteps"')
    assert projection._sizes_listed(raw) == 0
    with pytest.raises(ProfileError) as err:
        Profile.parse(raw, "big.json")
    said = [p for p in err.value.problems if "sizes" in p]
    assert said == ["the profile lists more than 30 sizes (distinct group sizes over all its levels)"]
    assert err.value.problems[-1] == said[0]  # and nothing was checked after it


def test_the_text_count_of_sizes_is_exact_on_a_real_profile():
    import calculators.projection as projection

    raw = SAMPLE_PROFILE.read_bytes()
    prof = Profile.parse(raw, "sample")
    listed = sum(len(lp.adaptive.sizes) + len(lp.total_only.sizes) for lp in prof.levels.values())
    assert listed > 0 and projection._sizes_listed(raw) == listed


# ------------------------------------------------------------------ b. owner-only outputs of exact counts
def _modes(folder: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(folder.stat().st_mode)}
    for p in folder.rglob("*"):
        out[p.relative_to(folder).as_posix()] = stat.S_IMODE(p.lstat().st_mode)
    return out


@pytest.fixture
def open_umask():
    old = os.umask(0o022)  # the usual umask: without care, files 0644 and folders 0755
    yield
    os.umask(old)


@pytest.mark.parametrize("command, extra", [
    ("truth", []),
    ("accuracy", ["--layout", "production", "--seed", "1"]),
    ("accuracy", ["--layout", "both", "--trials", "2", "--seed", "1", "--keep-trials"]),
    ("accuracy", ["--consistency", "tree-dp", "--seed", "1"]),
    ("accuracy", ["--invariant", "STATE", "--seed", "1"]),
    ("legacy", ["--geo", "COUNTY", "--iteration-level", "2"]),
])
def test_outputs_holding_exact_counts_are_owner_only(ds, tmp_path, capsys, open_umask, command, extra):
    out = tmp_path / "out"
    code, text = _cli([command, ds.params, ds.data, out, "--quiet", *extra], capsys)
    assert code == 0, text
    modes = _modes(out)
    assert len(modes) > 3
    wrong = {k: oct(m) for k, m in modes.items() if m != (0o700 if (out / k).is_dir() else 0o600)}
    assert not wrong, wrong
    if "--layout" in extra:
        assert (out / "error_report.csv").exists()


def test_a_release_stays_readable_by_all(ds, tmp_path, capsys, open_umask):
    out = tmp_path / "rel"
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--seed", "1"], capsys)
    assert code == 0, text
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "manifest.json").stat().st_mode) == 0o644


# ------------------------------------------------------------------ f. profile killed before its final link
# Runs `python -m engine ARGS` but pauses (writing its pid to FLAG) just before the link
# that puts a new file in place: the whole profile is then in a hidden partial file.
_PAUSE_AT_LINK = r"""
import os, sys, time
from pathlib import Path
flag, argv = Path(sys.argv[1]), sys.argv[2:]
real_link = os.link
def link(src, dst, *a, **k):
    if ".partial-" in os.fspath(src):
        flag.write_text(str(os.getpid()))
        time.sleep(600)
    return real_link(src, dst, *a, **k)
os.link = link
from engine.cli import main
sys.exit(main(argv))
"""


def _partials(folder: Path, name: str) -> list[Path]:
    return sorted(folder.glob(f".{name}.partial-*"))


def test_profile_killed_before_its_link_leaves_a_partial_file_the_next_profile_removes(ds, tmp_path, capsys,
                                                                                       procs):
    out = tmp_path / "prof.json"
    flag = tmp_path / "flag"
    proc = _start(_PAUSE_AT_LINK, ["profile", ds.params, ds.data, out, "--quiet"], flag, procs)
    _wait_for(flag, proc)
    left = _partials(tmp_path, out.name)
    assert len(left) == 1 and not out.exists()
    assert stat.S_IMODE(left[0].stat().st_mode) == 0o600  # the whole confidential profile, owner-only
    assert json.loads(left[0].read_text())["confidential"] is True

    # a second profile while the first is alive does not take its file for a leftover
    code, text = _cli(["profile", ds.params, ds.data, out, "--quiet"], capsys)
    assert code == 1 and "is being written by another run" in text, text
    assert _partials(tmp_path, out.name) == left

    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=DEADLINE)
    assert _partials(tmp_path, out.name) == left  # what a killed profile leaves

    code, text = _cli(["profile", ds.params, ds.data, out, "--quiet"], capsys)
    assert code == 0, text
    assert f"Note: removed {left[0]}, left unfinished by an interrupted run" in text
    assert _partials(tmp_path, out.name) == [] and not list(tmp_path.glob(f".{out.name}.lock"))
    assert json.loads(out.read_text())["confidential"] is True
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_a_profile_refused_as_existing_still_removes_a_killed_writers_partial_file(ds, tmp_path, capsys):
    out = tmp_path / "prof.json"
    out.write_text("{}")
    left = tmp_path / f".{out.name}.partial-abcd_123"
    left.write_text('{"confidential": true}')
    other = tmp_path / ".prof.json.partial-toolong99"  # not a name the writer makes: kept
    other.write_text("mine")
    code, text = _cli(["profile", ds.params, ds.data, out, "--quiet"], capsys)
    assert code == 2 and "exists; choose a new file name" in text
    assert not left.exists() and other.exists() and out.read_text() == "{}"


# ------------------------------------------------------------------ c. killed between the release and its operator file
# Runs `python -m engine ARGS` but pauses (writing its pid to FLAG) once the release is
# published and before its operator file is renamed into place.
_PAUSE_AT_OPERATOR_FILE = r"""
import os, sys, time
from pathlib import Path
flag, argv = Path(sys.argv[1]), sys.argv[2:]
from engine.release import outputs
def place(staged, path, out_dir):
    flag.write_text(str(os.getpid()))
    time.sleep(600)
outputs._place_operator_file = place
from engine.cli import main
sys.exit(main(argv))
"""


def _killed_before_the_operator_file(ds, out: Path, flag: Path, procs, *extra) -> bytes:
    """A release run into `out`, killed once the release is published and before its
    operator file is in place; the content of its staged operator file."""
    proc = _start(_PAUSE_AT_OPERATOR_FILE, ["run", ds.params, ds.data, out, "--quiet", *extra], flag, procs)
    _wait_for(flag, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=DEADLINE)
    (staged,) = _partials(out.parent, out.name)
    return staged.read_bytes()


def _bad_inputs(tmp_path: Path) -> Dataset:
    """Spec files and a config.json that the run refuses once it holds OUT_DIR's lock."""
    bad = _dataset(tmp_path / "bad")
    (bad.params / "config.json").write_text(json.dumps({**bad.config, "max_race_codes": 0}))
    return bad


def _pair(out: Path) -> dict:
    """The operator file beside `out`, checked to belong to the release in `out`."""
    from engine.release.outputs import operator_path
    from engine.release.publish import sha256_of

    body = json.loads(operator_path(out).read_text())
    assert body["manifest_sha256"] == sha256_of(out / "manifest.json")
    return body


def test_killed_before_its_first_operator_file_the_next_run_puts_it_in_place(ds, tmp_path, capsys, procs):
    from engine.release.outputs import operator_path

    out = tmp_path / "rel"
    staged = _killed_before_the_operator_file(ds, out, tmp_path / "flag", procs)
    assert (out / "manifest.json").exists() and not operator_path(out).exists()
    # a run refused before it takes the lock leaves the staged file alone
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet"], capsys)
    assert code == 2 and "is not empty" in text, text
    assert [p.read_bytes() for p in _partials(tmp_path, out.name)] == [staged]
    # the next run that takes OUT_DIR's lock restores the pair, even one that then fails
    code, text = _cli(["run", _bad_inputs(tmp_path).params, ds.data, out, "--quiet", "--overwrite"], capsys)
    assert code == 1 and "Invalid input" in text, text
    assert f"Note: restored {operator_path(out)}" in text
    assert operator_path(out).read_bytes() == staged and _pair(out)["confidential"]
    assert _partials(tmp_path, out.name) == []
    assert stat.S_IMODE(operator_path(out).stat().st_mode) == 0o600


def test_killed_while_replacing_a_release_the_next_run_restores_the_pair(ds, tmp_path, capsys, procs):
    from engine.release.outputs import operator_path

    out = tmp_path / "rel"
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet"], capsys)
    assert code == 0, text
    first = operator_path(out).read_bytes()
    staged = _killed_before_the_operator_file(ds, out, tmp_path / "flag", procs, "--overwrite")
    assert operator_path(out).read_bytes() == first  # the replaced release's: stale now
    # the next run, which fails, leaves the release with its own operator file
    code, text = _cli(["run", _bad_inputs(tmp_path).params, ds.data, out, "--quiet", "--overwrite"], capsys)
    assert code == 1 and "Invalid input" in text, text
    assert operator_path(out).read_bytes() == staged and _pair(out)
    # and the next release replaces the pair as usual
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--overwrite"], capsys)
    assert code == 0, text
    assert operator_path(out).read_bytes() != staged and _pair(out)
    assert _partials(tmp_path, out.name) == []


def test_an_operator_file_path_taken_by_another_file_keeps_the_staged_one_and_says_so(ds, tmp_path, capsys, procs):
    from engine.release.outputs import operator_path

    out = tmp_path / "rel"
    staged = _killed_before_the_operator_file(ds, out, tmp_path / "flag", procs)
    operator_path(out).write_text("someone's notes")
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--overwrite"], capsys)
    assert code == 2, text
    (kept,) = _partials(tmp_path, out.name)
    assert kept.read_bytes() == staged and operator_path(out).read_text() == "someone's notes"
    assert f"Note: kept {kept}" in text and f"move {operator_path(out)} away" in text
    operator_path(out).unlink()
    code, text = _cli(["run", _bad_inputs(tmp_path).params, ds.data, out, "--quiet", "--overwrite"], capsys)
    assert code == 1 and operator_path(out).read_bytes() == staged and _pair(out)


def test_a_staged_operator_file_of_a_release_never_published_is_removed(ds, tmp_path, capsys, procs):
    """Killed while publishing (before the swap): no release, so its operator file goes too."""
    from engine.release.outputs import operator_path

    out = tmp_path / "rel"
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet"], capsys)
    assert code == 0, text
    stray = tmp_path / f".{out.name}.partial-abcd1234"
    body = json.loads(operator_path(out).read_text())
    stray.write_text(json.dumps({**body, "manifest_sha256": "0" * 64}))
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--overwrite"], capsys)
    assert code == 0, text
    assert f"Note: removed {stray}" in text and not stray.exists() and _pair(out)


# ------------------------------------------------------------------ d. Parquet with many tiny row groups
def _as_parquet(ds: Dataset, row_group_size: int) -> Path:
    """The dataset's person file as Parquet in row groups of `row_group_size` rows (the text file removed)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from engine.inputs.readers import PERSON_COLUMNS

    text = ds.data / "person-records.txt"
    table = pacsv.read_csv(text, parse_options=pacsv.ParseOptions(delimiter="|"),
                           convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in PERSON_COLUMNS}))
    out = ds.data / "person-records.parquet"
    pq.write_table(table, out, row_group_size=row_group_size)
    text.unlink()
    return out


def test_a_parquet_footer_too_large_to_read_is_refused_before_pyarrow_reads_it(ds, capsys, monkeypatch):
    import pyarrow.parquet as pq

    from engine.inputs import readers

    path = _as_parquet(ds, 1)  # 60 one-row groups
    footer = int.from_bytes(path.read_bytes()[-8:-4], "little")
    monkeypatch.setattr(readers, "_MAX_PARQUET_FOOTER", footer - 1, raising=False)

    def never(*a, **k):
        raise AssertionError("pyarrow parsed the footer it should not read")

    monkeypatch.setattr(pq, "ParquetFile", never)
    code, text = _cli(["validate", ds.params, ds.data, "--quiet"], capsys)
    assert code == 1, text
    assert f"person-records.parquet: found {footer:,} bytes of Parquet metadata" in text
    assert f"expected at most {footer - 1:,} bytes" in text and "row_group_size=" in text
    assert "Traceback" not in text


def test_many_tiny_row_groups_are_read_a_bounded_run_at_a_time_with_the_same_result(ds, tmp_path, capsys,
                                                                                   monkeypatch):
    import pyarrow.parquet as pq

    from engine.inputs import readers

    code, text = _cli(["run", ds.params, ds.data, tmp_path / "from-text", "--quiet", "--seed", "3"], capsys)
    assert code == 0, text
    _as_parquet(ds, 1)
    monkeypatch.setattr(readers, "_PARQUET_ROW_GROUPS", 7, raising=False)  # the bound, small enough for 60 row groups
    given = []
    real = pq.ParquetFile.iter_batches

    def spy(self, *a, row_groups=None, **k):
        given.append(row_groups)
        return real(self, *a, row_groups=row_groups, **k)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    code, text = _cli(["run", ds.params, ds.data, tmp_path / "from-parquet", "--quiet", "--seed", "3"], capsys)
    assert code == 0, text
    # every reader was given at most 7 row groups, and all 60 were read once, in order
    persons = [g for g in given if g is not None and len(g) and max(g) >= 0]
    assert persons and all(len(g) <= 7 for g in given)
    assert sum(persons, []) == list(range(60))
    for part in ("t1", "t2"):
        a = sorted((tmp_path / "from-text" / part).glob("*.csv"))
        b = sorted((tmp_path / "from-parquet" / part).glob("*.csv"))
        assert [p.name for p in a] == [p.name for p in b] and [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_tiny_row_groups_are_joined_into_batches_that_know_their_rows(ds, monkeypatch):
    from engine.errors import ProblemLog
    from engine.inputs import readers

    ds.persons[44] = ("abc",) + ds.persons[44][1:]  # row 45: a bad age
    ds.write()
    path = _as_parquet(ds, 1)
    monkeypatch.setattr(readers, "_PARQUET_ROW_GROUPS", 25, raising=False)
    log = ProblemLog()
    batches = list(readers.iter_batches(readers.DataFile(path, "parquet"), readers.PERSON_COLUMNS, log,
                                        dictionary=True))
    assert [b.table.num_rows for b in batches] == [25, 25, 10] and [b.first_line for b in batches] == [1, 26, 51]
    ages = [v for b in batches for v in readers.as_dictionary(b.table["QAGE"]).to_pylist()]
    assert ages == [p[0] for p in ds.persons]
    assert batches[1].line(44 - 25) == 45 and not log


# ------------------------------------------------------------------ a. accuracy --jobs 2: workers lost or orphaned
_WORKER_HOOKS = r"""
import os, signal, struct, sys, time
from pathlib import Path
flag, argv = Path(sys.argv[1]), sys.argv[2:]
folder = flag.parent
from multiprocessing import connection
from engine.reports import accuracy
study = os.getpid()
current = []
real_trial = accuracy._Trials.worker_trial
def worker_trial(self, t):
    current.append(t)
    (folder / f"worker-{os.getpid()}").write_text(str(t))
    if MODE == "sleep":  # every worker waits in its trial until killed
        if len(list(folder.glob("worker-*"))) >= 2:
            flag.write_text("both")
        time.sleep(600)
    return real_trial(self, t)
accuracy._Trials.worker_trial = worker_trial
real_send = connection.Connection._send_bytes
def send(self, buf):
    # the first worker to send a trial's result writes half of it, then is killed
    if MODE == "half" and os.getpid() != study and current and len(buf) > 1000:
        try:
            fd = os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return real_send(self, buf)
        os.write(fd, str(current[-1]).encode())
        os.close(fd)
        self._send(struct.pack("!i", len(buf)) + bytes(buf)[: len(buf) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    return real_send(self, buf)
connection.Connection._send_bytes = send
from engine.cli import main
sys.exit(main(argv))
"""


def _gone(pid: int) -> bool:
    """No such process, or one that has ended (a zombie not yet reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _workers_of(folder: Path) -> list[int]:
    return [int(p.name.split("-")[1]) for p in folder.glob("worker-*")]


def _lock_is_free(lock: Path) -> bool:
    import fcntl

    if not lock.exists():
        return True
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _study_args(ds: Dataset, out: Path) -> list:
    return ["accuracy", ds.params, ds.data, out, "--trials", "4", "--seed", "1", "--jobs", "2", "--quiet",
            "--layout", "both"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parallel trials run on Linux only")
def test_a_worker_killed_while_sending_its_result_ends_the_study_naming_the_trial(ds, tmp_path, procs):
    out = tmp_path / "out"
    (tmp_path / "w").mkdir()
    flag = tmp_path / "w" / "killed"
    proc = _start("MODE = 'half'\n" + _WORKER_HOOKS, _study_args(ds, out), flag, procs)
    try:
        _, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the study still waits {DEADLINE} s after a worker was killed while sending its result")
    assert proc.returncode == 1, err
    lost = int(flag.read_text())
    assert f"trial {lost + 1} of 4 was lost" in err and "killed by SIGKILL" in err, err
    assert "Nothing was written" in err and "Traceback" not in err
    # nothing partial presented as complete, the lock released, no worker left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "w"]
    assert _workers_of(tmp_path / "w") and all(_gone(pid) for pid in _workers_of(tmp_path / "w"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parallel trials run on Linux only")
def test_workers_end_with_a_killed_study_and_release_its_lock_and_pipes(ds, tmp_path, procs):
    out = tmp_path / "out"
    (tmp_path / "w").mkdir()
    flag = tmp_path / "w" / "flag"
    proc = _start("MODE = 'sleep'\n" + _WORKER_HOOKS, _study_args(ds, out), flag, procs)
    _wait_for(flag, proc)  # both workers are in their trials
    workers = _workers_of(tmp_path / "w")
    assert len(workers) == 2 and not _lock_is_free(tmp_path / ".out.lock")
    os.kill(proc.pid, signal.SIGKILL)  # the study alone, as the out-of-memory killer would
    try:
        proc.communicate(timeout=DEADLINE)  # returns once no worker holds the caller's pipes
    except subprocess.TimeoutExpired:
        pytest.fail("the workers outlived the killed study, holding its pipes")
    end = time.monotonic() + DEADLINE
    while not all(_gone(pid) for pid in workers) and time.monotonic() < end:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in workers)
    assert _lock_is_free(tmp_path / ".out.lock") and not out.exists()
