"""
Clusters in d = 128: the zonal density against particles
========================================================

A density f(⟨x, e⟩) on S^{d−1} stays of that form under Q = qI, K = kI, V = cI: the zonal domain solves it for any
d on Gauss–Jacobi rings (Gegenbauer polynomials, docs/MATH.md §9). Here d = 128: the law of the polar angle
θ = arccos⟨x, e⟩ of the density, against N = 500 particles on S^127 drawn from it and moved by the particle system.

Full size: ``meanfield run examples/zonal_clusters.toml --plot``.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
import particles as pt
import validation
from meanfield.domains import ZonalGrid

zg = ZonalGrid(128, 48)  # S^127: 49 rings
rho0 = mf.Density.from_function(zg, mf.laws.uniform_noise(zg, 0.2, 4, rng=1))
t_eval = [0, 2, 4]
sol = mf.solve(mf.SelfAttention(4.0), rho0, (0, 4), t_eval=t_eval)
x0 = pt.sample(rho0, 500, rng=0)  # (500, 128) unit vectors
traj = pt.simulate(mf.SelfAttention(4.0), x0, t_eval)

fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
for ax, k in zip(axes, range(3)):
    theta = np.arccos(np.clip(traj.x[k][:, -1], -1, 1))
    ax.hist(theta, bins=25, density=True, alpha=0.5, label="particles")
    w1 = validation.distance(sol.densities[k], traj.x[k], 1)
    ax.set(title=f"t = {t_eval[k]}: W₁ of polar angles {w1.value:.3f}", xlabel="polar angle θ")
axes[0].set_ylabel("density of θ")
axes[0].legend()
fig.tight_layout()
