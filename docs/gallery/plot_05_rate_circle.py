"""
The mean-field rate on the circle: W₁ ~ N^{-1/2}
================================================

The empirical measure of N particles drawn from μ₀ and moved by the particle system stays within W₁ ~ N^{-1/2} of
the density solving the continuity equation (docs/MATH.md §4). :func:`validation.meanfield_limit.meanfield_limit`
solves the density, runs the particle systems for each N, measures W₁ exactly on the circle and fits the exponent
with its 95% interval.

Full size: ``meanfield run examples/compare_pde_particles.toml --plot``.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
from validation.meanfield_limit import meanfield_limit

grid = mf.CircleGrid(128)
mu0 = mf.Density.from_function(grid, lambda x: np.exp(2 * x[..., 0] + 0.5 * x[..., 1])).unit_mass()
ns = [100, 200, 400, 800, 1600]
r = meanfield_limit(mf.SelfAttention(1.0), mu0, ns=ns, t_eval=[0, 1], repeats=4, rng=0)
for t, a, ci in zip(r.t, r.exponent, r.exponent_ci):
    print(f"t = {t:g}: exponent {a:.3f}, 95% interval {np.round(ci, 3)}")

fig, ax = plt.subplots(figsize=(5.5, 4))
for k, t in enumerate(r.t):
    ax.loglog(ns, r.distances[:, :, k].mean(axis=1), "o-", label=f"t = {t:g}: N^{r.exponent[k]:.2f}")
ax.loglog(ns, 0.8 * np.array(ns, float) ** -0.5, "k--", label="N^-1/2")
ax.set(xlabel="N", ylabel="mean W₁(μ_t, μ^N_t)", title="SA, β = 1, on S¹")
ax.legend()
