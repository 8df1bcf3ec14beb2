"""One RK4 step of an S² density (SA β = 4, ducc0) on one and on two of ducc0's threads, against the degree L: where
a second thread pays (meanfield.domains.sphere.ducc.SHT_THREADS_FROM, the default's switch).

Each figure is the best of two medians of 7 rounds of ~0.1 s of calls, the two thread counts alternating; the ratio
t(1 thread) / t(2 threads) > 1 where the second thread pays.

Run:  python benchmarks/bench_sht_threads.py      (about a minute)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import meanfield as mf  # noqa: E402
from _anchors import problem_step  # noqa: E402
from _timing import median  # noqa: E402
from meanfield.domains.sphere import DuccBackend  # noqa: E402
from meanfield.domains.sphere.ducc import SHT_THREADS_FROM  # noqa: E402


def median_call(f, rounds=7):
    """Median over ``rounds`` of the seconds per call in ~0.1 s of calls (one warm-up call, one timed to size them)."""
    f()
    t = time.perf_counter()
    f()
    return median(f, rounds, warmup=False, number=max(1, int(0.1 / (time.perf_counter() - t))))


def main():
    model = mf.SelfAttention(4.0)
    print(f"S² density RK4 step, SA β = 4, ducc0; the default takes two threads from L = {SHT_THREADS_FROM}")
    print("| L | one thread | two threads | one / two |\n|---|---|---|---|")
    for L in (15, 31, 63, 95, 127, 191, 255, 511):
        grid = mf.SphereGrid(L, backend="ducc0")
        y = mf.Density.from_function(grid, lambda x: np.exp(2.0 * x[..., 2])).values
        step = problem_step(model, grid, y)
        t = {1: [], 2: []}
        for nthreads in (1, 2, 1, 2):
            DuccBackend.nthreads = nthreads
            t[nthreads].append(median_call(step))
        DuccBackend.nthreads = None
        one, two = min(t[1]), min(t[2])
        print(f"| {L} | {1e3 * one:.3f} ms | {1e3 * two:.3f} ms | {one / two:.2f} |", flush=True)


if __name__ == "__main__":
    main()
