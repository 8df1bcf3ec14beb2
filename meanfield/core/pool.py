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

__all__ = ["map_tasks"]

_POOL: dict = {}


def _pool(workers: int) -> ThreadPoolExecutor:
    if workers not in _POOL:
        _POOL[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="meanfield-tasks")
    return _POOL[workers]


# a forked child inherits the executor objects but not their threads
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.clear)


def map_tasks(fn, count: int) -> list:
    """``[fn(i) for i in range(count)]``, on up to ``numba.get_num_threads()`` threads (``fn`` releases the GIL:
    a ``nogil`` kernel or ducc0), in that order."""
    workers = min(int(count), numba.get_num_threads())
    if workers <= 1:
        return [fn(i) for i in range(count)]
    return list(_pool(workers).map(fn, range(count)))
