"""The engine's errors cross process boundaries whole (a parallel study's workers)."""

from __future__ import annotations

import pickle

from engine.errors import InputError, OutputError, Problem


def test_input_and_output_errors_survive_pickling():
    problems = [Problem("person-records.txt", 3, "QAGE", "x" * 100, "an integer 0-115")]
    err = pickle.loads(pickle.dumps(InputError(problems, total=7)))
    assert isinstance(err, InputError) and err.problems == problems and err.total == 7
    assert str(err) == InputError(problems, total=7).report() and "and 6 more" in str(err)
    out = pickle.loads(pickle.dumps(OutputError("disk full", on_disk="a partial folder")))
    assert isinstance(out, OutputError) and str(out) == "disk full" and out.on_disk == "a partial folder"
