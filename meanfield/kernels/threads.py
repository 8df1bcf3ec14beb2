"""Run a compiled kernel over independent tasks on threads, with results that do not depend on how.

Why not ``numba.njit(parallel=True)``: a ``prange`` kernel compiled with fast-math
flags is optimised twice when numba caches it (the parallel gufunc on its own,
then again linked into the caller that goes to the cache), so the process that
compiles a kernel and every later process that loads it from the on-disk cache
run different machine code — reassociated differently, differing in the last
bits. A study run twice from a fresh install then gives two answers, and a sweep
on dask workers disagrees with the same sweep run serially. Numba's own parallel
layer is therefore used only for kernels without fast-math flags (where LLVM may
not reassociate); the fast-math kernels are plain ``nogil`` functions over a task
range ``[start, stop)`` run here on a thread pool.

Each task writes only its own outputs, so the result is identical whatever the
number of threads and the chunking. The thread count is numba's
(``numba.get_num_threads()``: ``NUMBA_NUM_THREADS`` or ``numba.set_num_threads``).
"""

from __future__ import annotations

import functools
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

__all__ = ["run_tasks"]

@functools.cache
def _pool(nthreads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=nthreads, thread_name_prefix="meanfield-kernels")


# a forked child inherits the executor object but not its threads
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.cache_clear)


def run_tasks(kernel, ntasks: int, *args, nthreads: int | None = None, costs=None) -> None:
    """Call ``kernel(*args, start, stop)`` on contiguous chunks covering ``range(ntasks)``.

    Parameters
    ----------
    kernel : callable
        A numba ``nogil`` function writing the outputs of tasks ``start..stop-1``.
    ntasks : int
    *args
        Passed to every call before ``start, stop``.
    nthreads : int, optional
        Default ``numba.get_num_threads()``.
    costs : array_like, shape (ntasks,), optional
        The tasks' relative costs (the rows of a causal sum grow along the sequence): chunks of equal total
        cost instead of equal counts. The results do not depend on it.
    """
    nthreads = numba.get_num_threads() if nthreads is None else int(nthreads)
    if nthreads <= 1 or ntasks <= 1:
        kernel(*args, 0, ntasks)
        return
    nchunks = min(ntasks, nthreads)  # one chunk per thread
    if costs is None:  # the tasks cost the same
        bounds = [ntasks * c // nchunks for c in range(nchunks + 1)]
    else:
        total = np.cumsum(np.asarray(costs, dtype=float))
        inner = np.searchsorted(total, total[-1] * np.arange(1, nchunks) / nchunks)
        bounds = sorted({0, ntasks, *(int(b) for b in inner)})
    futures = [_pool(nthreads).submit(kernel, *args, a, b) for a, b in itertools.pairwise(bounds)]
    for f in futures:
        f.result()
