"""The timing helpers of the benchmark scripts (run as `python benchmarks/<name>.py`): the best or the median
of repeated calls."""

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


def median(fn, repeat: int = 5, warmup: bool = True) -> float:
    """Seconds per call of ``fn``: the median of ``repeat`` calls, after one warm-up call."""
    if warmup:
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
