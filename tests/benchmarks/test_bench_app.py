"""The pieces of benchmarks/bench_app.py that need no browser: the floor app is served
with the app's own Streamlit settings, and the CPU reading counts a process tree's CPU."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib

from benchmarks import bench_app


def test_the_floor_app_runs_with_the_apps_own_streamlit_settings():
    folder = bench_app._floor_folder()
    mine = tomllib.loads((folder / ".streamlit" / "config.toml").read_text())
    app = tomllib.loads((bench_app.ROOT / ".streamlit" / "config.toml").read_text())
    assert mine == app
    # the setting that made the old floor about 80 ms slower than the app's own rounds
    assert mine["runner"]["postScriptGC"] is False
    assert "st.fragment" in (folder / "app.py").read_text()


def test_cpu_counts_the_server_and_its_children_but_not_an_idle_tree():
    # a "server" that starts a child burning CPU for about 0.4 s, then both wait
    code = ("import subprocess, sys, time\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time\\nt = time.process_time()\\n"
            "while time.process_time() - t < 0.4: pass\\ntime.sleep(30)'])\n"
            "time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        cpu = bench_app.Cpu(proc.pid, browsers=False)  # not a browser another test may have open
        start = cpu.ms()
        time.sleep(2.0)  # the child's 0.4 s of CPU (and both interpreters' start-up) fall in here
        busy = cpu.ms() - start
        assert busy >= 350, busy
        quiet_start = cpu.ms()
        time.sleep(0.5)
        assert cpu.ms() - quiet_start <= 50  # sleeping processes use (almost) none
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the child too
        proc.wait()
    # a process that does not exist (any more) counts as nothing, without an error
    assert bench_app.Cpu(proc.pid, browsers=False).ms() == 0
