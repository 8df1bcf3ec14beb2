"""Sweep on a 2-process LocalCluster against the serial sweep, side by side (issue 7).

20 tasks (10 β × 2 seeds) of a few seconds each: SA on the circle, n = 2048, RK4
with dt = 1e-3 to t = 3 from a perturbed uniform density (FFT work, one thread
per task, so the serial run is the honest single-process baseline). The LocalCluster time includes
starting and stopping the cluster. Target: local / serial <= 0.6. The machine's load moves single
runs by ±10 %: ``--repeat`` repeats the whole comparison.

Run:  python benchmarks/bench_sweep.py [--workers 2] [--n 4096] [--repeat 3]
"""

import argparse
import time

import numpy as np

from meanfield.study import sweep

STUDY = {"name": "bench", "domain": "circle", "grid": {"n": 2048}, "initial": {"kind": "uniform-noise"},
         "time": {"t_end": 3.0, "frames": 7, "method": "rk4", "dt": 1e-3, "refine": False}}
OVER = ["beta=1:5.5:10", "seed=0,1"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n", type=int, default=2048, help="grid size: 2048 ≈ 2 s per task, 4096 ≈ 3.5 s")
    ap.add_argument("--repeat", type=int, default=1, help="repeat the comparison (the machine's load varies)")
    args = ap.parse_args(argv)
    STUDY["grid"]["n"] = args.n

    sweep({**STUDY, "time": {**STUDY["time"], "t_end": 0.01}}, ["beta=1"], scheduler="serial", output=False,
          progress=False)  # imports and caches, outside the timings
    ratios = []
    for r in range(args.repeat):
        t0 = time.perf_counter()
        serial = sweep(STUDY, OVER, scheduler="serial", output=False, progress=False)
        t_serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        local = sweep(STUDY, OVER, workers=args.workers, output=False, progress=False)
        t_local = time.perf_counter() - t0
        same = serial.drop_attrs().identical(local.drop_attrs())
        tasks = serial.sizes["beta"] * serial.sizes["seed"]
        ratios.append(t_local / t_serial)
        print(f"run {r + 1}: {tasks} tasks, {t_serial / tasks:.2f} s each on average")
        print(f"  serial sweep                 {t_serial:7.2f} s")
        print(f"  LocalCluster, {args.workers} workers     {t_local:7.2f} s   ratio {t_local / t_serial:.2f} "
              "(target <= 0.6)")
        print(f"  identical results: {same}")
    if args.repeat > 1:
        print(f"LocalCluster / serial over {args.repeat} runs: median {np.median(ratios):.2f}, "
              f"range {min(ratios):.2f}-{max(ratios):.2f}")


if __name__ == "__main__":
    main()
