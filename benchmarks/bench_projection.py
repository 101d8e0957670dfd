"""How fast the national projection is: `python -m engine profile` against a national run,
and the projection of a whole plan (`calculators.projection.project`).

1. Projection (always): the shipped national profile (sample_data/profiles/
   nation330.profile.json.gz; with --small the shipped sample's) is read once (cold and
   cached times printed), then every plan below is projected `--reps` times:
   * "warm": the same plan again (what a redraw without a change costs: every level's
     figures are cached);
   * "one level changed": the plan with a new budget of (COUNTY, 2) each time (new noise
     scales, suppression threshold and table-error integrals for that level: what a
     change of one level's control costs in the app);
   * "whole plan": every cache of `calculators.projection` emptied first, so every level
     is computed from scratch (what a change of r or gamma costs, and the figure the
     target of 50 ms is about).
   Plans: the 2020 production plan, the sample-data plan, the 2020 plan as pure DP, the
   2020 plan with gamma = 0.3 and r = 3, and a plan of tiny budgets (every level 1e-6,
   gamma = 1e-3: noise standard deviations above 10,000, where the closed-form laws are
   used instead of tables). Median and maximum wall time and the median CPU time.
2. The panels' share of a control change in the app (always; --no-app skips it): the
   planner (gamma), adaptive-tables (Theta_1) and suppression (p) pages are driven with
   Streamlit's AppTest, each control change `--app-reps` times, with the national-outcome
   panel and with it replaced by nothing (`ui.safetab.projection_panel.outcome` patched), and the
   CPU time of each script run is compared (CPU time, not wall time: it is what the panel
   adds, whatever else loads the machine). `benchmarks/bench_app.py` measures the whole
   answer in a browser.
3. Profile against run (with --nation DIR, or --small): `python -m engine profile` and
   `python -m engine run` (secure noise) on the same nation as separate processes, one
   after the other, wall time, CPU time (user + system) and peak resident memory of each,
   and the ratio. --small generates a 5,000-person nation in a temporary folder and runs
   these commands in this process (`engine.cli.main`: the same code without the start-up
   of an interpreter, which its figures then leave out).

--small (seconds, as the test suite runs it): the shipped sample's profile, 3 projections
per plan, one page's control change once, the 5,000-person nation.

    python benchmarks/bench_projection.py                          # projection on the national profile
    python benchmarks/bench_projection.py --nation /work/data/nation330   # + profile vs run (run it under flock)
    python benchmarks/bench_projection.py --small                  # seconds

The machine's load average is printed before and after; other work on the machine
lengthens the wall times (CPU times less so).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks._shared import engine_cli, result, run_engine  # noqa: E402

#: Targets of issue 23: the projection of a whole plan, and profile time / run time.
TARGET_PROJECT_MS = 50.0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _plans():
    from calculators.config import SafeTabConfig
    from calculators.presets import production_2020

    prod = production_2020()
    plans = {"2020 production plan": prod}
    sample_cfg = REPO / "sample_data" / "params" / "config.json"
    if sample_cfg.is_file():
        plans["sample-data plan"] = SafeTabConfig.read(sample_cfg)
    plans["2020 plan as pure DP"] = prod.updated(privacy_defn="puredp")
    plans["gamma 0.3, r = 3"] = prod.updated(privacy_budget_p_stage_1_fraction=0.3, max_race_codes=3)
    plans["tiny budgets (sd > 10,000)"] = prod.updated(
        privacy_budget_p_stage_1_fraction=0.001,
        **{lvl.budget_key: 1e-6 for lvl in prod.tabulated_levels()})
    return plans


def _time(fn) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


def bench_projection(profile_path: Path, reps: int) -> list[dict]:
    from calculators.levels import PopulationGroupLevel
    from calculators.projection import project
    from engine.reports.profile import read_profile
    from ui.safetab import projection as pj

    cold, _ = _time(lambda: read_profile(profile_path))
    st = profile_path.stat()
    pj._load(str(profile_path), st.st_mtime_ns, st.st_size)
    cached, _ = _time(lambda: pj._load(str(profile_path), st.st_mtime_ns, st.st_size))
    prof = read_profile(profile_path)
    entries = sum(len(lp.adaptive.sizes) + len(lp.total_only.sizes) for lp in prof.levels.values())
    print(f"profile {profile_path.name}: {prof.name}, {prof.persons:,} persons, {entries:,} (level, size) entries, "
          f"{profile_path.stat().st_size:,} bytes; read and checked in {cold:.0f} ms (cached: {cached:.3f} ms)")
    rows = []
    county2 = PopulationGroupLevel("COUNTY", 2)
    for name, cfg in _plans().items():
        project(cfg, prof)  # first use of this plan's scales
        warm = [_time(lambda: project(cfg, prof)) for _ in range(reps)]
        base = cfg.rho(county2) or 0.159
        changed = []
        for i in range(reps):
            # a budget never seen before: new scales, threshold T and table-error integrals
            new = cfg.with_rho(county2, base * (1 + (i + 1) * 1e-3 + time.time_ns() % 997 * 1e-9))
            changed.append(_time(lambda: project(new, prof)))
        whole = []
        for _ in range(reps):
            _clear_caches()
            whole.append(_time(lambda: project(cfg, prof)))
        row = {"plan": name,
               "warm_median_ms": statistics.median(w for w, _ in warm),
               "change_median_ms": statistics.median(w for w, _ in changed),
               "whole_median_ms": statistics.median(w for w, _ in whole), "whole_max_ms": max(w for w, _ in whole),
               "whole_cpu_median_ms": statistics.median(c for _, c in whole)}
        rows.append(row)
        print(f"  {name:28s} warm {row['warm_median_ms']:5.1f} ms | one level changed {row['change_median_ms']:5.1f} "
              f"ms | whole plan {row['whole_median_ms']:6.1f} ms (max {row['whole_max_ms']:6.1f}, CPU "
              f"{row['whole_cpu_median_ms']:6.1f}) [medians]")
    return rows


def bench_app_panels(reps: int, pages: int = 3) -> list[dict]:
    """CPU time of a script run after a control change, with and without the panel."""
    from unittest import mock

    from streamlit.testing.v1 import AppTest

    from streamlit.runtime import pages_manager
    from ui.safetab import projection_panel

    original = pages_manager.PagesManager.__init__

    def init(self, *a, **k):  # as tests/app/conftest.py: run through app.py's navigation
        original(self, *a, **k)
        pages_manager.PagesManager.uses_pages_directory = False

    controls = [("budget", "w_gamma", [0.11, 0.12]), ("adaptive", "ad_t1", [900, 950]),
                ("suppression", "w_p", [0.999, 0.9999])][-pages:]
    rows = []
    with mock.patch.object(pages_manager.PagesManager, "__init__", init):
        for page, key, values in controls:
            cpu = {}
            for label, patch in (("with panel", None), ("without", lambda *a, **k: None)):
                ctx = mock.patch.object(projection_panel, "outcome", patch) if patch else mock.patch.object(
                    projection_panel, "outcome", projection_panel.outcome)
                with ctx:
                    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
                    at.run()
                    at.switch_page(f"app_pages/safetab/{page}.py").run()  # budget, adaptive, suppression
                    times = []
                    for i in range(reps + 1):
                        c = time.process_time()
                        at.text_input(key=key).input(str(values[i % 2])).run()  # typed boxes (issue 20)
                        if i:  # the first change warms the caches of this page
                            times.append((time.process_time() - c) * 1e3)
                    assert not at.exception, [e.value for e in at.exception]
                cpu[label] = statistics.median(times)
            rows.append({"page": page, "control": key, **cpu})
            print(f"  {page:12s} {key:6s} script run CPU median: {cpu['with panel']:6.0f} ms with the panel, "
                  f"{cpu['without']:6.0f} ms without (the panel adds {cpu['with panel'] - cpu['without']:5.0f} ms)")
    return rows


def _clear_caches() -> None:
    from calculators import projection as P

    for fn in (P._level_figures_cached, P._law_table, P._mean_abs_sum, P._scales_of, P._suppression_threshold):
        fn.cache_clear()


def _child(cmd: list[str], here: bool = False) -> dict:
    """Wall time, CPU time and peak memory of one child process (`here`, the small mode:
    `python -m engine ...` run in this process, `_shared.engine_cli`)."""
    if here:
        m = engine_cli(cmd[3:], here=True)
        if m.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({m.returncode}): {m.stderr[-1500:]}")
        return {"wall_s": m.wall, "cpu_s": m.cpu, "peak_gb": m.peak_gb}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")[-1500:] if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({code}): {err}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_gb": usage.ru_maxrss / 1024**2}


def bench_profile_vs_run(nation: Path, work: Path, here: bool = False) -> dict:
    params, data = nation / "params", nation / "data"
    prof = _child([sys.executable, "-m", "engine", "profile", str(params), str(data), str(work / "p.json.gz"),
                   "--synthetic", "--quiet"], here)
    print(f"  engine profile: {prof['wall_s']:8.1f} s wall, {prof['cpu_s']:8.1f} s CPU, peak {prof['peak_gb']:.2f} GB")
    run = _child([sys.executable, "-m", "engine", "run", str(params), str(data), str(work / "release"), "--quiet"],
                 here)
    print(f"  engine run:     {run['wall_s']:8.1f} s wall, {run['cpu_s']:8.1f} s CPU, peak {run['peak_gb']:.2f} GB")
    ratio = prof["wall_s"] / run["wall_s"]
    print(f"  profile / run: {ratio:.2f} (wall), {prof['cpu_s'] / run['cpu_s']:.2f} (CPU); target: profile within "
          f"the time of a run (ratio <= 1): {'met' if ratio <= 1 else 'NOT met'}"
          + (" (both in this process: the first-use costs fall on the profile; not comparable)" if here else ""))
    from engine.reports.profile import read_profile

    # the profile and the run count the same persons (the run's operator file holds its exact count)
    operator = json.loads((work / "release.CONFIDENTIAL-operator.json").read_text())
    same = read_profile(work / "p.json.gz").persons == operator["confidential"]["persons"]["counted"]
    return {"profile": prof, "run": run, "ratio": ratio, "same_persons": same}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="seconds: the sample profile and a 20,000-person nation")
    ap.add_argument("--nation", type=Path, default=None, help="a nation folder (params/, data/) for profile vs run")
    ap.add_argument("--reps", type=int, default=None, help="projections per plan (default 30; 3 with --small)")
    ap.add_argument("--app-reps", type=int, default=None, help="control changes per page (default 8; 1 with --small)")
    ap.add_argument("--no-app", action="store_true", help="skip the app measurement")
    args = ap.parse_args(argv)
    reps = args.reps or (3 if args.small else 30)
    print(f"load average before: {_load()} ({os.cpu_count()} CPUs)")
    profiles = REPO / "sample_data" / "profiles"
    path = profiles / ("sample.profile.json" if args.small else "nation330.profile.json.gz")
    figures = {}
    rows = figures["projections"] = bench_projection(path, reps)
    worst = max(r["whole_median_ms"] for r in rows if not r["plan"].startswith("tiny"))
    print(f"projection of a whole plan from scratch, slowest median (plans of usual budgets): {worst:.1f} ms "
          f"(target < {TARGET_PROJECT_MS:.0f} ms: {'met' if worst < TARGET_PROJECT_MS else 'NOT met'})")
    if not args.no_app:
        print("the national-outcome panel in a control change (AppTest, CPU time of the script run):")
        bench_app_panels(args.app_reps or (1 if args.small else 8), pages=1 if args.small else 3)
    with tempfile.TemporaryDirectory(prefix="bench-projection-") as tmp:
        work = Path(tmp)
        nation = args.nation
        if args.small and nation is None:
            nation = work / "nation"
            run_engine(["sample", "--persons", "5000", "--quiet", str(nation)], here=True)
        if nation is not None:
            print(f"profile against run on {nation}:")
            figures["profile_vs_run"] = bench_profile_vs_run(nation, work, here=args.small and args.nation is None)
    print(f"load average after: {_load()}")
    checks = {"a whole plan projected in every plan": len(rows) == len(_plans()) and all(
        r["whole_median_ms"] > 0 for r in rows)}
    if "profile_vs_run" in figures:
        checks["profile and run count the same persons"] = figures["profile_vs_run"].pop("same_persons")
    result(**figures, checks=checks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
