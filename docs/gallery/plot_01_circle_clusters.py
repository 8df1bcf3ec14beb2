"""
Clusters on the circle
======================

SA with β = 4 on the circle (GLPR (2.3), the density of docs/MATH.md §2), from a uniform density perturbed by a
few Fourier modes: clusters emerge and the solver refines the grid as they sharpen. N = 1000 particles drawn from
the same density follow it; the interaction energy E_β of both is non-decreasing (GLPR Lemma 3.7).

Full size: ``meanfield run examples/circle_clusters.toml --plot``.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
import particles as pt

grid = mf.CircleGrid(128)
rho0 = mf.Density.from_function(grid, mf.laws.uniform_noise(grid, 0.33, 3, rng=0))
model = mf.SelfAttention(beta=4.0)
t_eval = np.linspace(0, 5, 26)
sol = mf.solve(model, rho0, (0, 5), t_eval=t_eval, method="rk45", max_n=4096)
print(sol.status, "refinements:", sol.refinements)

x0 = pt.sample(rho0, 1000, rng=2)
traj = pt.simulate(model, x0, t_eval)
angles = np.arctan2(traj.x[..., 1], traj.x[..., 0])

fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
for k in range(0, len(sol.t), 5):
    d = sol.densities[k]  # each on the grid the solver reached at that time
    ax.plot(d.grid.angles, d.values, label=f"t = {sol.t[k]:g}")
ax.set(xlabel="θ", ylabel="ρ(t, θ)", title="density (SA, β = 4)")
ax.legend()
bx.plot(t_eval, angles[:, ::10], ",", color="k")
bx.set(xlabel="t", ylabel="θ_i(t)", title="every 10th of N = 1000 particles")
fig.tight_layout()
