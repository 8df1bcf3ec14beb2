"""Causal results of one checkout, saved to compare two checkouts bit for bit: the decay mask and RoPE
(docs/MATH.md §13) must leave λ = ω = 0 — today's causal model — unchanged. Particles (compiled and the model's own
sums; SA, USA with V ≠ I, two heads) and densities on [0, 1] × S¹ (spectral, quadrature with Q ≠ I, USA).

Run from outside the checkouts, once with each on the path, then compare every array with np.array_equal:
    cd /tmp && python /path/scripts/causal_unchanged.py main.npz                       (the installed checkout)
    cd /tmp && PYTHONPATH=/work/wt-pos python /path/scripts/causal_unchanged.py branch.npz
    python -c "import numpy as np; a, b = np.load('main.npz'), np.load('branch.npz'); \
               print(all(np.array_equal(a[k], b[k]) for k in a))"
"""
import sys
import numpy as np
import meanfield as mf, particles
from meanfield.models import SelfAttention, MultiHeadAttention
from meanfield.domains.sequence import SequenceGrid, with_positions
print(mf.__file__, file=sys.stderr)
rng = np.random.default_rng(3)
out = {}
x = rng.standard_normal((64, 3)); x /= np.linalg.norm(x, axis=-1, keepdims=True)
x0 = with_positions(x)
Q = np.array([[1.0, 0.3, 0], [0, 0.8, 0.1], [0.2, 0, 1.1]])
models = {"sa": SelfAttention(2.0, causal=True), "usa": SelfAttention(1.5, normalized=False, causal=True, V=Q),
          "mh": MultiHeadAttention((SelfAttention(2.0, causal=True), SelfAttention(1.0, causal=True, Q=Q)))}
for k, m in models.items():
    out[f"p_{k}"] = particles.simulate(m, x0, [0, 0.5, 1.0], dt=0.01).x
    out[f"q_{k}"] = particles.simulate(m, x0, [0, 0.5, 1.0], dt=0.01, strategy="quadrature").x
g = SequenceGrid(64, 17)
s, th = g.positions[:, None], g.angles[None, :]
f = (1.0 + 0.4 * np.cos(th - s) + 0.2 * np.sin(2 * th) * s) / (2 * np.pi)
Q2 = np.array([[1.0, 0.4], [0.0, 0.8]])
for k, m in {"spec": SelfAttention(3.0, causal=True), "quad": SelfAttention(2.0, Q=Q2, causal=True),
             "usa": SelfAttention(1.0, normalized=False, causal=True)}.items():
    sol = mf.solve(m, mf.Density(g, f), (0.0, 1.0), [0, 0.5, 1.0])
    out[f"d_{k}"] = np.stack([d.values for d in sol.densities])
    out[f"t_{k}"] = np.asarray(sol.t)
np.savez(sys.argv[1], **out)
