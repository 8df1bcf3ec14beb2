r"""Stability of the mean-field flow: measured W_1 ratios against the Dobrushin bound (MATH.md §4).

Dobrushin's estimate. If X[μ](x) is L_x-Lipschitz in x and L_μ-Lipschitz in
μ for W_1, uniformly, then for two solutions, with the chordal metric of the
embedding,

    W_1(μ_t, ν_t) <= exp(∫_0^t (L_x + L_μ(s)) ds) W_1(μ_0, ν_0).

(Couple the initial measures optimally and follow both flows:
d/dt|x_t − y_t| <= L_x|x_t − y_t| + L_μ W_1(μ_t, ν_t); integrate against the
coupling and apply Grönwall.) The distances here are geodesic; chordal and
geodesic distances satisfy |x − y| <= d(x, y) <= (π/2)|x − y|, so the bound on
the geodesic ratio carries an extra factor π/2.

Constants, per head, with a = β‖Q‖‖K‖ (|β⟨Qx, Ky⟩| <= a) and v = ‖V‖
(operator 2-norms), k(x, y) = e^{β⟨Qx,Ky⟩} ∈ [e^{-a}, e^{a}], u_μ(x) the
unprojected average, X = P_x^⊥ u:

- In μ. |∇_y k| <= a e^{a} and |∇_y(k V y)| <= v e^{a}(1 + a). For SA,
  u_μ = N_μ/Z_μ and |N_μ/Z_μ − N_ν/Z_ν| <= (|N_μ − N_ν| + |N_ν/Z_ν||Z_μ − Z_ν|)/Z_μ
  with |N_ν/Z_ν| <= v, so L_μ <= v e^{a}(1 + 2a)/min_x Z_μ(x) <= v(1 + 2a)e^{2a}
  (the a priori constant of MATH.md §4 for Q = K = V = I). For USA
  (Z ≡ 1), L_μ <= v e^{a}(1 + a).
- In x. For SA, ∇_x u = Cov_x(Vy, βKᵀQ y) under the tilted law, of norm
  <= v a; then |D(P_x^⊥ u)| <= |∇u| + 2|u| <= v(2 + a). For USA,
  |∇u| <= v a e^{a}, |u| <= v e^{a}: L_x <= v e^{a}(2 + a).
- Multi-head: the sum over heads.

A posteriori constant. The only lossy step of L_μ is min_x Z_μ(x) >= e^{-a}:
along a computed solution the actual minimum is known, and
L_μ(t) = v e^{a}(1 + 2a)/min_x Z_{μ_t}(x) is still a rigorous bound
(computed here for zonal SA on the circle, where K_β*μ_t is spectral).

The constants are computed by :func:`meanfield.models.lipschitz_constants`
(:mod:`meanfield.models.bounds`, the one place for bounds on the field).

R^d: the support-radius bound R(t) <= exp(∫‖V‖) R_0 (CACP) for particle
systems, :func:`support_radius_bound`. (The W_1 ratio of two density solutions
is measured on the circle only so far.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meanfield import Density, solve
from meanfield.domains import CIRCLE
from meanfield.domains.circle import CircleSpectral
from meanfield.models import EUCLIDEAN_MODELS, heads, lipschitz_constants

from .wasserstein import wasserstein

__all__ = ["Stability", "stability", "lipschitz_constants", "support_radius", "support_radius_bound"]


@dataclass(frozen=True)
class Stability:
    """Result of :func:`stability`.

    Attributes
    ----------
    t : ndarray, shape (T,)
    distance : ndarray, shape (T,)
        W_1(μ_t, ν_t) (geodesic).
    ratio : ndarray, shape (T,)
        distance / distance[0].
    bound : ndarray, shape (T,)
        (π/2) e^{(L_x + L_μ) t}, the a priori Dobrushin bound on ``ratio``.
    bound_a_posteriori : ndarray or None
        (π/2) exp(∫ (L_x + L_μ(s)) ds) with L_μ(s) from min_x Z_{μ_s}(x)
        (zonal SA on the circle), else None.
    L_x, L_mu : float
        The a priori constants (module docstring).
    slack : float
        min over t > t_0 of bound / ratio: how far from tight the a priori bound is.
    slack_a_posteriori : float or None
    """

    t: np.ndarray
    distance: np.ndarray
    ratio: np.ndarray
    bound: np.ndarray
    bound_a_posteriori: np.ndarray | None
    L_x: float
    L_mu: float
    slack: float
    slack_a_posteriori: float | None


def _min_normaliser(density: Density, beta: float) -> float:
    """min_x K_β*μ(x) on the 3/2-padded grid (spectral, zonal kernels on the circle)."""
    scaled = CircleSpectral(density.grid, beta, 1.0, True).kernel_sum(density.values)  # e^{-β} K_β*μ
    return float(np.min(scaled)) * np.exp(beta)


def stability(model, mu0: Density, nu0: Density, t_eval, **solve_kwargs) -> Stability:
    r"""Measure W_1(μ_t, ν_t)/W_1(μ_0, ν_0) and compare with the Dobrushin bound.

    Parameters
    ----------
    model : SelfAttention or MultiHeadAttention
    mu0, nu0 : Density
        Two initial densities on the circle.
    t_eval : array_like
        Increasing times, ``t_eval[0]`` the initial time.
    **solve_kwargs
        Passed to :func:`meanfield.solve` (default ``refine=True``).
    """
    for name, d in (("mu0", mu0), ("nu0", nu0)):
        if not isinstance(d, Density) or d.domain is not CIRCLE:
            raise NotImplementedError(f"`{name}` must be a density on the circle (the other domains: issue 14).")
    t_eval = np.asarray(t_eval, dtype=float)
    if wasserstein(mu0, nu0, 1) == 0:
        raise ValueError("the initial densities coincide: W_1(μ_0, ν_0) = 0, there is no ratio to measure.")
    solve_kwargs.setdefault("refine", True)
    solve_kwargs.setdefault("representation", "grid")  # the distances below are between grid densities
    sm = solve(model, mu0, (t_eval[0], t_eval[-1]), t_eval=t_eval, **solve_kwargs)
    sn = solve(model, nu0, (t_eval[0], t_eval[-1]), t_eval=t_eval, **solve_kwargs)
    dist = np.array([wasserstein(a, b, 1) for a, b in zip(sm.densities, sn.densities)])
    if not dist[0] > 0:
        raise ValueError("the initial densities coincide: W_1(μ_0, ν_0) = 0, there is no ratio to measure.")
    ratio = dist / dist[0]
    Lx, Lmu = lipschitz_constants(model)
    tau = t_eval - t_eval[0]
    with np.errstate(over="ignore"):  # an infinite bound is a vacuous one, reported as such
        bound = 0.5 * np.pi * np.exp((Lx + Lmu) * tau)
    post = None
    if len(heads(model)) == 1 and model.normalized and model.zonal is not None:
        beta_eff, c = model.zonal
        a, v = abs(beta_eff), abs(c)
        rate = np.array([Lx + v * np.exp(a) * (1.0 + 2.0 * a) / _min_normaliser(d, beta_eff) for d in sm.densities])
        # ∫ L(s) ds by the trapezoidal rule on t_eval, rounded up by taking the larger endpoint
        steps = np.diff(tau) * np.maximum(rate[1:], rate[:-1])
        with np.errstate(over="ignore"):
            post = 0.5 * np.pi * np.exp(np.concatenate([[0.0], np.cumsum(steps)]))
    later = tau > 0
    slack = float(np.min(bound[later] / ratio[later])) if later.any() else float("nan")
    slack_post = float(np.min(post[later] / ratio[later])) if post is not None and later.any() else None
    return Stability(t=t_eval, distance=dist, ratio=ratio, bound=bound, bound_a_posteriori=post, L_x=Lx, L_mu=Lmu,
                     slack=slack, slack_a_posteriori=slack_post)


def support_radius(x) -> np.ndarray:
    """max_i |x_i| for positions (..., n, d) → shape (...)."""
    return np.max(np.linalg.norm(np.asarray(x, dtype=float), axis=-1), axis=-1)


def support_radius_bound(model, t, radius0: float) -> np.ndarray:
    r"""R(t) <= exp(∫_0^t ‖V‖ ds) R_0 = e^{‖V‖ t} R_0 for constant V (CACP; MATH.md §4).

    Softmax, L2, Sinkhorn and masked attention move x by V times a convex
    combination of the tokens, and sigmoid attention by V times a
    combination with coefficients in [0, 1] summing to at most 1, so
    |ẋ| <= ‖V‖ R(t) and Grönwall gives the bound. Multi-head: the sum of the
    heads' ‖V‖.
    """
    total = 0.0
    for h in heads(model):
        if not isinstance(h, EUCLIDEAN_MODELS):
            raise TypeError(f"the support-radius bound is for R^d models, got {type(h).__name__}.")
        total += 1.0 if h.V is None else float(np.linalg.norm(h.V, 2))
    return np.exp(total * np.asarray(t, dtype=float)) * float(radius0)
