"""README.md holds exactly two set-up commands, and CI runs the second one verbatim."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _setup_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def test_readme_has_exactly_two_setup_commands():
    cmds = _setup_commands()
    assert len(cmds) == 2
    assert all("\n" not in c for c in cmds)
    assert cmds[0].endswith("streamlit run app.py") and "requirements.txt" in cmds[0]
    assert cmds[1].endswith("python -m pytest") and "requirements-test.txt" in cmds[1]


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert _setup_commands()[1] in ci


def test_app_default_input_is_shipped():
    for name in ("config.json", "race-characteristic-iterations.txt", "ethnicity-characteristic-iterations.txt",
                 "race-and-ethnicity-codes.txt", "race-and-ethnicity-code-to-iteration.txt"):
        assert (REPO / "sample_data" / "params" / name).is_file(), name
    assert (REPO / "sample_data" / "data" / "person-records.txt").is_file()
    assert (REPO / "sample_data" / "data" / "GRF-C.txt").is_file()


def test_requirements_pin_compatible_ranges():
    for name in ("requirements.txt", "requirements-test.txt"):
        for line in (REPO / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-r"):
                assert ">=" in line and "<" in line, f"{name}: {line} has no compatible range"


def test_readme_says_the_app_keeps_the_terminal_and_chromium_comes_before_the_tests():
    text = (REPO / "README.md").read_text()
    section = " ".join(text.split("## Set up", 1)[1].split("\n## ", 1)[0].split())
    first, second = section.index("streamlit run app.py"), section.index("python -m pytest")
    notes = section[first:second]  # between the two commands, where a new user reads them
    assert "keeps the terminal" in notes and "second terminal" in notes
    assert "Install Chromium **before** running the tests" in notes and "skipped" in notes
