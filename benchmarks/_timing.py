"""The timing helpers of the benchmark scripts (run as `python benchmarks/<name>.py`): the best or the median
of repeated calls."""

import math
import statistics
import time


def best(fn, repeat: int = 5, number: int = 1, warmup: bool = True) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` runs of ``number`` calls, after one warm-up call."""
    if warmup:
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def median(fn, repeat: int = 5, warmup: bool = True, number: int = 1) -> float:
    """Seconds per call of ``fn``: the median of ``repeat`` runs of ``number`` calls, after one warm-up call."""
    if warmup:
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def interleaved(fa, fb, repeat: int = 5, warmup: bool = True, min_time: float = 0.0):
    """Medians of ``repeat`` timings of ``fa`` and of ``fb`` taken in alternation (a b, b a, a b, ...: drifts of a
    shared machine hit both alike), after one warm-up call of each. With ``min_time``, each timing is the mean of
    the fewest calls (the same number for both, at most 50) that make a timing last about ``min_time`` seconds:
    calls of a few ms are otherwise at the mercy of single preemptions on a shared machine.
    Returns (median a, median b, the ratios a/b of the ``repeat`` pairs), in seconds per call."""
    if warmup:
        fa()
        fb()
    number = 1
    if min_time > 0:
        t0 = time.perf_counter()
        fa()
        fb()
        number = max(1, min(50, math.ceil(min_time / max(time.perf_counter() - t0, 1e-9) * 2)))
    ta, tb = [], []
    for k in range(repeat):
        for fn, out in ((fa, ta), (fb, tb)) if k % 2 == 0 else ((fb, tb), (fa, ta)):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - t0) / number)
    return statistics.median(ta), statistics.median(tb), [a / b for a, b in zip(ta, tb)]


class Clock:
    """Seconds spent in wrapped functions, by label."""

    def __init__(self):
        self.spent = {}

    def wrap(self, owner, name, label):
        fn = getattr(owner, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[label] = self.spent.get(label, 0.0) + time.perf_counter() - t0

        setattr(owner, name, timed)
        return lambda: setattr(owner, name, fn)
