"""Bad inputs as a table of cases: each through `python -m engine validate` and `run`, exit 1,
a message naming file, line (Parquet: row), column or key, the value and what was expected,
and nothing written (SPEC §4; production's config and input validation; issue 11.4, 11.9)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from calculators.levels import POPULATION_GROUP_LEVELS
from engine.cli import main
from engine.inputs import readers, tables
from tests.engine.conftest import BLOCKS, person

REPO = Path(__file__).resolve().parents[3]


def _persons():
    return [person(), person(age=40, sex=2, races=("1020", "1010"), block=BLOCKS[4]), person(block=BLOCKS[7])]


# ---------------------------------------------------------------------- mutations
# Each acts on the written files: (dataset, monkeypatch) -> None.
def config(**changes):
    def mutate(ds, mp):
        data = json.loads((ds.params / "config.json").read_text())
        data.update(changes)
        (ds.params / "config.json").write_text(json.dumps(data))
    return mutate


def config_without(*keys):
    def mutate(ds, mp):
        data = json.loads((ds.params / "config.json").read_text())
        for k in keys:
            del data[k]
        (ds.params / "config.json").write_text(json.dumps(data))
    return mutate


def rename_key(old, new):
    def mutate(ds, mp):
        data = json.loads((ds.params / "config.json").read_text())
        data[new] = data.pop(old)
        (ds.params / "config.json").write_text(json.dumps(data))
    return mutate


def replace(folder: str, name: str, old: bytes, new: bytes):
    def mutate(ds, mp):
        path = getattr(ds, folder) / name
        raw = path.read_bytes()
        assert old in raw, (old, name)
        path.write_bytes(raw.replace(old, new, 1))
    return mutate


def append(folder: str, name: str, line: bytes):
    def mutate(ds, mp):
        path = getattr(ds, folder) / name
        path.write_bytes(path.read_bytes() + line + b"\n")
    return mutate


def header_only(folder: str, name: str):
    def mutate(ds, mp):
        path = getattr(ds, folder) / name
        path.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n")
    return mutate


def persons_as_parquet(row: int, column: str, value):
    """person-records.parquet instead of .txt, with one cell set (None = null)."""
    def mutate(ds, mp):
        txt = ds.data / "person-records.txt"
        names = txt.read_text().split("\n")[0].split("|")
        t = pacsv.read_csv(txt, parse_options=pacsv.ParseOptions(delimiter="|"),
                           convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in names}))
        cols = {c: t[c].to_pylist() for c in names}
        cols[column][row] = value
        pq.write_table(pa.table({c: pa.array(v, pa.string()) for c, v in cols.items()}),
                       ds.data / "person-records.parquet")
        txt.unlink()
    return mutate


def persons_parquet_with_list_column(column: str):
    """person-records.parquet instead of .txt, `column` a list column (one value per list)."""
    def mutate(ds, mp):
        persons_as_parquet(0, column, "1")(ds, mp)
        path = ds.data / "person-records.parquet"
        t = pq.read_table(path)
        i = t.column_names.index(column)
        pq.write_table(t.set_column(i, column, pa.array([[v] for v in t[column].to_pylist()])), path)
    return mutate


def unreadable(folder: str, name: str):
    """The file exists but reading it fails as for a user without permission (root
    reads every file, so the one function that opens input files is made to fail)."""
    def mutate(ds, mp):
        target = getattr(ds, folder) / name
        if name == "config.json":  # calculators.config opens it with os.open (never blocking on a FIFO)
            import calculators.config as cc

            real = cc.os.open

            def os_open(path, *a, **k):
                if Path(path) == target:
                    raise PermissionError(13, "Permission denied", str(path))
                return real(path, *a, **k)
            mp.setattr(cc.os, "open", os_open)
            return
        real_open = readers.open_input

        def fake(path):
            if Path(path) == target:
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path)
        mp.setattr(readers, "open_input", fake)
        import engine.inputs.tables as tables
        mp.setattr(tables, "open_input", fake)
    return mutate


RACE_IT = "race-characteristic-iterations.txt"
ETH_IT = "ethnicity-characteristic-iterations.txt"
CODES = "race-and-ethnicity-codes.txt"
MAPPING = "race-and-ethnicity-code-to-iteration.txt"
PERSONS = "person-records.txt"
GRF = "GRF-C.txt"
HUGE = 1_000_000  # characters of a huge field

# name: (mutation, fragments the message must contain)
CASES = {
    # ------------------------------------------------------------ config.json
    "config empty object": (lambda ds, mp: (ds.params / "config.json").write_text("{}"),
                            ["config.json", "29 keys are missing (every SafeTab-P key is required): max_race_codes, ",
                             ", privacy_defn"]),
    "config misspelled key": (rename_key("privacy_budget_p_level_2_county", "privacy_budget_p_level_2_conty"),
                              ["config.json", '"privacy_budget_p_level_2_conty" is not a SafeTab-P config.json key',
                               'did you mean "privacy_budget_p_level_2_county"',
                               "privacy_budget_p_level_2_county is missing"]),
    "config run_us a string": (config(run_us="Yes"), ["config.json", "run_us must be true or false", '"Yes"']),
    "config run_us 1": (config(run_us=1), ["run_us must be true or false", "(got 1)"]),
    "config allow_negative_counts a string": (config(allow_negative_counts="true"),
                                              ["allow_negative_counts", '"true"', "true or false"]),
    "config max_race_codes a string": (config(max_race_codes="8"), ["max_race_codes", '"8"', "whole number"]),
    "config max_race_codes 8.0": (config(max_race_codes=8.0), ["max_race_codes", "8.0", "whole number"]),
    "config budget a string": (config(privacy_budget_p_level_1_usa="1"),
                               ["privacy_budget_p_level_1_usa must be a number", '"1"']),
    "config budget true": (config(privacy_budget_p_level_1_usa=True),
                           ["privacy_budget_p_level_1_usa must be a number", "(got true)"]),
    "config both runs off": (config(run_us=False, run_pr=False), ["run_us and run_pr are both false"]),
    "config empty state filter": (config(state_filter_us=[]), ["state_filter_us is empty"]),
    "config duplicate state": (config(state_filter_us=["01", "02", "11", "02"]),
                               ["state_filter_us lists a state more than once", '"02"']),
    "config all budgets 0": (config(**{lvl.budget_key: 0 for lvl in POPULATION_GROUP_LEVELS}),
                             ["run_us is true but every one of its level budgets is 0",
                              "run_pr is true but every one of its level budgets is 0"]),
    "config no thresholds for a budget-0 level": (
        lambda ds, mp: (config(privacy_budget_p_level_1_aiannh=0)(ds, mp),
                        _drop_threshold(ds, "(AIANNH, 1)")),
        ["thresholds_p has no thresholds for (AIANNH, 1)"]),
    "config reader cef": (config(reader="cef"), ["config.json, key reader", "found 'cef'", 'expected "csv"']),
    "config gamma 1e-300": (config(privacy_budget_p_stage_1_fraction=1e-300),
                            ["privacy_budget_p_stage_1_fraction", "1e-300", "between 0 and 1"]),
    "config gamma 1e-40": (config(privacy_budget_p_stage_1_fraction=1e-40),
                           ["privacy_budget_p_stage_1_fraction", "1e-40"]),
    "config rho 1e-40": (config(privacy_budget_p_level_2_county=1e-40),
                         ["privacy_budget_p_level_2_county", "1e-40", "1e-06"]),
    "config not UTF-8": (lambda ds, mp: (config()(ds, mp), replace("params", "config.json", b'"csv"', b'"c\xe9v"')(ds, mp)),
                         ["config.json", "line 1", "0xe9", "not UTF-8"]),
    "config huge value": (config(reader="x" * HUGE), ["config.json", "reader", "1,000,002 characters"]),
    "config unreadable": (unreadable("params", "config.json"), ["config.json", "cannot read the file",
                                                                "Permission denied"]),
    # ------------------------------------------------------------ spec files
    "level-0 row with True/False flags": (
        replace("params", RACE_IT, b"1001|White alone|0|True|Null|Null", b"1001|White alone|0|True|False|False"),
        [RACE_IT, "line 2", "column DETAILED_ONLY", "found 'False'", "Null (level-0 rows carry Null flags)"]),
    "level-1 row with a Null flag": (
        replace("params", RACE_IT, b"2001|European alone|1|True|False|False", b"2001|European alone|1|True|Null|False"),
        [RACE_IT, "line 4", "DETAILED_ONLY", "found 'Null'", "True or False"]),
    "ethnicity level-0 row with a False flag": (
        replace("params", ETH_IT, b"4001|Not Hispanic or Latino|0|Null|Null", b"4001|Not Hispanic or Latino|0|Null|False"),
        [ETH_IT, "line 2", "COARSE_ONLY", "found 'False'", "Null"]),
    "iteration code not four digits": (
        replace("params", RACE_IT, b"3101|Angolan alone|", b"31A1|Angolan alone|"),
        [RACE_IT, "line 14", "ITERATION_CODE", "found '31A1'", "four digits"]),
    "race/ethnicity code with a leading 0": (append("params", CODES, b"0123|Zero"),
                                             [CODES, "line 8", "RACE_ETH_CODE", "found '0123'", "not starting with 0"]),
    "race and ethnicity iteration codes overlap": (append("params", ETH_IT, b"3001|Dummy|2|False|False"),
                                                   [ETH_IT, "line 6", "ITERATION_CODE", "found '3001'", "unique"]),
    "code in two iterations of one slice": (
        lambda ds, mp: (append("params", RACE_IT, b"3031|Dummy alone|2|True|False|False")(ds, mp),
                        append("params", MAPPING, b"3031|1010")(ds, mp)),
        [MAPPING, "line 28", "RACE_ETH_CODE", "found '1010'", "3001, 3031", "LEVEL=2, ALONE=True"]),
    "duplicate mapping row": (append("params", MAPPING, b"3001|1010"),
                              [MAPPING, "line 28", "found '1010'", "3001|1010 is already on line 14"]),
    # values are read as written, as production's patterns read them (they used to be
    # stripped, so ' 3101' or a header 'RACE_ETH_CODE ' passed)
    "iteration code with a space": (replace("params", RACE_IT, b"3101|Angolan alone|", b" 3101|Angolan alone|"),
                                    [RACE_IT, "line 14", "ITERATION_CODE", "found ' 3101'", "four digits",
                                     "Invalid input: 1 problem found."]),
    "LEVEL with a space": (replace("params", RACE_IT, b"3101|Angolan alone|2|", b"3101|Angolan alone|2 |"),
                           [RACE_IT, "line 14", "LEVEL", "found '2 '", "0, 1 or 2", "Invalid input: 1 problem found."]),
    "ALONE with a space": (replace("params", RACE_IT, b"3101|Angolan alone|2|True|", b"3101|Angolan alone|2| True|"),
                           [RACE_IT, "line 14", "ALONE", "found ' True'", "True or False"]),
    "mapping code with a space": (replace("params", MAPPING, b"3101|1020", b"3101| 1020"),
                                  [MAPPING, "RACE_ETH_CODE", "found ' 1020'", "a code listed in"]),
    "spec header with a space": (replace("params", CODES, b"RACE_ETH_CODE|", b"RACE_ETH_CODE |"),
                                 [CODES, "line 1", "found 'RACE_ETH_CODE |RACE_ETH_NAME'", "the header"]),
    # a spec file that cannot be read at all is one problem: the mapping rows naming its
    # codes used to be reported one by one (every row of the 2020 mapping file), hiding
    # the problems of the other files behind them
    "codes file with a wrong header": (replace("params", CODES, b"RACE_ETH_CODE|", b"RACE_CODE|"),
                                       [CODES, "line 1", "found 'RACE_CODE|RACE_ETH_NAME'",
                                        "Invalid input: 1 problem found."]),
    "codes file missing": (lambda ds, mp: (ds.params / CODES).unlink(),
                           [CODES, "found no file at", "Invalid input: 1 problem found."]),
    "race iterations file missing": (lambda ds, mp: (ds.params / RACE_IT).unlink(),
                                     [RACE_IT, "found no file at", "Invalid input: 1 problem found."]),
    "codes file header only": (header_only("params", CODES),
                               [CODES, "at least one race or ethnicity code (the file has only its header)",
                                "Invalid input: 1 problem found."]),
    "spec file not UTF-8": (replace("params", CODES, b"Basque", b"Basqu\xe9"),
                            [CODES, "line 3", "0xe9", "UTF-8"]),
    # a spec file is held in memory whole: one of 1 GB took 4.4 GB; refused before it is read
    "spec file too large": (lambda ds, mp: (mp.setattr(tables, "MAX_SPEC_BYTES", 100),
                                            append("params", CODES, b"1030|" + b"x" * 100)(ds, mp)),
                            [CODES, "found a file of 2", "bytes; expected a spec file of at most 100 bytes"]),
    "spec file unreadable": (unreadable("params", CODES), [CODES, "cannot read it", "Permission denied"]),
    # ------------------------------------------------------------ persons
    "race code after a Null": (
        replace("data", PERSONS, b"|1010|Null|Null|", b"|1010|Null|1020|"),
        [PERSONS, "line 2", "column QRACE3", "found '1020'", "a race code after a Null is an error"]),
    "HOUSEHOLDER not True/False": (replace("data", PERSONS, b"|True|01|001|000100|0001|", b"|Yes|01|001|000100|0001|"),
                                   [PERSONS, "line 2", "HOUSEHOLDER", "found 'Yes'", "True or False"]),
    "CENRACE not two digits": (replace("data", PERSONS, b"|0001|01|1010|", b"|0001|1|1010|"),
                               [PERSONS, "line 2", "CENRACE", "found '1'", "two digits"]),
    "QAGE in Arabic-Indic digits": (replace("data", PERSONS, b"030|1|", "\u0660\u0663\u0660|1|".encode()),
                                    [PERSONS, "line 2", "QAGE", "found '\u0660\u0663\u0660'", "ASCII digits"]),
    "persons not UTF-8": (replace("data", PERSONS, b"040|2|", b"0\xff0|2|"),
                          [PERSONS, "line 3", "column QAGE", "0xff", "UTF-8"]),
    "persons header only": (header_only("data", PERSONS), [PERSONS, "only its header", "at least one data row"]),
    "persons Parquet null cell": (persons_as_parquet(1, "QSEX", None),
                                  ["person-records.parquet, row 2, column QSEX", "the cell is null (empty); a value is required"]),
    "persons Parquet non-ASCII digits": (persons_as_parquet(2, "QAGE", "\u0663\u0660"),
                                         ["person-records.parquet, row 3, column QAGE", "ASCII digits"]),
    # a list column stopped pyarrow's dictionary reader with a KeyError: a traceback
    # a Parquet file has no header line: it used to be said to have "only its header"
    "persons Parquet without rows": (lambda ds, mp: (persons_as_parquet(0, "QAGE", "030")(ds, mp), pq.write_table(
        pq.read_table(ds.data / "person-records.parquet").slice(0, 0), ds.data / "person-records.parquet")),
                                     ["person-records.parquet: at least one data row (the file has no row;"]),
    "persons Parquet list column": (persons_parquet_with_list_column("QSEX"),
                                    ["person-records.parquet, column QSEX: found 'list<", "not a list, struct or map"]),
    "persons unreadable": (unreadable("data", PERSONS), [PERSONS, "cannot read it", "Permission denied"]),
    "persons huge field": (replace("data", PERSONS, b"|2000\n", b"|" + b"7" * HUGE + b"\n"),
                           [PERSONS, "line 2", "QSPAN", "1,000,000 characters"]),
    # a line longer than the reader's block (at least 1 MiB; e.g. line breaks lost): its
    # number and length, not the parser's own words
    "persons line longer than a block": (replace("data", PERSONS, b"|2000\n", b"|" + b"7" * (3 * HUGE) + b"\n"),
                                         [PERSONS, "line 2", "one record per line, at most 1,048,576 bytes long",
                                          "this line has 3,000,0", "found '030|1|"]),
    # empty lines (skipped, as Spark and pandas skip them) and a lone CR (a line break to
    # pyarrow) used to shift the line of every later row in messages
    "persons empty lines before a bad row": (
        lambda ds, mp: (replace("data", PERSONS, b"040|2|", b"999|2|")(ds, mp),
                        replace("data", PERSONS, b"\n", b"\n\n\r\n")(ds, mp)),
        [PERSONS, "line 5, column QAGE: found '999'"]),
    # lines end at LF, CRLF or a lone CR, as pyarrow, Spark and pandas end them: a file
    # with CR line ends alone was refused as a wrong header
    "persons with CR line ends and an empty line": (
        lambda ds, mp: (replace("data", PERSONS, b"040|2|", b"999|2|")(ds, mp),
                        (ds.data / PERSONS).write_bytes((ds.data / PERSONS).read_bytes().replace(b"\n", b"\r")
                                                        .replace(b"\r", b"\r\r", 1))),
        [PERSONS, "line 4, column QAGE: found '999'", "Invalid input: 1 problem found."]),
    # ------------------------------------------------------------ GRF-C
    "GRF-C header only": (header_only("data", GRF), [GRF, "only its header"]),
    "GRF-C not UTF-8": (replace("data", GRF, b"|20000|", b"|2\xe9000|"), [GRF, "line 6", "PLACEFP", "found '2\ufffd000'", "0xe9", "UTF-8"]),
    "GRF-C Arabic-Indic digits": (replace("data", GRF, b"01|003|", "01|\u0660\u0660\u0663|".encode()),
                                  [GRF, "line 5", "TABBLKCOU", "3 digits"]),
    "GRF-C columns out of order": (replace("data", GRF, b"TABBLKST|TABBLKCOU", b"TABBLKCOU|TABBLKST"),
                                   [GRF, "line 1", "TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK|PLACEFP|AIANNHCE in this order"]),
    "GRF-C empty lines before a bad row": (
        lambda ds, mp: (replace("data", GRF, b"|20000|", b"|2x000|")(ds, mp),
                        replace("data", GRF, b"\n", b"\n\n\n")(ds, mp)),
        [GRF, "line 8, column PLACEFP: found '2x000'"]),
    "GRF-C unreadable": (unreadable("data", GRF), [GRF, "cannot read it", "Permission denied"]),
    # ------------------------------------------------------------ empty after the state filter (production)
    "no person in the runs' states": (config(state_filter_us=["11"], run_pr=False),
                                      [PERSONS, "at least one person in the states of the runs",
                                       "none of the 3 persons"]),
    "no block in the runs' states": (config(state_filter_us=["04"], run_pr=False),
                                     [GRF, "at least one block in the states of the runs", "none of the 8 blocks"]),
}


def _drop_threshold(ds, key):
    data = json.loads((ds.params / "config.json").read_text())
    del data["thresholds_p"][key]
    (ds.params / "config.json").write_text(json.dumps(data))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_exits_1_naming_file_line_column_value_and_writes_nothing(name, dataset, tmp_path, capsys,
                                                                           monkeypatch):
    mutate, fragments = CASES[name]
    dataset.persons = _persons()
    dataset.write()
    mutate(dataset, monkeypatch)
    out = tmp_path / "out"
    for argv in (["validate", str(dataset.params), str(dataset.data), "--quiet"],
                 ["run", str(dataset.params), str(dataset.data), str(out), "--seed", "1", "--quiet"]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 1, f"{argv[0]}: exit {code}\n{err}"
        for frag in fragments:
            assert frag in err, f"{argv[0]}: {frag!r} not in:\n{err}"
        assert "Traceback" not in err and "Usage error" not in err
        assert len(err) < 6_000  # echoed values are cut short
        assert not out.exists()
        assert [p.name for p in tmp_path.iterdir()] == ["in"]  # nothing beside OUT_DIR either


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["persons not UTF-8", "QAGE in Arabic-Indic digits", "persons Parquet null cell",
                                  "config not UTF-8"])
def test_the_real_command_exits_1_not_2(name, dataset, tmp_path, monkeypatch):
    # These were "Usage error" (exit 2) tracebacks of pyarrow / UnicodeDecodeError.
    mutate, fragments = CASES[name]
    dataset.persons = _persons()
    dataset.write()
    mutate(dataset, monkeypatch)
    proc = subprocess.run([sys.executable, "-m", "engine", "validate", str(dataset.params), str(dataset.data),
                           "--quiet"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert all(f in proc.stderr for f in fragments) and "Traceback" not in proc.stderr


# ------------------------------------------------------------ accepted as production accepts
def test_grf_c_extra_columns_are_ignored(dataset, tmp_path, capsys):
    # The real GRF-C has many more columns; production ignores them.
    dataset.persons = _persons()
    dataset.write()
    path = dataset.data / GRF
    lines = path.read_text().splitlines()
    path.write_text("\n".join(["OIDTABBLK|" + lines[0].replace("|PLACEFP|", "|BLKGRPCE|PLACEFP|") + "|ZCTA5"]
                              + ["x|" + ln.replace("|", "|7|", 4).replace("|7|", "|", 3) + "|9" for ln in lines[1:]])
                    + "\n")
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 0, capsys.readouterr().err
    plain = tmp_path / "plain"
    dataset.root = plain
    dataset.write()
    assert main(["truth", str(dataset.params), str(dataset.data), str(tmp_path / "t1"), "--quiet"]) == 0
    assert main(["truth", str(tmp_path / "in" / "params"), str(tmp_path / "in" / "data"), str(tmp_path / "t2"),
                 "--quiet"]) == 0
    a = sorted((tmp_path / "t1" / "t1").glob("*.csv"))
    b = sorted((tmp_path / "t2" / "t1").glob("*.csv"))
    assert [p.read_text() for p in a] == [p.read_text() for p in b]  # the same tables


def test_qage_is_read_as_an_integer_as_production_does(dataset, capsys):
    dataset.persons = [person()]
    dataset.write()
    path = dataset.data / PERSONS
    path.write_bytes(path.read_bytes().replace(b"\n030|", b"\n30|", 1))
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 0, capsys.readouterr().err


def test_spec_files_with_cr_line_ends_are_read_as_production_reads_them(dataset, tmp_path, capsys):
    # pandas (production's reader of the spec files) ends a line at CRLF, LF or a lone CR;
    # a file saved with CR line ends used to be one line, refused as a wrong header
    dataset.persons = _persons()
    dataset.write()
    for name in (RACE_IT, ETH_IT, CODES, MAPPING):
        path = dataset.params / name
        path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r"))
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 0, capsys.readouterr().err
    path = dataset.params / CODES
    path.write_bytes(path.read_bytes().replace(b"\r1011|", b"\r1011|x|", 1))
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    assert f"{CODES}, line 3: found '1011|x|Basque'; expected 2 fields" in capsys.readouterr().err


def test_a_utf8_byte_order_mark_is_skipped_as_production_skips_it(dataset, tmp_path, capsys):
    # pandas (spec files, GRF-C) and pyarrow skip a UTF-8 BOM; the header checks used to
    # refuse such files ("found '\ufeffQAGE|...'; expected the header QAGE|...")
    dataset.persons = _persons()
    dataset.write()
    plain = tmp_path / "plain"
    assert main(["truth", str(dataset.params), str(dataset.data), str(plain), "--quiet"]) == 0
    for path in [*(dataset.params / n for n in (RACE_IT, ETH_IT, CODES, MAPPING)), dataset.data / PERSONS,
                 dataset.data / GRF]:
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 0, capsys.readouterr().err
    bom = tmp_path / "bom"
    assert main(["truth", str(dataset.params), str(dataset.data), str(bom), "--quiet"]) == 0
    for sub in ("t1", "t2", "suppressed"):
        a, b = sorted((plain / sub).glob("*.csv")), sorted((bom / sub).glob("*.csv"))
        assert [p.name for p in a] == [p.name for p in b] and [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    # a problem after the header is still on its line
    path = dataset.data / PERSONS
    path.write_bytes(path.read_bytes().replace(b"\n040|2|", b"\n999|2|", 1))
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    assert f"{PERSONS}, line 3, column QAGE: found '999'" in capsys.readouterr().err
