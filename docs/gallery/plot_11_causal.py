"""
Causal attention: the profile along the positions
=================================================

With causal (masked) attention a token at position s sees only the tokens at s' ≤ s (CACP; docs/MATH.md §8.4).
The density lives on [0, 1] × S¹; each row is moved by the rows before it. The first token never moves, and how
much the tokens have gathered depends on their position: the profile of the order parameter ‖∫ x dμ_s‖ along s.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
import particles as pt
from meanfield import laws

causal = mf.SelfAttention(2.0, causal=True)
grid = mf.SequenceGrid(128, positions=33)
f0 = mf.Density.from_function(grid, laws.along_positions(
    lambda y: laws.von_mises_fisher(y, [[1.0, 0.0]], 1.0), 0.5))  # the law turned by 2π·0.5·s along s
sol = mf.solve(causal, f0.unit_mass(), (0, 3), t_eval=[0, 1, 3])

tokens = pt.with_positions(pt.sample(mf.Density.from_function(mf.CircleGrid(128), lambda y: laws.von_mises_fisher(
    y, [[1.0, 0.0]], 1.0)), 512, rng=2))
traj = pt.simulate(causal, tokens, [0, 1, 3])

fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
for d, t in zip(sol.densities, sol.t):
    v = d.values.reshape(d.grid.shape)
    th = d.grid.angles if hasattr(d.grid, "angles") else np.linspace(0, 2 * np.pi, v.shape[-1], endpoint=False)
    z = np.abs((v * np.exp(1j * th)).sum(-1) / v.sum(-1))
    ax.plot(np.linspace(0, 1, v.shape[0]), z, label=f"t = {t:g}")
ax.set(xlabel="position s", ylabel="|∫ e^{iθ} dμ_s|", title="density on [0, 1] × S¹")
ax.legend()
s = traj.x[-1][:, 0]
bx.scatter(s, np.arctan2(traj.x[-1][:, 2], traj.x[-1][:, 1]), s=3)
bx.set(xlabel="position s", ylabel="angle at t = 3", title="512 causal particles (token 0 never moves)")
fig.tight_layout()
