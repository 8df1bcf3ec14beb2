"""Independent tasks of compiled ``nogil`` kernels on a shared thread pool, pulled one at a time.

Numba's ``prange`` cuts a loop into one static share per thread and waits for the slowest: on a machine shared with
other work, where one of the threads is descheduled, two threads then take longer than one (measured: an S¹
moment sum of 10⁶ points, 66 ms on two threads against 37 ms on one, at load 9 on two cores). Tasks pulled from a
queue by the pool's threads keep every thread busy while it runs (39 ms there) and use both cores where they are
free. Each task writes only its own outputs, so results do not depend on the thread count.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numba

__all__ = ["executor", "map_tasks", "map_ranges"]

_POOL: dict = {}

#: Operations (multiply-adds) a task must carry for threads to pay: handing a call to the pool costs ~50–90 µs
#: (measured on a 2-core Xeon: 1632 calls of two tasks each, 0.14 s of a 0.27 s run of 4 × 512 particles on S¹),
#: a compiled multiply-add ~1.3 ns (the S¹ moments of 10⁴ points at L = 25: 0.34 ms), so below ~2·10⁵ operations
#: a call runs in the calling thread. The split never changes a result (each task writes its own outputs).
MIN_TASK_WORK = 2**18


def executor(workers: int) -> ThreadPoolExecutor:
    """The library's one thread pool of ``workers`` threads (made on first use, forgotten in a forked child): the
    compiled kernels' tasks (:func:`meanfield.kernels.threads.run_tasks`) and :func:`map_tasks` run on it."""
    if workers not in _POOL:
        _POOL[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="meanfield-tasks")
    return _POOL[workers]


# a forked child inherits the executor objects but not their threads
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.clear)


def map_tasks(fn, count: int, work: float | None = None) -> list:
    """``[fn(i) for i in range(count)]``, on up to ``numba.get_num_threads()`` threads (``fn`` releases the GIL:
    a ``nogil`` kernel or ducc0), in that order; in the calling thread where the call's ``work`` (its operations,
    when given) is below :data:`MIN_TASK_WORK` per worker."""
    workers = min(int(count), numba.get_num_threads())
    if work is not None:
        workers = min(workers, max(1, int(work // MIN_TASK_WORK)))
    if workers <= 1:
        return [fn(i) for i in range(count)]
    return list(executor(workers).map(fn, range(count)))


def map_ranges(fn, count: int, tasks: int, work: float | None = None) -> list:
    """``fn(start, stop)`` on ``min(count, tasks)`` consecutive parts of ``range(count)`` (as equal as integers allow,
    in order) by :func:`map_tasks`: the split depends on ``count`` and ``tasks`` alone, never on the threads, so a
    kernel whose parts write their own outputs gives the same bits on any thread count."""
    parts = max(1, min(int(count), int(tasks)))
    edges = [int(count) * i // parts for i in range(parts + 1)]
    return map_tasks(lambda i: fn(edges[i], edges[i + 1]), parts, work=work)
