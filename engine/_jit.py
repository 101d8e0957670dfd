"""numba compilation for the engine's kernels (`jit`): machine code cached on disk where
numba can write, else compiled in memory, never a traceback (as `engine.noise._kernel`,
issue 21: a user who can write no cache folder still runs the engine)."""

from __future__ import annotations

from numba import njit


def jit(**options):
    """`numba.njit(nogil=True, **options)`, cached on disk where numba finds a cache
    folder (the package's __pycache__, the user's cache folder, NUMBA_CACHE_DIR), else
    compiled in memory for each process (numba raises RuntimeError: no locator)."""

    def compile_(fn):
        try:
            return njit(cache=True, nogil=True, **options)(fn)
        except RuntimeError:
            return njit(cache=False, nogil=True, **options)(fn)

    return compile_
