"""What the benchmark scripts share: synthetic nations, measured child processes, the
machine's load, the one-level workload compared with Tumult Analytics, and the
`RESULT` line of each script.

The scripts import from here only, never from each other (tests/benchmarks checks it),
so none depends on another's command line or start-up.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
#: The real 2020 spec files (../shared/reference beside the repository).
SPEC_2020 = REPO.parent / "shared" / "reference" / "safetab-p-2020"
#: The standard flag of every benchmark script: a run of seconds on tiny inputs (CI runs it).
SMALL_FLAG = "--small"


def load() -> str:
    """The load average (1, 5, 15 minutes) and the number of CPUs, as text."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def machine() -> str:
    import numpy

    return (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"numpy {numpy.__version__}")


def result(**figures) -> None:
    """Print the script's figures as one line `RESULT {json}` (what the small-mode test reads)."""
    print("RESULT " + json.dumps(figures, default=str), flush=True)


def workdir(given: Path | None, small: bool, default: str = "/tmp/safetab-bench"):
    """A context manager giving the work folder: `given`, or with the small mode a
    temporary folder removed afterwards, or `default`."""
    import contextlib
    import tempfile

    if given is None and small:
        return tempfile.TemporaryDirectory(prefix="safetab-bench-small-")
    folder = Path(given or default)
    folder.mkdir(parents=True, exist_ok=True)
    return contextlib.nullcontext(str(folder))


def spec_or_none(spec: Path | None) -> Path | None:
    """The spec folder to use: `spec` if it exists (the 2020 files by default), else None
    (the generator's own spec files)."""
    return spec if spec is not None and spec.is_dir() else None


def ensure_sample(n: int, spec: Path | None, workdir: Path, fmt: str = "txt", seed: int = 0,
                  here: bool = False) -> Path:
    """A synthetic nation of n persons under workdir (generated once, not timed):
    `python -m engine sample --persons n [--spec spec] --format fmt` (`here`: the same
    command in this process, see `engine_cli`)."""
    from engine.release.publish import is_own_output

    name = f"nation-{n}-{spec.name if spec else 'generated'}-{fmt}-seed{seed}"
    root = Path(workdir) / name
    if not is_own_output(root):  # a complete sample carries SHA256SUMS (written last)
        shutil.rmtree(root, ignore_errors=True)
        print(f"  generating {n:,} persons into {root} ...", flush=True)
        argv = ["sample", "--persons", str(n), "--format", fmt, "--seed", str(seed), "--quiet", str(root)]
        if spec is not None:
            argv[1:1] = ["--spec", str(spec)]
        run_engine(argv, here)
    return root


def run_engine(argv: list[str], here: bool = False) -> None:
    """`python -m engine ARGV` making a benchmark's inputs (not timed): a child process, or
    with `here` the same command in this process (`engine_cli`); stops the benchmark if it
    fails."""
    if not here:
        subprocess.run([sys.executable, "-m", "engine", *argv], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        return
    m = engine_cli(argv, here=True)
    if m.returncode != 0:
        raise SystemExit(f"engine {argv[0]} failed ({m.returncode}):\n{m.stderr}")


@dataclass
class Measured:
    """A child process measured by the operating system (`os.wait4`)."""

    returncode: int
    wall: float
    user: float
    sys: float
    peak_gb: float  # peak resident memory of the process (the engine runs in one process)
    load_before: str
    load_after: str
    stderr: str
    stdout: str = ""

    @property
    def cpu(self) -> float:
        return self.user + self.sys


def measure(cmd: list[str], cwd: Path = REPO, capture: bool = False) -> Measured:
    """Run cmd as a child process; wall clock, user and system CPU and peak resident
    memory of that process, and the load average before and after (`capture`: keep
    its standard output too)."""
    import tempfile

    before = load()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out if capture else subprocess.DEVNULL, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text_out = out.read().decode(errors="replace") if capture else ""
        text_err = err.read().decode(errors="replace")[-3000:]
    return Measured(proc.returncode, wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024**2, before, load(),
                    text_err, text_out)


def measure_here(fn) -> tuple[Measured, object]:
    """Call fn() in this process and measure it as `measure` measures a child: wall clock,
    user and system CPU (this process's threads and the child processes it waited for
    meanwhile), the process's peak resident memory so far, the load average before and
    after, and what fn printed (standard output and error). Returns (figures, fn's value;
    None when fn raised SystemExit, whose code is the return code).

    The small modes use it: one process pays the interpreter's and the libraries' start-up
    (about 2 s of CPU here) once, not once per command, and the same code runs."""
    import contextlib
    import io
    import resource

    before = load()
    out, err = io.StringIO(), io.StringIO()
    self0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    value, code = None, 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            value = fn()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    wall = time.perf_counter() - t0
    self1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    user = self1.ru_utime - self0.ru_utime + kids1.ru_utime - kids0.ru_utime
    system = self1.ru_stime - self0.ru_stime + kids1.ru_stime - kids0.ru_stime
    peak = max(self1.ru_maxrss, kids1.ru_maxrss) / 1024**2
    return Measured(code, wall, user, system, peak, before, load(), err.getvalue()[-3000:], out.getvalue()), value


def engine_cli(argv: list[str], here: bool = False, capture: bool = False) -> Measured:
    """`python -m engine ARGV` measured as a child process (`measure`), or with `here` in
    this process (`engine.cli.main(ARGV)`: the same code without a process start-up;
    `measure_here`)."""
    if not here:
        return measure([sys.executable, "-m", "engine", *argv], capture=capture)
    from engine.cli import main

    m, code = measure_here(lambda: main(argv))
    if m.returncode == 0 and code:
        m.returncode = code
    return m


# ------------------------------------------------------------------ the one-level workload
#: Tumult Analytics comparison: (COUNTY, 2) noisy totals at the 2020 budget.
TUMULT_RHO = 0.159
TUMULT_LEVEL = ("COUNTY", 2)


def one_level(params: str, data: str, rho: float = TUMULT_RHO) -> dict:
    """The comparison workload with this engine, from the files to the noisy counts in
    memory: read and count the persons, flat-map them to the (county, sub-state
    Detailed iteration) groups, one exact discrete Gaussian draw per group (secure
    noise). US only, as the Tumult side."""
    t0 = time.perf_counter()
    from calculators import budget
    from calculators.config import SafeTabConfig
    from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
    from engine import noise
    from engine.run import prepare

    level = PopulationGroupLevel(*TUMULT_LEVEL)
    config = SafeTabConfig.read(Path(params) / "config.json").updated(
        run_pr=False, **{lvl.budget_key: (rho if lvl == level else 0.0) for lvl in POPULATION_GROUP_LEVELS})
    prepared = prepare(params, data, config=config)
    counts = prepared.counts(level)
    stability = prepared.stability[level]
    noisy = counts.totals() + noise.sample_discrete_gaussian(budget.sigma2_exact(rho, stability), counts.n_groups)
    return {"seconds": time.perf_counter() - t0, "groups": int(len(noisy)), "stability": stability,
            "persons": prepared.table.persons}
