r"""Stability of the mean-field flow: measured W_1 ratios against three Dobrushin bounds (MATH.md §4).

For two solutions μ_t, ν_t of ∂_t μ + div(μ X[μ]) = 0, couple the initial
measures optimally and follow both flows. With D(t) = ∫ d(x_t, y_t) dπ_0 >= W_1(μ_t, ν_t),

    D'(t) <= Λ(t) D(t) + sup_y |X[μ_t](y) − X[ν_t](y)| ... <= (Λ(t) + L_μ(t)) D(t),

where Λ(t) bounds the rate at which the flow of X[μ_t] separates two points
and L_μ(t) the Lipschitz constant of μ ↦ X[μ](y) for W_1; Grönwall gives

    W_1(μ_t, ν_t) / W_1(μ_0, ν_0) <= exp(∫_0^t (Λ(s) + L_μ(s)) ds).

Three instances, each rigorous for the exact solutions, each reported:

1. **A priori** (``bound``): Λ = L_x and L_μ the global constants of
   :mod:`meanfield.models.bounds` (for Q = K = V = I on the sphere
   L_x = 2 + β, L_μ = (1 + 2β)e^{2β}, MATH.md §4). On the circle and S² they
   are derived in the chordal metric, so the geodesic ratio carries a factor
   π/2 (|x − y| <= d(x, y) <= (π/2)|x − y|). In R^d, R(t) = e^{Σ‖V‖ t} R_0
   bounds the support of both exact solutions (CACP; :func:`support_radius_bound`)
   and the constants are taken at R(t).
2. **A posteriori** (``bound_a_posteriori``): the only lossy factor of L_μ,
   K_μ(x) = sup_y k(x, y)/Z_μ(x) <= e^{2a}, is measured along the computed μ_t:
   L_μ(t) = Σ_h v(1 + 2a_μ) max_x K_μ(x) (normalised heads; the a priori
   constant elsewhere), still with L_x and the factor π/2.
3. **Sharper** (``bound_sharp``): Λ(t) = max_x Λ(x) the measured one-sided
   Lipschitz number of X[μ_t] (λ_max of the symmetric covariant derivative,
   :func:`meanfield.domains.sphere.geometry.one_sided_lipschitz`; negative
   where the flow contracts) with the a posteriori L_μ(t), all in the geodesic
   distance itself (the covariant argument needs no chordal detour: no π/2).
   Since Λ <= L_x it never exceeds the a posteriori bound.

Maxima over x are taken over the nodes of a query grid (on the circle and S²
at least 512 nodes and lmax 48; in R^d the grid of μ_t), and turned into suprema over the domain with the grid's
covering radius h: log K_μ is 2·sup|∇_x log k|-Lipschitz in x, Λ(x) is
``second``-Lipschitz (:class:`meanfield.models.bounds.HeadConstants`), so
sup <= max over nodes + h × that constant (capped by the a priori values). In R^d
the suprema run over the ball |x| <= R(t) (the nodes of the cells meeting it);
where that ball leaves the grid's box nothing is known there and the
a posteriori and sharper bounds are reported as ∞ from that time on.

What is measured, not bounded: the rates are evaluated at the output times and
∫ rate ds is summed with the larger endpoint of each interval, so dense
``t_eval`` (the rates change on the time scale of the dynamics) is the user's
part; and the estimates use the computed μ_t, not the exact one (the grid
error is what :func:`validation.wasserstein.discretisation` estimates).

Distances: exact W_1 — the circle's CDF formula, exact OT with the geodesic
cost between the grid measures on S², quantiles in R^1 and exact OT in R^2
(:func:`validation.wasserstein.wasserstein`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate

from meanfield.solvers.solve import solve
from meanfield.density import Frame
from meanfield.models import EUCLIDEAN_MODELS, head_constants, heads, lipschitz_constants
from meanfield.models.schedule import piecewise_constant
from meanfield.solvers.solve import Solution

from .wasserstein import wasserstein

__all__ = ["Stability", "stability", "lipschitz_constants", "support_radius", "support_radius_bound"]

@dataclass(frozen=True)
class Stability:
    """Result of :func:`stability`.

    Attributes
    ----------
    t : ndarray, shape (T,)
    distance : ndarray, shape (T,)
        W_1(μ_t, ν_t) (geodesic on the circle and S²).
    ratio : ndarray, shape (T,)
        distance / distance[0].
    bound, bound_a_posteriori, bound_sharp : ndarray, shape (T,)
        The three bounds on ``ratio`` (module docstring); ``inf`` where vacuous.
    rate, rate_a_posteriori, rate_sharp : ndarray, shape (T,)
        Their integrands at the output times: L_x + L_μ, L_x + L_μ(t), Λ(t) + L_μ(t).
    L_x, L_mu : float
        The a priori constants at t_0.
    slack, slack_a_posteriori, slack_sharp : float
        min over t > t_0 of bound / ratio, for each bound (>= 1: the bound holds).
    domain : str
    radius : ndarray or None
        R(t), the support radius bound in R^d (None on the circle and S²).
    note : str
        Why a bound is vacuous where it is ("" otherwise).
    """

    t: np.ndarray
    distance: np.ndarray
    ratio: np.ndarray
    bound: np.ndarray
    bound_a_posteriori: np.ndarray
    bound_sharp: np.ndarray
    rate: np.ndarray
    rate_a_posteriori: np.ndarray
    rate_sharp: np.ndarray
    L_x: float
    L_mu: float
    slack: float
    slack_a_posteriori: float
    slack_sharp: float
    domain: str
    radius: np.ndarray | None = None
    note: str = ""

    def table(self) -> str:
        """The ratio and the three bounds at every output time, as text."""
        rows = [f"{'t':>7} {'W1':>11} {'ratio':>9} {'a priori':>10} {'a post.':>10} {'sharper':>10}"]
        for k in range(self.t.size):
            rows.append(f"{self.t[k]:7.3f} {self.distance[k]:11.4e} {self.ratio[k]:9.4f} {self.bound[k]:10.3e} "
                        f"{self.bound_a_posteriori[k]:10.3e} {self.bound_sharp[k]:10.3e}")
        rows.append(f"slack (min bound/ratio): a priori {self.slack:.3g}, a posteriori {self.slack_a_posteriori:.3g}, "
                    f"sharper {self.slack_sharp:.3g}")
        if self.note:
            rows.append(self.note)
        return "\n".join(rows)


# ---------------------------------------------------------------------- inputs
def _solutions(model, mu, nu, t_eval, solve_kwargs):
    """Two solutions at the same times: given, or solved from two initial densities on one grid."""
    if isinstance(mu, Solution) or isinstance(nu, Solution):
        for name, s in (("mu", mu), ("nu", nu)):
            if not isinstance(s, Solution):
                raise TypeError(f"`mu` and `nu` must both be Solutions or both initial densities; `{name}` is a "
                                f"{type(s).__name__}.")
        if t_eval is not None or solve_kwargs:
            raise ValueError("`t_eval` and solver options apply to initial densities, not to given Solutions.")
        if mu.t.shape != nu.t.shape or not np.array_equal(mu.t, nu.t):
            raise ValueError(f"the solutions are given at different times: {mu.t.size} and {nu.t.size} output "
                             "times that do not coincide; solve both with the same `t_eval`.")
        if mu.densities[0].domain is not nu.densities[0].domain:
            raise ValueError(f"the solutions live on different domains: {mu.densities[0].domain.name} and "
                             f"{nu.densities[0].domain.name}.")
        return mu, nu
    for name, d in (("mu", mu), ("nu", nu)):
        if not isinstance(d, Frame) or d.grid is None:  # the solves below are on this grid
            raise TypeError(f"`{name}` must be a Density (an initial density) or a Solution, got {type(d).__name__}.")
    if mu.domain is not nu.domain:
        raise ValueError(f"`mu` and `nu` live on different domains: {mu.domain.name} and {nu.domain.name}.")
    if mu.grid != nu.grid:
        raise ValueError(f"`mu` and `nu` must be on the same grid to be compared, got {mu.grid!r} and {nu.grid!r}.")
    if t_eval is None:
        raise ValueError("`t_eval` (increasing output times, the first the initial time) is required with initial "
                         "densities.")
    t_eval = np.asarray(t_eval, dtype=float)
    if t_eval.ndim != 1 or t_eval.size < 2 or not np.all(np.diff(t_eval) > 0) or not np.all(np.isfinite(t_eval)):
        raise ValueError(f"`t_eval` must be at least two increasing finite times, got {t_eval!r}.")
    if wasserstein(mu, nu, 1) == 0:
        raise ValueError("the initial densities coincide: W_1(μ_0, ν_0) = 0, there is no ratio to measure.")
    solve_kwargs.setdefault("refine", mu.domain.default_max_n is not None)  # finite volumes are not refined
    solve_kwargs.setdefault("representation", "grid")  # the distances below are between grid densities
    solve_kwargs.setdefault("raise_on_failure", True)  # a lost resolution is not a distance
    span = (t_eval[0], t_eval[-1])
    return (solve(model, mu, span, t_eval=t_eval, **solve_kwargs),
            solve(model, nu, span, t_eval=t_eval, **solve_kwargs))


def _support_radius(frame) -> float:
    """Radius of a ball about 0 holding the support of a frame in R^d (cells of positive mass, whole cells)."""
    pts, w = frame.as_measure()
    reach = np.linalg.norm(pts[w > 0], axis=-1)
    if frame.grid is not None:  # a grid density's nodes stand for whole cells
        return float(np.max(reach)) + frame.grid.covering_radius
    return float(np.max(reach))


def _probes(frame, radius):
    """Query points where maxima over x are taken, the covering radius h, and whether they cover the set."""
    own = frame.grid  # None for a frame of points
    grid = frame.domain.probe_grid(own)  # covering radius h enters the bounds through e^{2a h} and h × ``second``
    if grid is None:
        raise NotImplementedError("a posteriori bounds for Lagrangian measures in R^d (no probe grid): compare grid "
                                  "solutions (representation='grid').")
    d = grid.points.shape[-1]
    pts = grid.points.reshape(-1, d)
    h = float(grid.covering_radius)
    if frame.domain.bounded:
        return pts, h, True
    lo, hi = grid.bounds[:, 0], grid.bounds[:, 1]
    covered = bool(np.all(lo <= -radius) and np.all(hi >= radius))
    return pts[np.linalg.norm(pts, axis=-1) <= radius + h], h, covered


# ---------------------------------------------------------------------- rates
def _measured_rates(model, frame, radius, consts):
    """(L_μ(t), Λ(t)) measured on one frame (module docstring), each capped by its a priori value."""
    pts, w = frame.as_measure()
    keep = w > 0
    pts, w = pts[keep], w[keep] / np.sum(w[keep])
    probes, h, covered = _probes(frame, radius)
    if not covered:
        return float("inf"), float("inf")
    R = None if frame.domain.bounded else radius
    L_mu = 0.0
    for head, c in zip(heads(model), consts):
        if c.a_mu is None or not hasattr(head, "log_kernel_excess"):
            L_mu += c.L_mu
            continue
        excess = head.log_kernel_excess(pts, w, probes, 1.0 if R is None else R)  # R = 1 on the sphere
        log_k = min(float(np.max(excess)) + 2.0 * c.grad_x * h, 2.0 * c.a_mu)
        L_mu += c.v * (1.0 + 2.0 * c.a_mu) * np.exp(log_k)
    L_x = sum(c.L_x for c in consts)
    if not all(hasattr(hd, "average_and_jacobian") for hd in heads(model)):
        return L_mu, L_x
    u, Du = model.average_and_jacobian(pts, w, probes)
    lam = float(np.max(frame.domain.one_sided_lipschitz(probes, u, Du))) + h * sum(c.second for c in consts)
    return L_mu, min(lam, L_x)


def _integrate(tau, rate):
    """∫_0^t rate ds at the output times, each interval taken at its larger endpoint."""
    with np.errstate(invalid="ignore"):
        steps = np.diff(tau) * np.maximum(rate[1:], rate[:-1])
    return np.concatenate([[0.0], np.cumsum(steps)])


def _bound(factor, integral):
    with np.errstate(over="ignore", invalid="ignore"):
        out = factor * np.exp(integral)
    return np.where(np.isnan(out), np.inf, out)


def stability(model, mu, nu, t_eval=None, **solve_kwargs) -> Stability:
    r"""Measure W_1(μ_t, ν_t)/W_1(μ_0, ν_0) and compare it with three Dobrushin bounds (module docstring).

    Parameters
    ----------
    model : an attention model (SelfAttention, MultiHeadAttention, or an R^d model)
    mu, nu : Density or Solution
        Two initial densities on one grid (the circle, S², or a box in R^d,
        d = 1, 2), solved here to ``t_eval``; or two solutions of ``model``
        at the same output times (grid densities or Lagrangian measures on the
        circle and S²).
    t_eval : array_like, optional
        Increasing output times, the first the initial time (initial densities only).
    **solve_kwargs
        Passed to :func:`meanfield.solve` (default ``representation="grid"``, ``refine=True`` on the circle and S²).

    Returns
    -------
    Stability

    Raises
    ------
    ValueError
        Different domains, grids or times; W_1(μ_0, ν_0) = 0 (no ratio).
    """
    if any(h.time_dependent for h in heads(model)):
        raise NotImplementedError(
            "stability() takes constant weights: its Grönwall integrals sample the constants at the output times, "
            "which misses the jumps of a schedule of layers. support_radius_bound handles time-dependent V.")
    sm, sn = _solutions(model, mu, nu, t_eval, dict(solve_kwargs))
    t = np.asarray(sm.t, dtype=float)
    domain = sm.densities[0].domain
    dist = np.array([wasserstein(a, b, 1) for a, b in zip(sm.densities, sn.densities)])
    if not dist[0] > 0:
        raise ValueError("the initial measures coincide: W_1(μ_0, ν_0) = 0, there is no ratio to measure.")
    ratio = dist / dist[0]
    tau = t - t[0]
    note = []
    if not domain.bounded:  # R^d: the supports grow, the constants hold on a ball of the support's radius
        R0 = max(_support_radius(sm.densities[0]), _support_radius(sn.densities[0]))
        radius = support_radius_bound(model, tau, R0)
        factor = 1.0
    else:
        radius = None
        factor = 0.5 * np.pi  # the chordal constants, read in the geodesic distance
    rate, post, sharp = (np.empty(t.size) for _ in range(3))
    Lx0 = Lmu0 = None
    for k, frame in enumerate(sm.densities):
        R = None if radius is None else float(radius[k])
        consts = [head_constants(h, R) for h in heads(model)]
        Lx, Lmu = sum(c.L_x for c in consts), sum(c.L_mu for c in consts)
        if Lx0 is None:
            Lx0, Lmu0 = Lx, Lmu
        rate[k] = Lx + Lmu
        L_mu_post, lam = _measured_rates(model, frame, R, consts)
        post[k] = Lx + L_mu_post
        sharp[k] = lam + L_mu_post
        if not np.isfinite(L_mu_post) and not note:
            note.append(f"from t = {t[k]:g} the support bound R(t) = {R:.3g} leaves the grid's box, or L_μ is not "
                        "derived for this model: the measured bounds are vacuous (∞) there.")
    bound = _bound(factor, _integrate(tau, rate))
    bound_post = _bound(factor, _integrate(tau, post))
    bound_sharp = _bound(1.0, _integrate(tau, sharp))
    later = tau > 0

    def slack(b):
        with np.errstate(invalid="ignore"):
            return float(np.min(b[later] / ratio[later])) if later.any() else float("nan")

    return Stability(t=t, distance=dist, ratio=ratio, bound=bound, bound_a_posteriori=bound_post,
                     bound_sharp=bound_sharp, rate=rate, rate_a_posteriori=post, rate_sharp=sharp, L_x=Lx0,
                     L_mu=Lmu0, slack=slack(bound), slack_a_posteriori=slack(bound_post),
                     slack_sharp=slack(bound_sharp), domain=domain.name, radius=radius, note=" ".join(note))


def support_radius(x) -> np.ndarray:
    """max_i |x_i| for positions (..., n, d) → shape (...)."""
    return np.max(np.linalg.norm(np.asarray(x, dtype=float), axis=-1), axis=-1)


def support_radius_bound(model, t, radius0: float, t0: float = 0.0) -> np.ndarray:
    r"""R(t) <= exp(∫_{t0}^t ‖V(s)‖ ds) R_0, = e^{‖V‖ (t − t0)} R_0 for constant V (CACP; MATH.md §4, §8).

    Softmax, L2, Sinkhorn and masked attention move x by V times a convex
    combination of the tokens, and sigmoid attention by V times a
    combination with coefficients in [0, 1] summing to at most 1, so
    |ẋ| <= ‖V(t)‖ R(t) and Grönwall gives the bound. Multi-head: the sum of the
    heads' ‖V‖. Time-dependent values V(t) (:mod:`meanfield.models.schedule`)
    enter through the integral: exact for schedules of layers (a sum over the
    layers), by adaptive quadrature split at the layer boundaries for callables.

    Parameters
    ----------
    model : an R^d attention model (or a multi-head sum of them)
    t : array_like
        Times >= ``t0``.
    radius0 : float
        The support radius at ``t0``.
    t0 : float
        The initial time (default 0; it matters only for time-dependent V).
    """
    hs = heads(model)
    for h in hs:
        if not isinstance(h, EUCLIDEAN_MODELS):
            raise TypeError(f"the support-radius bound is for R^d models, got {type(h).__name__}.")
    t = np.asarray(t, dtype=float)
    if np.any(t < t0):
        raise ValueError(f"`t` must be >= t0 = {t0:g}, got min(t) = {t.min():g}.")

    def speed(s: float) -> float:  # Σ_h ‖V_h(s)‖
        return sum(1.0 if g.V is None else float(np.linalg.norm(g.V, 2)) for g in (h.at(s) for h in hs))

    if not any(h.time_dependent for h in hs):
        return np.exp(speed(t0) * (t - t0)) * float(radius0)
    flat = t.ravel()
    order = np.argsort(flat)
    integral = np.empty(flat.size)
    acc, left = 0.0, float(t0)
    layered = piecewise_constant(model)
    for i in order:
        right = float(flat[i])
        cuts = np.concatenate([[left], np.unique(np.concatenate([h.breakpoints(left, right) for h in hs])), [right]])
        for a, b in zip(cuts[:-1], cuts[1:]):
            if b <= a:
                continue
            if layered:  # constant on each piece: the exact integral
                acc += speed(0.5 * (a + b)) * (b - a)
            else:
                acc += integrate.quad(speed, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
        integral[i], left = acc, right
    return np.exp(integral.reshape(t.shape)) * float(radius0)
