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

Interrupts: a compiled call cannot be stopped, and one pairwise sum over n = 10⁵
points (10¹⁰ pairs) lasts 10–20 s on two cores. Where a deferred Ctrl-C can arrive
(:func:`meanfield.core.interrupts.armed`: the command line) the tasks therefore run in
rounds of about :data:`ROUND_SECONDS`, sized by the time the previous round took,
with :func:`meanfield.core.interrupts.check` between two rounds: the signal is honoured
within a round, never inside the kernel, and — the chunking being free — the
results are the same bits as in one round.
"""

from __future__ import annotations

import itertools
import time
from concurrent import futures

import numba
import numpy as np

from ..core import interrupts
from ..core.pool import executor

__all__ = ["run_tasks", "ROUND_SECONDS"]

#: Where a deferred interrupt can arrive, a call runs in rounds of about this many seconds (a check between two)
ROUND_SECONDS = 0.1
#: Chunks per thread in a round, claimed one at a time by whichever thread is free (the calling thread among them):
#: a thread descheduled by other work, or slower, takes fewer; one chunk per thread waited for the slowest
CHUNKS_PER_THREAD = 4
#: The first round: this share of the work (its time sizes the next); a round grows at most by ``_GROWTH``
_FIRST_SHARE, _GROWTH = 1.0 / 256, 16.0

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

    Within :func:`meanfield.core.interrupts.deferred` (:func:`meanfield.core.interrupts.armed`) the tasks run in rounds of
    about :data:`ROUND_SECONDS` with :func:`meanfield.core.interrupts.check` between two: a deferred Ctrl-C raises
    ``KeyboardInterrupt`` there (the outputs are then partly written: the caller drops them).
    """
    nthreads = max(1, numba.get_num_threads() if nthreads is None else int(nthreads))
    if ntasks <= 1:
        kernel(*args, 0, ntasks)
        return
    if costs is not None:
        costs = np.asarray(costs, dtype=float)
    if not interrupts.armed():
        _round(kernel, args, 0, ntasks, nthreads, costs)
        return
    total = np.cumsum(costs) if costs is not None else None  # work done before task k+1

    def work(a, b):  # of tasks a..b-1
        return (b - a) if total is None else total[b - 1] - (total[a - 1] if a else 0.0)

    def stop_after(a, budget):  # the first b > a whose tasks a..b-1 reach the budget: a task per thread at least
        if total is None:
            return min(ntasks, a + max(nthreads, int(budget)))
        base = total[a - 1] if a else 0.0
        return min(ntasks, max(a + nthreads, int(np.searchsorted(total, base + budget, side="left")) + 1))

    start, budget = 0, work(0, ntasks) * _FIRST_SHARE
    while start < ntasks:
        stop = stop_after(start, budget)
        t0 = time.perf_counter()
        _round(kernel, args, start, stop, nthreads, costs)
        elapsed = time.perf_counter() - t0
        done = work(start, stop)
        start = stop
        if start < ntasks:
            interrupts.check()
            budget = min(_GROWTH * done, done * ROUND_SECONDS / max(elapsed, 1e-9))


def _round(kernel, args, start: int, stop: int, nthreads: int, costs) -> None:
    """Tasks ``start..stop-1`` in :data:`CHUNKS_PER_THREAD` chunks per thread (of equal counts, or of equal costs),
    claimed one at a time by the calling thread and ``nthreads − 1`` threads of the pool; or the calling thread
    alone."""
    ntasks = stop - start
    if nthreads <= 1 or ntasks <= 1:
        kernel(*args, start, stop)
        return
    nchunks = min(ntasks, nthreads * CHUNKS_PER_THREAD)
    if costs is None:  # the tasks cost the same
        bounds = [start + ntasks * c // nchunks for c in range(nchunks + 1)]
    else:
        total = np.cumsum(costs[start:stop])
        inner = np.searchsorted(total, total[-1] * np.arange(1, nchunks) / nchunks)
        bounds = sorted({start, stop, *(start + int(b) for b in inner)})
    chunks = list(itertools.pairwise(bounds))
    claim = itertools.count()  # next() on it is atomic (the GIL): each chunk is claimed once
    # set when a chunk raised or the caller left (a Ctrl-C raised in it between two chunks): no chunk is claimed
    # after it, so the call ends once the chunks already claimed are done instead of after every remaining one
    # (the check comes before the claim: a claimed chunk always runs)
    stopped = []

    def work():
        try:
            while not stopped and (k := next(claim)) < len(chunks):
                kernel(*args, *chunks[k])
        except BaseException:
            stopped.append(True)
            raise

    helpers = [executor(nthreads).submit(work) for _ in range(min(nthreads, len(chunks)) - 1)]
    try:
        work()
    finally:  # every chunk is claimed (or none will be: `stopped`): a helper not yet started has nothing left to do
        stopped.append(True)  # (and, on a busy pool, might never start: a call made from the pool itself)
        started = [f for f in helpers if not f.cancel()]
        futures.wait(started)
    for f in started:
        f.result()
