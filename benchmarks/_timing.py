"""The one timing helper of the benchmark scripts (run as `python benchmarks/<name>.py`)."""

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
