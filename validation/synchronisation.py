r"""Synchronisation statistics of tokens on the circle, repulsive attention included (MATH.md §13).

n tokens with iid uniform angles move under SA on S¹ (Q = K = V = I, any real β; β < 0 weighs far tokens more while
V = I still attracts). Global synchronisation (Polyanskiy, Rigollet & Yao, arXiv 2507.22857): from almost every
start all tokens coalesce; proved for β >= −0.16, false for β < −2/3 (the equilateral triangle, n = 3, is a stable
equilibrium there: the Jacobian's non-rotational eigenvalue at the regular 3-gon crosses 0 at β = −2/3).

:func:`synchronisation` runs ``seeds`` independent starts (``particles.simulate``, a batch, RK4) and classifies each
final state:

- synchronised: 1 − min_{i,j}⟨x_i, x_j⟩ < ``sync_tol`` (every pair within an angle √(2·sync_tol));
- held at a non-synchronised equilibrium: not synchronised and every token's speed |ẋ_i| < ``rest_tol``;
- undecided: neither, after running up to ``t_max`` (the run is extended from ``t_end`` by doubling while any
  start is undecided).

The fraction synchronised has the Clopper–Pearson (exact binomial) 95 % interval (:func:`clopper_pearson`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

import particles
from particles import clusters
from meanfield.core import checks
from meanfield.models import SelfAttention

__all__ = ["Synchronisation", "synchronisation", "clopper_pearson", "classify"]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of a proportion k/n (Clopper & Pearson 1934): Beta quantiles, [0, ·] at k = 0 and
    [·, 1] at k = n."""
    if not (0 <= k <= n and n >= 1):
        raise ValueError(f"need 0 <= k <= n, n >= 1; got k = {k!r}, n = {n!r}.")
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class Synchronisation:
    """The outcome of :func:`synchronisation`: counts of synchronised, held (non-synchronised equilibria) and
    undecided starts, the fraction synchronised and its 95 % Clopper–Pearson interval, the time run, and how many
    clusters (tokens with ⟨x_i, x_j⟩ >= 1 − 1e-6 joined) each held start rests in."""

    n: int
    beta: float
    seeds: int
    synchronised: int
    held: int
    undecided: int
    interval: tuple[float, float]
    t: float
    held_clusters: tuple = ()

    @property
    def fraction(self) -> float:
        return self.synchronised / self.seeds


def classify(model, x, sync_tol: float, rest_tol: float) -> np.ndarray:
    """0 synchronised, 1 held at a non-synchronised equilibrium, 2 undecided, for each system of x (batch, n, 2)."""
    G = np.einsum("bid,bjd->bij", x, x)
    synced = 1.0 - G.min(axis=(1, 2)) < sync_tol
    speed = np.max(np.linalg.norm(particles.velocity(model, x, strategy="quadrature"), axis=-1), axis=-1)
    return np.where(synced, 0, np.where(speed < rest_tol, 1, 2))


def synchronisation(n: int, beta: float, seeds: int, t_end: float = 50.0, t_max: float = 800.0,
                    sync_tol: float = 1e-8, rest_tol: float = 1e-9, rng=0, dt: float | None = None) -> Synchronisation:
    """Synchronisation of ``seeds`` uniform starts of n tokens on S¹ under SA with inverse temperature β (module
    docstring)."""
    model = SelfAttention(beta)
    g = checks.generator(rng)
    theta = g.uniform(0.0, 2.0 * np.pi, (int(seeds), int(n)))
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    t, span = 0.0, float(t_end)
    state = np.full(int(seeds), 2)
    while True:
        todo = state == 2
        x[todo] = particles.simulate(model, x[todo], [t, t + span], dt=dt).x[-1]
        t += span
        state[todo] = classify(model, x[todo], sync_tol, rest_tol)
        if not np.any(state == 2) or t >= t_max:
            break
        span = min(t, t_max - t)  # double the time run
    k = int(np.sum(state == 0))
    held = tuple(int(c) for c in clusters.cluster_count(x[state == 1], 1e-6)) if np.any(state == 1) else ()
    return Synchronisation(int(n), float(beta), int(seeds), k, int(np.sum(state == 1)), int(np.sum(state == 2)),
                           clopper_pearson(k, int(seeds)), t, held)
