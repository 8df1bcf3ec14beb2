"""Particle kernels, side by side in one run.

1. Pairwise field at n = 4096, d = 3 (SA, β = 4): the fused numba kernel
   against a plain NumPy implementation (Gram matrix, exp, matmul), and the
   kernel with 1 thread against 2 threads.
2. The circle spectral path: one field evaluation for n = 10^6 particles, and
   its cost against n (linear), with the pairwise kernel for comparison at
   small n.

Run:  python benchmarks/bench_particles.py
"""


import numba
import numpy as np

import meanfield as mf
from meanfield import kernels
from particles import uniform_sphere
from _anchors import numpy_field
from _timing import best


def main():
    n, d, beta = 4096, 3, 4.0
    x = uniform_sphere(n, d, rng=0)
    w = np.full(n, 1 / n)
    model = mf.SelfAttention(beta)
    err = np.max(np.abs(kernels.field(model, x, w, x) - numpy_field(x, beta)))
    t_np = best(lambda: numpy_field(x, beta), repeat=3)
    numba.set_num_threads(1)
    t1 = best(lambda: kernels.field(model, x, w, x), number=5)
    numba.set_num_threads(2)
    t2 = best(lambda: kernels.field(model, x, w, x), number=5)
    print(f"pairwise field, n = {n}, d = {d}, SA beta = {beta} (max difference {err:.1e})")
    print(f"  numpy (Gram, exp, matmul)  {t_np * 1e3:8.2f} ms")
    print(f"  fused kernel, 1 thread     {t1 * 1e3:8.2f} ms   {t_np / t1:5.1f}x numpy")
    print(f"  fused kernel, 2 threads    {t2 * 1e3:8.2f} ms   {t_np / t2:5.1f}x numpy, {t1 / t2:.2f}x one thread")

    print("circle spectral path (SA beta = 4) against n")
    for n in (10**4, 10**5, 10**6):
        th = np.random.default_rng(1).uniform(0, 2 * np.pi, n)
        x = np.stack([np.cos(th), np.sin(th)], -1)
        w = np.full(n, 1 / n)
        ts = best(lambda: kernels.circle_spectral_field(x, w, x, beta), repeat=3)
        line = f"  n = {n:>8d}  spectral {ts * 1e3:8.1f} ms  ({ts / n * 1e9:5.1f} ns/particle)"
        if n <= 10**4:
            tp = best(lambda: kernels.field(model, x, w, x), repeat=3)
            line += f"   pairwise {tp * 1e3:8.1f} ms"
        print(line)


if __name__ == "__main__":
    main()
