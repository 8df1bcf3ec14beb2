"""
Long contexts: one attention layer at β_n = γ log n
===================================================

Attention scaled with the context length, β_n = γ log n (Chen, Lin, Polyanskiy & Rigollet, arXiv 2510.05554;
MATH.md §13). Take n equiangular tokens, ⟨θ_i, θ_j⟩ = ρ for i ≠ j, and one attention layer with normalised output,
θ_i' = N(A_i), A_i = Σ_j softmax_j(β_n⟨θ_i, θ_j⟩) θ_j. The weight a token gives itself is

.. math::

    p_n = \\frac{1}{1 + (n - 1)\\, n^{-γ(1-ρ)}},

so with a = γ(1 − ρ) the inner product after the layer tends, as n → ∞, to

- 1 if a < 1 (p_n → 0: every token averages all the others; the layer collapses the context),
- 4ρ/(1 + 3ρ) at a = 1 (p_n → ½),
- ρ if a > 1 (p_n → 1: each token keeps itself; the layer does nothing),

at the rates n^{−2(1−a)}, n^{−1}, n^{−(a−1)} (:func:`meanfield.analysis.exact.one_layer_rate`).

Here the layer is the library's own: the layer map of ``particles.discrete_depth``
(:func:`meanfield.solvers.depth.layer_map`) of nGPT's layer at hα = 1, which is exactly θ' = N(A(θ)), with β a
:class:`meanfield.models.ContextScaling` resolved with the n tokens. n tokens need d = n + 1 dimensions to be
equiangular (θ_i = √ρ e_0 + √(1 − ρ) e_i), n(n + 1) floats if dense; they have two non-zeros each, so they are held
sparse, and the layer is evaluated at three tokens only (``at=``: a token's output needs every key but no other
output), which costs O(n): particles run to n = 10⁶ here (:func:`validation.long_context.one_layer_at`). They are
checked against the exact finite-n formula (:func:`meanfield.analysis.exact.one_layer_equiangular`), which then
carries the curves to n = 10¹²; the limits are :func:`meanfield.analysis.exact.one_layer_limit`.

For n iid keys on S^{d−1} and one query (Bruno, Chen, Lin, Polyanskiy & Rigollet, arXiv 2605.08505) the critical
scale, where the largest attention weight stays macroscopic, is β_n ≍ n^{2/(d−1)}: the last part measures β*(n) with
E[p_(1)] = ½ (:func:`validation.long_context.critical_exponent`, the nearest keys drawn exactly in law) and fits its
exponent, with a 95 % interval, against 2/(d − 1).

Full size (n to 10⁶, the local rates, more draws): ``python scripts/long_context.py``.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from meanfield.analysis import exact
from meanfield.models import ContextScaling, SelfAttention, at_context
from validation.long_context import critical_exponent, one_layer_at

start_clock = time.perf_counter()
rho = 0.5
regimes = {1.6: "a = 0.8 < 1", 2.0: "a = 1", 3.0: "a = 1.5 > 1"}  # γ: a = γ(1 − ρ)
n_particles = [10, 100, 10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6]
n_formula = np.logspace(np.log10(2), 12, 300)

print(f"β_n = γ log n is resolved by the model with each n: γ = 3, n = 1000 -> β = "
      f"{at_context(SelfAttention(ContextScaling.log(3.0)), 1000).beta:.6f} (3 log 1000 = {3 * np.log(1000):.6f})")
results = {}
for gamma in regimes:
    limit, rate = exact.one_layer_limit(gamma, rho), exact.one_layer_rate(gamma, rho)
    measured, gaps = [], []
    for n in n_particles:
        g = one_layer_at(n, gamma, rho)["pairs"]  # ⟨θ_i', θ_j'⟩ among the first, middle and last tokens
        measured.append(g.mean())
        gaps.append(np.max(np.abs(g - exact.one_layer_equiangular(n, gamma, rho))))
    results[gamma] = (limit, rate, np.array(measured))
    far = np.array([1e10, 1e12])
    e = np.abs(exact.one_layer_equiangular(far, gamma, rho) - limit)
    print(f"γ = {gamma:g} ({regimes[gamma]}): limit {limit:.6f}; particles n = {n_particles[0]}..{n_particles[-1]:.0e}: "
          f"{np.round(measured, 6)}; max |particles - exact formula| = {max(gaps):.1e}")
    print(f"    rate of |ρ'_n - limit| between n = 1e10 and 1e12: {-np.diff(np.log(e))[0] / np.log(100):.4f}, "
          f"predicted {rate:g}")

# %%
# iid keys: the critical scale β*(n) for n = 10², …, 10⁵ on S¹, S², S³.
ns = np.round(np.logspace(2, 5, 7)).astype(np.int64)
keys = {}
for d in (2, 3, 4):
    fit = critical_exponent(ns, d, draws=500, groups=10, rng=d)
    keys[d] = fit
    lo, hi = fit.interval
    print(f"iid keys on S^{d - 1}: exponent of β*(n) {fit.exponent:.4f}, 95 % interval [{lo:.4f}, {hi:.4f}], "
          f"predicted 2/(d-1) = {2 / (d - 1):.4f}: inside {lo <= 2 / (d - 1) <= hi}")

# %%
# Left: ⟨θ', θ'⟩ against n (particles as markers, the exact formula as the curve, the limits dashed). Middle: the
# distance to the limit, log-log, with the predicted slopes. Right: the iid keys' critical scale.
fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(15, 4.2), layout="constrained")
for k, (gamma, (limit, rate, measured)) in enumerate(results.items()):
    c = f"C{k}"
    ax.semilogx(n_formula, exact.one_layer_equiangular(n_formula, gamma, rho), c, lw=1.2,
                label=f"γ = {gamma:g}, {regimes[gamma]}: limit {limit:.3g}")
    ax.semilogx(n_particles, measured, c + "o", ms=5)
    ax.axhline(limit, color=c, ls="--", lw=0.8)
    err = np.abs(exact.one_layer_equiangular(n_formula, gamma, rho) - limit)
    bx.loglog(n_formula, err, c, lw=1.2, label=f"γ = {gamma:g}: predicted slope −{rate:g}")
    bx.loglog(n_particles, np.abs(measured - limit), c + "o", ms=5)
    anchor = err[-1] * (n_formula / n_formula[-1]) ** (-rate)
    bx.loglog(n_formula[150:], anchor[150:], "k:", lw=0.8)
ax.axhline(rho, color="gray", lw=0.5)
ax.set(xlabel="n (context length)", ylabel="⟨θ_i', θ_j'⟩ after one layer",
       title=f"ρ = {rho}: markers are particles through the layer map")
ax.legend(fontsize=8)
bx.set(xlabel="n", ylabel="|⟨θ_i', θ_j'⟩ − limit|", title="the approach to the limit (dotted: n^{−rate})")
bx.legend(fontsize=8)
for d, fit in keys.items():
    cx.loglog(fit.n, fit.beta, "o-", ms=4,
              label=f"S^{d - 1}: exponent {fit.exponent:.3f} (2/(d−1) = {2 / (d - 1):.3g})")
cx.set(xlabel="n (iid keys)", ylabel="β*(n): E[largest weight] = ½", title="iid keys: the critical scale n^{2/(d−1)}")
cx.legend(fontsize=8)
print(f"run time {time.perf_counter() - start_clock:.1f} s")
