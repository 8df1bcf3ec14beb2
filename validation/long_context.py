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

That pushes all n tokens: n² pairs in d = n + 1 dimensions, O(n³) time and n(n + 1) floats (80 GB at n = 10⁵).
:func:`one_layer_at` runs the same layer map (:func:`meanfield.solvers.depth.layer_map`, the one
``particles.discrete_depth`` calls) on the same tokens held as a sparse array (two non-zeros a row,
:func:`equiangular_tokens` with ``sparse=True``) and evaluated at a few tokens only (``at=``): the output at token i
needs every key but no other output, so ⟨θ'_i, θ'_j⟩ costs two queries against n sparse keys, O(n) time and memory —
particles to n = 10⁶ in about a second and 0.3 GB (10⁷: 2.3 GB, 8-35 s on two loaded cores), with β_n resolved
with all n keys.

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

from scipy import sparse as sp

import particles
from meanfield.core import checks
from meanfield.analysis import exact
from meanfield.models import ContextScaling, Normalization, SelfAttention, Transformer
from meanfield.solvers.depth import layer_map

__all__ = ["equiangular_tokens", "one_layer_particles", "one_layer_pair_stats", "one_layer_at", "nearest_gaps", "mean_top_weight",
           "critical_scale", "critical_exponent", "ExponentFit"]


def equiangular_tokens(n: int, rho: float, sparse: bool = False):
    """n unit vectors of R^{n+1} with ⟨θ_i, θ_j⟩ = ρ (i ≠ j): θ_i = √ρ e_0 + √(1 − ρ) e_i, ρ in [0, 1); with
    ``sparse`` a scipy.sparse CSR array of the same entries (2n stored: 32n bytes instead of 8n(n + 1))."""
    if int(n) != n or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, got {n!r}.")
    if not (0.0 <= rho < 1.0):
        raise ValueError(f"`rho` must lie in [0, 1), got {rho!r}.")
    if sparse:
        n = int(n)
        data = np.empty(2 * n)
        data[0::2], data[1::2] = np.sqrt(rho), np.sqrt(1.0 - rho)
        cols = np.zeros(2 * n, dtype=np.int64)
        cols[1::2] = np.arange(1, n + 1)
        return sp.csr_array((data, cols, np.arange(0, 2 * n + 1, 2)), shape=(n, n + 1))
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


def one_layer_at(n: int, gamma: float, rho: float, at=None) -> dict:
    """The inner products ⟨θ_i', θ_j'⟩ (i < j in ``at``; default the first, middle and last tokens) after one layer
    θ' = N(A(θ)) of n equiangular tokens at β_n = γ log n, from the library's layer map at those tokens only, on the
    sparse tokens (module docstring): ``pairs`` (their values), ``seconds`` (the tokens built and the layer map),
    ``peak_bytes`` (the largest memory NumPy and SciPy held at once meanwhile, by ``tracemalloc``, which sees their
    arrays; the interpreter's own is not counted). The layer's cost: O(m n) for m = len(at) queries.

    Round-off (the error model of the tests): A at a query is Σ_j w_j e_j θ_j / Σ_j w_j e_j; its 0-th coordinate
    sums n positive terms one after another (the sparse product), relative error <= (n − 1) ε (Higham, *Accuracy
    and Stability*, §4.2), the others one term each; ρ' = ⟨N(A_i), N(A_j)⟩ moves by at most about twice that:
    |particles − formula| <= ~2nε (2e-11 at n = 10⁵, 2e-10 at 10⁶; summed by BLAS in the dense layer map)."""
    import tracemalloc

    n = int(n)
    at = np.array(sorted({0, n // 2, n - 1}) if at is None else at)
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    x = equiangular_tokens(n, rho, sparse=True)
    y = layer_map(one_layer_model(gamma), x, np.full(n, 1.0 / n), 1.0, at=at)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - base
    if started:
        tracemalloc.stop()
    G = y @ y.T
    return {"pairs": G[np.triu_indices(len(at), 1)], "seconds": seconds, "peak_bytes": peak}


def nearest_gaps(n: int, d: int, K: int, draws: int, rng) -> np.ndarray:
    """The K smallest gaps s_(1) <= ... <= s_(K) of s_j = 1 − ⟨q, k_j⟩ for n iid uniform keys on S^{d-1}, exactly in
    law, ``draws`` independent draws: shape (draws, min(K, n)) (module docstring)."""
    if int(n) != n or n < 2 or int(d) != d or d < 2:
        raise ValueError(f"`n` >= 2 and `d` >= 2 must be integers, got n = {n!r}, d = {d!r}.")
    K = int(min(K, n))
    rng = checks.generator(rng)
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
    rng = checks.generator(rng)
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


def one_layer_table(ns, gamma: float, rho: float, particle_max: int = 10 ** 6) -> list[dict]:
    """Rows (n, ρ'_n, how: particles through the layer map for n <= ``particle_max`` (:func:`one_layer_at`: the
    mean of the pairs among the first, middle and last tokens' outputs; ``spread`` max − min over those pairs,
    ``formula_gap`` max |particles − exact formula| over them, ``seconds`` the tokens and the layer map,
    ``peak_bytes`` their memory), the exact finite-n formula otherwise; ``error`` |ρ'_n − limit|)."""
    limit = exact.one_layer_limit(gamma, rho)
    rows = []
    for n in ns:
        formula = float(exact.one_layer_equiangular(n, gamma, rho))
        row = {"n": int(n), "formula": formula, "limit": limit}
        if n <= particle_max:
            g = one_layer_at(int(n), gamma, rho)
            pairs = g["pairs"]
            row.update(value=float(np.mean(pairs)), how="particles", spread=float(np.ptp(pairs)),
                       formula_gap=float(np.max(np.abs(pairs - formula))), seconds=g["seconds"],
                       peak_bytes=g["peak_bytes"])
        else:
            row.update(value=formula, how="formula", spread=None, formula_gap=None, seconds=None, peak_bytes=None)
        row["error"] = abs(row["value"] - limit)
        rows.append(row)
    return rows
