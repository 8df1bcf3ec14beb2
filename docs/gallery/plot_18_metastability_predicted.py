"""
Metastability: the clusters predicted from the initial data, and the energy staircase
=====================================================================================

SA (Q = K = V = I) on S¹ from a slightly perturbed uniform law, ρ₀ = (1/2π)(1 + ε Σ_{k ≤ 8} a_k cos(kθ − φ_k)),
ε = 10⁻³. About the uniform law the Fourier mode of degree k grows at the linear rate (MATH.md §9)

.. math::

    σ_k = k^2\\,\\frac{I_k(β)}{β\\, I_0(β)},

so the mode of the largest rate, k* = argmax_k σ_k, outgrows the others and the flow first forms k* clusters, at the
angles θ_j = (arg μ̂_{k*}(0) + 2πj)/k* read from the initial Fourier coefficient μ̂_k(0) = ∫ e^{ikθ} dμ₀ (Bruno,
Pasqualotto & Agazzi, arXiv 2410.23228; MATH.md §13): :func:`meanfield.lagrangian.metastability.predicted_clusters`.
The prediction holds where σ_{k*} stands clear of the next rate (a gap of ~20 % or more).

The clusters then merge one by one, each state living for a time exponential in β, and the interaction energy
E_β = (1/2β) Σ w_i w_j e^{β⟨x_i, x_j⟩} climbs a staircase whose steps sit at critical points of E_β: k clusters are
near a saddle whose Hessian has k − 1 unstable directions (Geshkovski, Koubbi, Polyanskiy & Rigollet, arXiv
2410.06833). :func:`particles.metastability.merging_flow` follows the particles to t ~ 60 e^{2β}, merging points that
coincide; :func:`particles.saddles.critical_point` finds the critical point nearest each state by Newton's method on
the gradient of E_β and returns its index.

The checks: over 10 seeds at β = 2.2 (k* = 2) and β = 4.4 (k* = 3) the count formed equals k*, and the formed
angles lie near the predicted ones; on the staircase each state has a critical point of E_β nearby, of index
(count − 1). The long plateaus sit at its energy (the two-cluster state to a few 1e-4); the short-lived
three-cluster state, left while its clusters are still gathering and drifting apart from the saddle, lies a few
per cent above its level.

Full size (20 seeds, more β, the lifetimes' fit log T₂ ≈ cβ): ``python scripts/metastability_study.py table`` and
``… lifetimes``.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

import particles
from meanfield.lagrangian.metastability import predicted_clusters
from meanfield.models import SelfAttention
from particles.metastability import circular_error, cluster_centres, formed_clusters, merging_flow
from particles.saddles import critical_point
from particles.snapshot import Snapshot

start_clock = time.perf_counter()
N, EPS, MODES = 128, 1e-3, 8


def initial(seed):
    """N quantile points of ρ₀ (θ_i with F(θ_i) = (i + ½)/N, Newton on the CDF): their Fourier coefficients are ρ₀'s
    to O(ε²) up to degree N/2, without the O(N^{-1/2}) fluctuations of iid samples."""
    rng = np.random.default_rng(seed)
    a, phi = rng.uniform(0.5, 1.0, MODES), rng.uniform(0, 2 * np.pi, MODES)
    k = np.arange(1, MODES + 1)[:, None]
    u = 2 * np.pi * (np.arange(N) + 0.5) / N
    th = u.copy()
    for _ in range(60):
        F = th + EPS * np.sum(a[:, None] * (np.sin(k * th - phi[:, None]) + np.sin(phi)[:, None]) / k, 0) - u
        th -= F / (1 + EPS * np.sum(a[:, None] * np.cos(k * th - phi[:, None]), 0))
    return np.stack([np.cos(th), np.sin(th)], 1)


# %%
# The prediction against the clusters formed: 10 seeds for each β, all in one batched run to t = 30 (the clusters
# form by t ≈ log(1/ε)/σ_{k*} ≈ 11 plus the time to collapse: t ≈ 15 here).
seeds = range(10)
rates = {}
for beta in (2.2, 4.4):
    model = SelfAttention(beta)
    x0 = np.stack([initial(s) for s in seeds])
    preds = [predicted_clusters(Snapshot(x), model) for x in x0]
    rates[beta] = preds[0].rates
    tr = particles.simulate(model, x0, np.arange(0, 30.25, 0.5), method="rk4", progress=False)
    formed, errors = [], []
    for s, p in enumerate(preds):
        t_f, centres, _ = formed_clusters(tr.t, tr.x[:, s])
        formed.append(len(centres))
        errors.append(circular_error(p.angles, np.arctan2(centres[:, 1], centres[:, 0])))
    p = preds[0]
    print(f"β = {beta}: predicted k* = {p.count} (runner-up k = {p.runner_up}, rate gap {100 * p.gap:.1f} %); "
          f"formed counts {formed}: equal to k* in {sum(f == p.count for f in formed)}/{len(formed)}; "
          f"angle error (Hausdorff on S¹) median {np.median(errors):.3f}, max {np.max(errors):.3f} rad "
          f"(the clusters' spacing 2π/k* = {2 * np.pi / p.count:.2f})")

# %%
# The staircase: seed 0 at β = 4.4 followed to t = 60 e^{2β} with coincident points merged.
beta = 4.4
model = SelfAttention(beta)
x0 = initial(0)
pred = predicted_clusters(Snapshot(x0), model)
t_max = 60 * np.exp(2 * beta)
t = np.concatenate([np.arange(0, 80, 0.5), np.geomspace(80, t_max, int(np.log(t_max / 80) / 0.03) + 1)])
run = merging_flow(model, x0, t)
states = run.states(beta)
print(states)
scale = 2 * beta * np.exp(-beta)  # 2βe^{-β} E_β = Σ m_i m_j e^{β(⟨x_i,x_j⟩-1)}: Σ m_j² for collapsed clusters
saddles = []
for s in states.states:
    k = int(np.searchsorted(run.t, s.start))
    centres, masses = cluster_centres(run.points[k], 1e-4, run.weights[k], 0.0)
    cp = critical_point(centres, beta, masses)
    saddles.append(cp)
    print(f"{s.count} cluster{'s' if s.count > 1 else ''} on [{s.start:.4g}, {s.end:.4g}): "
          f"plateau 2βe^-β E_β = {scale * s.energy:.6f}, "
          f"critical point {scale * cp.energy:.6f} (relative gap {s.energy / cp.energy - 1:.1e}; "
          f"|grad| {cp.gradient_norm:.1e}), index {cp.index} (count - 1 = {s.count - 1})")

# %%
# Left: the linear rates, their argmax the predicted count. Middle: the points of seed 0 (β = 4.4) against log t,
# the predicted angles marked at the left. Right: the energy staircase and the critical points' levels.
fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(15, 4.2), layout="constrained")
for j, (b, r) in enumerate(rates.items()):
    k = np.arange(1, r.size + 1)
    ax.plot(k, r / r.max(), "o-", ms=4, label=f"β = {b}: k* = {k[np.argmax(r)]}")
ax.set(xlabel="degree k", ylabel="σ_k / max σ", title="the linear rates about the uniform law", xlim=(0.5, 8.5))
ax.legend(fontsize=8)
tt = np.maximum(run.t, 0.1)
for k in range(0, len(run.t), 2):
    th = np.mod(np.arctan2(run.points[k][:, 1], run.points[k][:, 0]), 2 * np.pi)
    bx.scatter(np.full(th.size, tt[k]), th, s=2 + 40 * run.weights[k], c="k", lw=0)
bx.plot(np.full(pred.count, 0.1), pred.angles, "r>", ms=9, label=f"predicted: {pred.count} clusters")
bx.set(xscale="log", ylim=(0, 2 * np.pi), xlabel="t", ylabel="θ (size ∝ weight)",
       title=f"β = {beta}, N = {N}: form, then merge")
bx.legend(fontsize=8, loc="lower left")
cx.semilogx(tt, scale * run.energy(beta), "k-", lw=1.2, label="2βe^{−β} E_β (particles)")
for j, (s, cp) in enumerate(zip(states.states, saddles)):
    cx.hlines(scale * cp.energy, max(s.start, 0.1), min(s.end, run.t[-1]), colors=f"C{j}", lw=4, alpha=0.5,
              label=f"{s.count} clusters: critical point of index {cp.index}")
cx.set(xlabel="t", ylabel="2βe^{−β} E_β", title="the energy staircase")
cx.legend(fontsize=8, loc="upper left")
print(f"run time {time.perf_counter() - start_clock:.1f} s")
