"""Where a run's time goes: wall-clock and CPU seconds per named phase.

`Phases` accumulates, per phase name, the wall-clock time and the CPU time of the
calling thread (`time.thread_time`) spent inside `with phases("name"):` blocks; work
that other threads do for a phase (the noise sampler's workers, the writer thread) is
in the process's CPU total, which `summary` adds. The manifest records both
(`timings_seconds`, `phases`), so a figure taken on a loaded machine can be read as CPU
seconds too. Timers nest: an inner phase's time is also in its outer phase.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field


def process_cpu() -> float:
    """User + system CPU seconds of this process (all threads)."""
    t = os.times()
    return t.user + t.system


@dataclass
class Phases:
    wall: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, name: str):
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - w0
            self.cpu[name] = self.cpu.get(name, 0.0) + time.thread_time() - c0

    def summary(self) -> dict:
        """{phase: {"wall": s, "main_thread_cpu": s}} rounded to milliseconds."""
        return {k: {"wall": round(self.wall[k], 3), "main_thread_cpu": round(self.cpu[k], 3)} for k in self.wall}


@contextmanager
def nothing(name: str):
    yield
