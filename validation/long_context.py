r"""Long contexts measured (MATH.md §13): one attention layer on n equiangular tokens through the library's own layer
map, and the critical scale of n iid keys on S^{d-1}.

One layer (Chen, Lin, Polyanskiy & Rigollet, arXiv 2510.05554). :func:`one_layer_particles` pushes n equiangular
tokens θ_i = √ρ e_0 + √(1 − ρ) e_i (⟨θ_i, θ_j⟩ = ρ; d = n + 1, the fewest dimensions n such unit vectors need: their
Gram matrix (1 − ρ)I + ρ11ᵀ has rank n) through ``particles.discrete_depth`` of ``Transformer(SelfAttention(β_n),
normalization=Normalization("ngpt", alpha=1))`` with depth h = 1: nGPT's layer θ ↦ N(θ + hα(N(A) − θ)) with hα = 1
is θ' = N(N(A)) = N(A(θ)), the attention-only layer with normalised output, and β_n = γ log n is a
:class:`~meanfield.models.ContextScaling` resolved by the particles with their n. Its inner products are compared with
the exact finite-n formula :func:`meanfield.analysis.exact.one_layer_equiangular` and the limit
:func:`meanfield.analysis.exact.one_layer_limit`.

iid keys (Bruno, Chen, Lin, Polyanskiy & Rigollet, arXiv 2605.08505). A query q and n iid uniform keys k_j on
S^{d-1}; the attention weights p_j = e^{β⟨q,k_j⟩}/Σ_l e^{β⟨q,k_l⟩}. The paper's ordered weights: below the critical
scale the largest weight p_(1) → 0 (the output is a local average), at β_n ≍ n^{2/(d−1)} a finite number of nearest
keys keep macroscopic mass, above it p_(1) → 1 (the closest key). The observable here is E[p_(1)], increasing in β
for every draw (p_(1) = 1/(1 + Σ_{j ≥ 2} e^{−β(s_j − s_1)}), s_j = 1 − ⟨q, k_j⟩ sorted), and the critical scale
β*(n) the β with E[p_(1)] = ½; its exponent in n is fitted (:func:`critical_exponent`).

Only the gaps s_j matter, and only the smallest: s = 1 − ⟨q, k⟩ = 2B with B ~ Beta(a, a), a = (d − 1)/2 (the first
coordinate of a uniform point of S^{d-1} has density ∝ (1 − t²)^{(d−3)/2}). The K smallest of n iid gaps are drawn
exactly in law (:func:`nearest_gaps`): the uniform order statistics U_(k) = S_k/S_{n+1}, S_k the partial sums of
iid Exp(1) (S_{n+1} − S_K ~ Gamma(n + 1 − K)), mapped by the Beta quantile — O(K) per draw for any n, with the small
gaps to full relative precision (1 − ⟨q, k⟩ computed from ⟨q, k⟩ would lose them at d = 2, n = 10⁶, where
s ~ 10⁻¹²). The keys past the K-th change Σ_{j ≥ 2} e^{−β(s_j − s_1)} by at most n e^{−β(s_K − s_1)}:
:func:`mean_top_weight` reports that bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

import particles
from meanfield.analysis import exact
from meanfield.models import ContextScaling, Normalization, SelfAttention, Transformer

__all__ = ["equiangular_tokens", "one_layer_particles", "one_layer_pair_stats", "nearest_gaps", "mean_top_weight",
           "critical_scale", "critical_exponent", "ExponentFit"]


def equiangular_tokens(n: int, rho: float) -> np.ndarray:
    """n unit vectors of R^{n+1} with ⟨θ_i, θ_j⟩ = ρ (i ≠ j): θ_i = √ρ e_0 + √(1 − ρ) e_i, ρ in [0, 1)."""
    if int(n) != n or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, got {n!r}.")
    if not (0.0 <= rho < 1.0):
        raise ValueError(f"`rho` must lie in [0, 1), got {rho!r}.")
    x = np.zeros((int(n), int(n) + 1))
    x[:, 0] = np.sqrt(rho)
    x[np.arange(n), np.arange(1, n + 1)] = np.sqrt(1.0 - rho)
    return x


def one_layer_model(gamma: float) -> Transformer:
    """θ' = N(A(θ)) with β_n = γ log n: nGPT's layer at hα = 1 (module docstring), attention SA, Q = K = V = I."""
    return Transformer(SelfAttention(ContextScaling.log(gamma)), normalization=Normalization("ngpt", alpha=1.0))


def one_layer_particles(n: int, gamma: float, rho: float) -> np.ndarray:
    """The off-diagonal inner products ⟨θ_i', θ_j'⟩ (i < j) after one layer θ' = N(A(θ)) of n equiangular tokens at
    β_n = γ log n, through ``particles.discrete_depth`` (module docstring)."""
    x = equiangular_tokens(n, rho)
    y = particles.discrete_depth(one_layer_model(gamma), x, depth=1.0, layers=1).x[-1]
    G = y @ y.T
    return G[np.triu_indices(int(n), 1)]


def one_layer_pair_stats(n: int, gamma: float, rho: float) -> dict:
    """The off-diagonal inner products after one layer (as :func:`one_layer_particles`, the same layer map on the same
    tokens) summarised without listing the n(n − 1)/2 pairs (n = 10⁴: 5·10⁷ pairs, whose list and indices took
    1.2 GB): their mean, min and max from the Gram matrix with its diagonal set to an off-diagonal entry (the mean
    by |Σθ'|² − Σ|θ'|² lost 3e-13 at n = 10⁴ to cancellation), and the seconds the layer map took
    (``layer_seconds``) and the Gram matrix (``gram_seconds``). The layer's cost: two n × n × (n + 1) products
    (the logits ⟨θ_i, θ_j⟩ and the weights times V θ), O(n³), and n(n + 1) × 8 bytes per copy of the tokens."""
    x = equiangular_tokens(n, rho)
    t0 = time.perf_counter()
    y = particles.discrete_depth(one_layer_model(gamma), x, depth=1.0, layers=1).x[-1]
    t1 = time.perf_counter()
    del x
    G = y @ y.T
    np.fill_diagonal(G, G[0, 1])
    mean = (float(np.sum(G)) - n * float(G[0, 1])) / (n * (n - 1.0))  # pairwise summation: ~1e-16 relative
    out = {"mean": mean, "min": float(np.min(G)), "max": float(np.max(G)), "layer_seconds": t1 - t0,
           "gram_seconds": time.perf_counter() - t1}
    return out


def nearest_gaps(n: int, d: int, K: int, draws: int, rng) -> np.ndarray:
    """The K smallest gaps s_(1) <= ... <= s_(K) of s_j = 1 − ⟨q, k_j⟩ for n iid uniform keys on S^{d-1}, exactly in
    law, ``draws`` independent draws: shape (draws, min(K, n)) (module docstring)."""
    if int(n) != n or n < 2 or int(d) != d or d < 2:
        raise ValueError(f"`n` >= 2 and `d` >= 2 must be integers, got n = {n!r}, d = {d!r}.")
    K = int(min(K, n))
    rng = np.random.default_rng(rng)
    partial = np.cumsum(rng.standard_exponential((draws, K)), axis=1)
    total = partial[:, -1:] + (rng.standard_gamma(n + 1 - K, (draws, 1)) if n + 1 > K else 0.0)
    u = partial / total
    a = 0.5 * (d - 1)
    return 2.0 * special.betaincinv(a, a, u)


def mean_top_weight(gaps, beta: float, n: int | None = None) -> tuple[float, float]:
    """(E[p_(1)] over the draws, the bound on the truncation of the keys past the K-th): p_(1) = 1/Σ_j e^{−β(s_j −
    s_1)} over the kept gaps; the bound n e^{−β(s_K − s_1)} (max over draws) on what the others add to that sum."""
    s = np.asarray(gaps, dtype=float)
    z = np.sum(np.exp(-beta * (s - s[:, :1])), axis=1)
    n = s.shape[1] if n is None else n
    tail = float(np.max((n - s.shape[1]) * np.exp(-beta * (s[:, -1] - s[:, 0]))))
    return float(np.mean(1.0 / z)), tail


def critical_scale(gaps, level: float = 0.5, n: int | None = None, tail_tol: float = 1e-10) -> float:
    """β*: E[p_(1)](β*) = ``level``, by bisection in log β (E[p_(1)] increases with β for every draw); ``ValueError``
    where the kept gaps do not bound the others' weight to ``tail_tol`` there (draw more of them)."""
    lo, hi = 1e-6, 1e30
    while hi / lo > 1.0 + 1e-12:
        mid = np.sqrt(lo * hi)
        if mean_top_weight(gaps, mid)[0] < level:
            lo = mid
        else:
            hi = mid
    beta = float(np.sqrt(lo * hi))
    tail = mean_top_weight(gaps, beta, n)[1]
    if tail > tail_tol:
        raise ValueError(f"the {np.shape(gaps)[1]} nearest keys leave the others a weight up to {tail:.2g} at β* = "
                         f"{beta:.4g} (> {tail_tol:g}): keep more gaps (K).")
    return beta


@dataclass(frozen=True)
class ExponentFit:
    """β*(n) ≈ C n^e fitted over ``n``: ``exponent`` (least squares on all the draws), its ``interval`` (95 %, Student t
    over ``groups`` independent groups of draws, each fitted alone), the per-group exponents, β* per n."""

    n: np.ndarray
    beta: np.ndarray
    exponent: float
    interval: tuple[float, float]
    group_exponents: np.ndarray
    local: np.ndarray


def critical_exponent(ns, d: int, draws: int = 2000, groups: int = 10, K: int = 256, level: float = 0.5,
                      rng=0) -> ExponentFit:
    """The exponent of β*(n) in n for iid keys on S^{d-1} (predicted 2/(d − 1), arXiv 2605.08505): β*(n) from
    ``draws`` draws of the K nearest gaps at each n (:func:`nearest_gaps`, :func:`critical_scale`); the slope of
    log β* on log n; its interval from ``groups`` independent groups of the draws."""
    ns = np.asarray(ns, dtype=np.int64)
    rng = np.random.default_rng(rng)
    per_group = draws // groups
    gaps = [nearest_gaps(int(n), d, K, per_group * groups, rng) for n in ns]
    beta = np.array([critical_scale(g, level, int(n)) for g, n in zip(gaps, ns)])
    slope = np.polyfit(np.log(ns), np.log(beta), 1)[0]
    group_slopes = np.array([np.polyfit(np.log(ns), np.log([critical_scale(g[k * per_group:(k + 1) * per_group],
                                                                               level, int(n))
                                                             for g, n in zip(gaps, ns)]), 1)[0]
                             for k in range(groups)])
    half = stats.t.ppf(0.975, groups - 1) * np.std(group_slopes, ddof=1) / np.sqrt(groups)
    local = np.diff(np.log(beta)) / np.diff(np.log(ns))
    return ExponentFit(ns, beta, float(slope), (float(np.mean(group_slopes) - half), float(np.mean(group_slopes)
                                                                                           + half)),
                       group_slopes, local)


def one_layer_table(ns, gamma: float, rho: float, particle_max: int = 1000) -> list[dict]:
    """Rows (n, ρ'_n, how: particles through the layer map for n <= ``particle_max`` (their mean off-diagonal
    inner product; ``spread`` max − min over the pairs, ``formula_gap`` max |particles − exact formula| over the
    pairs, ``seconds`` the layer map's time: :func:`one_layer_pair_stats`), the exact finite-n formula otherwise;
    ``error`` |ρ'_n − limit|)."""
    limit = exact.one_layer_limit(gamma, rho)
    rows = []
    for n in ns:
        formula = float(exact.one_layer_equiangular(n, gamma, rho))
        row = {"n": int(n), "formula": formula, "limit": limit}
        if n <= particle_max:
            g = one_layer_pair_stats(int(n), gamma, rho)
            row.update(value=g["mean"], how="particles", spread=g["max"] - g["min"],
                       formula_gap=max(abs(g["max"] - formula), abs(g["min"] - formula)),
                       seconds=g["layer_seconds"])
        else:
            row.update(value=formula, how="formula", spread=None, formula_gap=None, seconds=None)
        row["error"] = abs(row["value"] - limit)
        rows.append(row)
    return rows
