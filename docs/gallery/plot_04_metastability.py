"""
Through collapse: the metastable plateau and its merge
======================================================

SA with β = 5 on the circle to t = 100. Clusters form fast and then sit on a long metastable plateau before
merging (GLPR §6.3). A grid cannot follow the density as it collapses; the Lagrangian measure (points with fixed
weights carrying log ρ along characteristics, docs/MATH.md §6) goes on through collapse with a bound on its
moments' error. It runs here from t = 0 (``representation="lagrangian"``); the default chain starts on the grid and
hands over where the grid stops resolving. The interaction energy E_β steps up at each merge.

Full size, with particles: ``meanfield run examples/metastability.toml --plot``.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
from meanfield.lagrangian import clusters

grid = mf.CircleGrid(512)
rho0 = mf.Density.from_function(grid, mf.laws.uniform_noise(grid, 0.01, 5, rng=0))
t_eval = np.linspace(0, 100, 101)
# Lagrangian from t = 0, as examples/metastability.toml does: the panels step by their own Dormand–Prince 8(5,3)
sol = mf.solve(mf.SelfAttention(beta=5.0), rho0, (0, 100), t_eval=t_eval, representation="lagrangian",
               lagrangian_tol=1e-12)
print(sol.status)
for handover in sol.handovers:
    print(handover)

count = [len(clusters(d)) for d in sol.densities]
fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
ax.plot(sol.t, [d.energy(5.0) for d in sol.densities])
ax.set(xlabel="t", ylabel="E_β", title="interaction energy")
bx.step(sol.t, count, where="post")
bx.set(xlabel="t", ylabel="clusters", title="clusters of the Lagrangian measure")
fig.tight_layout()
