"""
The mean-field rate on S²
=========================

The same as on the circle, on S²: W₁ between the density (spherical harmonics) and N particles, by exact optimal
transport (POT) on the grid's nodes. On S² the expected rate is W₁ ~ √(log N / N) (docs/MATH.md §4).

Full size (N up to 3000, coarsened OT with its certified bound): ``meanfield run examples/compare_sphere.toml``.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
from validation.meanfield_limit import meanfield_limit

grid = mf.SphereGrid(16)
mu0 = mf.Density.from_function(grid, lambda x: np.exp(1.5 * x[..., 2])).unit_mass()
ns = [50, 100, 200, 400]
r = meanfield_limit(mf.SelfAttention(1.0), mu0, ns=ns, t_eval=[0, 1], repeats=3, rng=0)
for t, a, ci in zip(r.t, r.exponent, r.exponent_ci):
    print(f"t = {t:g}: exponent {a:.3f}, 95% interval {np.round(ci, 3)}")

fig, ax = plt.subplots(figsize=(5.5, 4))
for k, t in enumerate(r.t):
    ax.loglog(ns, r.distances[:, :, k].mean(axis=1), "o-", label=f"t = {t:g}: N^{r.exponent[k]:.2f}")
n = np.array(ns, float)
ax.loglog(ns, 1.5 * np.sqrt(np.log(n) / n), "k--", label="√(log N / N)")
ax.set(xlabel="N", ylabel="mean W₁(μ_t, μ^N_t)", title="SA, β = 1, on S²")
ax.legend()
