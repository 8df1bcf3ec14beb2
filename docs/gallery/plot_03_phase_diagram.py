"""
The clustering phase diagram (GLPR Figure 3)
============================================

n = 32 tokens on S² (d = 3) under SA at inverse temperature β: the probability that two tokens have merged,
P(⟨x_1(t), x_2(t)⟩ ≥ 1 − δ), as a function of β and t, estimated over independent uniform starts (GLPR §6.3,
Figure 3). Small systems run as whole RK4 sequences in compiled code (:mod:`particles.fused`).

Full size (1024 realisations, 90 β): ``python scripts/phase_diagram.py`` or
``meanfield sweep examples/phase_diagram.toml --over beta=0.1:9:90 --plot``.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
import particles as pt
from particles import clusters

betas = np.linspace(0.5, 9, 12)
t_eval = np.linspace(0, 20, 41)
x0 = pt.uniform_sphere(32, 3, rng=0, batch=48)  # 48 independent systems of 32 tokens
p = np.empty((len(t_eval), len(betas)))
for j, beta in enumerate(betas):
    traj = pt.simulate(mf.SelfAttention(beta), x0, t_eval)
    p[:, j] = clusters.pair_fraction(traj.x, delta=1e-3).mean(axis=1)

fig, ax = plt.subplots(figsize=(6, 4))
im = ax.pcolormesh(betas, t_eval, p, shading="nearest", vmin=0, vmax=1, cmap="magma")
fig.colorbar(im, label="fraction of pairs with ⟨x_i, x_j⟩ ≥ 1 − 10⁻³")
ax.set(xlabel="β", ylabel="t", title="n = 32, d = 3, 48 realisations")
