"""
Normalisation variants: how fast tokens cluster
===============================================

Where a Transformer normalises its tokens changes how fast they cluster (Karagodin, Ge, Polyanskiy & Rigollet;
docs/MATH.md §10): post-LN θ̇ = P_θA; pre-LN ẋ = A; peri-LN ẋ = A/‖A‖; nGPT θ̇ = αP_θA/‖A‖. From one start, the
fraction of pairs of directions with ⟨θ_i, θ_j⟩ > 0.999: exponential for post-LN and nGPT, algebraic for pre- and
peri-LN (the radius grows like t and slows its own direction).

Full size: ``python scripts/normalization_variants.py``.
"""

import matplotlib.pyplot as plt
import numpy as np

import particles as pt
from meanfield.models import Normalization, SelfAttention, Transformer
from particles import clusters

x0 = pt.uniform_sphere(32, 3, rng=0)
t_eval = np.linspace(0, 15, 61)
variants = {
    "post-LN": Transformer(SelfAttention(1.0), normalization="post"),
    "pre-LN": Transformer(SelfAttention(1.0), normalization="pre"),
    "peri-LN": Transformer(SelfAttention(1.0), normalization="peri"),
    "nGPT (α = 0.5)": Transformer(SelfAttention(1.0), normalization=Normalization("ngpt", alpha=0.5)),
}
fig, ax = plt.subplots(figsize=(6, 4))
for label, model in variants.items():
    traj = pt.simulate(model, x0, t_eval, dt=0.02)
    ax.plot(t_eval, clusters.pair_fraction(traj.direction, delta=1e-3), label=label)
ax.set(xlabel="t", ylabel="pairs with ⟨θ_i, θ_j⟩ > 0.999", title="n = 32 tokens on S², SA β = 1")
ax.legend()
