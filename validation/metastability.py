r"""The lifetime of metastable states against β: the fit log T ≈ cβ + b with its confidence interval.

Geshkovski, Koubbi, Polyanskiy & Rigollet (arXiv 2410.06833): clusters persist until log t ~ β. For two clusters
of masses m₁, m₂ near the antipodal saddle on S¹ the gap u = π − φ grows at the rate (m₁/m₂ + m₂/m₁)e^{−2β} (SA;
docs/MATH.md §13), so their lifetime is T₂ ≈ e^{2β} log(u_*/u₀)/(m₁/m₂ + m₂/m₁): c = 2, the data entering only
the intercept; two clusters at a gap φ < π merge after about e^{β(1 − cos φ)}, c = 1 − cos φ.
:func:`lifetime_fit` fits c by least squares over all (β, seed) pairs, with the Student-t interval of the slope.

From the density (:func:`lagrangian_merging_flow`): the Lagrangian measure of a smooth initial density on S¹
(adaptive Gauss panels, docs/MATH.md §6) is followed along its characteristics while the clusters form; once its
points have collapsed onto few distinct points it is handed to :func:`particles.metastability.merging_flow`, the
same weighted-point flow with coincident points merged that the particle study runs, for the long plateaus.
:func:`two_cluster_state` reads T₂ and its two-cluster prediction (masses and gap at the state's start) from
either run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from meanfield.integrate import Status
from particles.metastability import MergingRun, chord_clusters, cluster_centres, cluster_masses, merging_flow

__all__ = ["LifetimeFit", "lifetime_fit", "two_cluster_merge_time", "LagrangianMergingRun", "lagrangian_merging_flow",
           "TwoClusterState", "two_cluster_state"]


@dataclass(frozen=True)
class LifetimeFit:
    """log T = c β + b fitted over (β, T) pairs.

    Attributes
    ----------
    c : float
        The slope.
    interval : (float, float)
        Its confidence interval at ``level``.
    intercept : float
        b.
    level : float
    n : int
        The number of (β, T) pairs used (finite, positive T).
    beta_range : (float, float)
    residual_sd : float
        The standard deviation of the residuals of log T (the seed-to-seed scatter).
    """

    c: float
    interval: tuple
    intercept: float
    level: float
    n: int
    beta_range: tuple
    residual_sd: float


def lifetime_fit(beta, lifetimes, level: float = 0.95) -> LifetimeFit:
    """Least-squares slope c of log T against β over all pairs, with its Student-t interval (n − 2 degrees of freedom).

    Parameters
    ----------
    beta : array_like, shape (m,)
    lifetimes : array_like, shape (m,) or (m, seeds)
        T for each β (a row of seeds per β); NaN entries (no merge seen) are left out.
    level : float
        In (0, 1).

    Returns
    -------
    LifetimeFit

    Raises
    ------
    ValueError
        Mismatched shapes, non-finite β, a non-positive lifetime, or fewer than three usable pairs over two βs.
    """
    b = np.asarray(beta, dtype=float)
    T = np.asarray(lifetimes, dtype=float)
    if b.ndim != 1 or T.shape[:1] != b.shape or T.ndim > 2:
        raise ValueError(f"`lifetimes` must have shape ({b.size},) or ({b.size}, seeds), got {T.shape}.")
    if not np.all(np.isfinite(b)):
        raise ValueError("`beta` must be finite.")
    if not 0 < level < 1:
        raise ValueError(f"`level` must lie in (0, 1), got {level!r}.")
    T = T.reshape(b.size, -1)
    if np.any(T[~np.isnan(T)] <= 0) or np.any(np.isinf(T)):
        raise ValueError("lifetimes must be positive and finite (NaN for none seen).")
    x = np.repeat(b, T.shape[1])
    y = T.ravel()
    ok = ~np.isnan(y)
    x, y = x[ok], np.log(y[ok])
    if x.size < 3 or np.unique(x).size < 2:
        raise ValueError(f"the fit needs at least three lifetimes over two values of beta, got {x.size} over "
                         f"{np.unique(x).size}.")
    fit = stats.linregress(x, y)
    q = stats.t.ppf(0.5 + level / 2.0, df=x.size - 2)
    resid = y - (fit.intercept + fit.slope * x)
    return LifetimeFit(float(fit.slope), (float(fit.slope - q * fit.stderr), float(fit.slope + q * fit.stderr)),
                       float(fit.intercept), float(level), int(x.size), (float(x.min()), float(x.max())),
                       float(np.std(resid, ddof=2)) if x.size > 2 else 0.0)


def two_cluster_merge_time(beta: float, m1: float, m2: float, gap: float, delta: float = 1e-4,
                           normalized: bool = True) -> float:
    r"""The time two point clusters of masses m₁, m₂ on S¹ at angular distance ``gap`` take to come within
    cos φ >= 1 − δ (the merge as :func:`particles.metastability.cluster_masses` sees it), under SA or USA
    (Q = K = V = I; the weighted two-point system, exact):

    .. math:: \dot φ = −e^{β\cos φ}\sin φ\,\Big[\frac{m_1}{m_2 e^{β} + m_1 e^{β\cos φ}}
              + \frac{m_2}{m_1 e^{β} + m_2 e^{β\cos φ}}\Big]\ \text{(SA)},\qquad
              \dot φ = −(m_1 + m_2) e^{β\cos φ}\sin φ\ \text{(USA)},

    T = ∫_{φ_δ}^{gap} dφ/|φ̇|, by adaptive quadrature. Near the antipodal saddle (gap → π) it grows like
    e^{2β} log(1/(π − gap))/(m₁/m₂ + m₂/m₁) (SA).

    Parameters
    ----------
    beta, m1, m2 : float
        β, and the masses (> 0).
    gap : float
        φ₀ in (φ_δ, π).
    delta : float
        The merge tolerance δ.
    normalized : bool
        SA (True) or USA.
    """
    from scipy.integrate import quad

    if not (m1 > 0 and m2 > 0):
        raise ValueError(f"the masses must be positive, got m1={m1!r}, m2={m2!r}.")
    end = float(np.arccos(1.0 - delta))
    if not end < gap < np.pi:
        raise ValueError(f"`gap` must lie in (arccos(1 - delta), pi) = ({end:.4g}, pi), got {gap!r}.")

    def rate(phi):  # |φ̇|, with e = e^{β(cos φ − 1)}: SA's denominators divided by e^{β}
        e = np.exp(beta * (np.cos(phi) - 1.0))
        if normalized:
            return e * np.sin(phi) * (m1 / (m2 + m1 * e) + m2 / (m1 + m2 * e))
        return (m1 + m2) * np.exp(beta) * e * np.sin(phi)

    val, _ = quad(lambda p: 1.0 / rate(p), end, gap, limit=400)
    return float(val)


@dataclass(frozen=True)
class LagrangianMergingRun(MergingRun):
    """A :class:`particles.metastability.MergingRun` whose first outputs are frames of the Lagrangian measure of a
    density (:func:`lagrangian_merging_flow`): ``points`` and ``weights`` of each output are the Lagrangian measure's
    points and their fixed masses up to the hand-over, the merged points after it.

    The clusters of a Lagrangian frame are the density's (:func:`meanfield.lagrangian.clusters`: connected sets
    where ρ >= 10 × uniform, joined where their centres are within the angle arccos(1 − δ)), not the δ-graph of its
    points: a resolved density's points are as close as its panels make them, and its massless or nearly massless
    characteristics between two clusters would join them. Two collapsed clusters merge, in either run, when their
    centres come within arccos(1 − δ) — the event :func:`two_cluster_merge_time` times.

    Attributes
    ----------
    frames : tuple of LagrangianMeasure
        The Lagrangian frames at the output times before the hand-over.
    handover : float
        The time the Lagrangian measure was handed to the merging flow (NaN where it never collapsed: the
        Lagrangian measure ran to the end).
    lagrangian_points : int
        The Lagrangian measure's number of points at the hand-over (or at its last frame).
    merged_points : int
        How many distinct points with mass (at the merge distance) it had there.
    lagrangian_status : str
        How the Lagrangian part ended (``Solution.message``).
    """

    frames: tuple = ()
    handover: float = float("nan")
    lagrangian_points: int = 0
    merged_points: int = 0
    lagrangian_status: str = ""

    def _clusters(self, k: int, delta: float):
        from meanfield.lagrangian import clusters

        return clusters(self.frames[k], separation=float(np.arccos(1.0 - delta)))

    def masses(self, delta: float = 1e-4) -> list:
        """The masses of the clusters of each output, heaviest first: the density's clusters on the Lagrangian
        frames (class docstring), :func:`particles.metastability.cluster_masses` on the merged points after."""
        if not 0 < delta <= 2:
            raise ValueError(f"`delta` must lie in (0, 2], got {delta!r}.")
        out = [np.array([c.mass for c in self._clusters(k, delta)]) for k in range(len(self.frames))]
        for x, w in zip(self.points[len(self.frames):], self.weights[len(self.frames):]):
            out.append(cluster_masses(x, delta, w)[0])
        return out

    def centres(self, k: int, delta: float = 1e-4, min_mass: float = 0.02):
        """(centres (m, d), masses (m,)) of the clusters of mass >= ``min_mass`` at output k, heaviest first."""
        if k >= len(self.frames):
            return cluster_centres(self.points[k], delta, self.weights[k], min_mass)
        cl = [c for c in self._clusters(k, delta) if c.mass >= min_mass]
        return np.array([c.centre for c in cl]).reshape(len(cl), -1), np.array([c.mass for c in cl])


def _distinct(points, weights, merge: float) -> int:
    """The number of groups of points with mass joined within chord distance ``merge``."""
    held = weights > 0
    return int(np.max(chord_clusters(points[held], merge))) + 1 if np.any(held) else 0


def lagrangian_merging_flow(model, density, t_eval, *, merge: float = 1e-9, collapsed: float = 0.125,
                            max_merged: int = 256, lagrangian_tol: float = 1e-12, max_points: int | None = None,
                            rtol: float = 1e-10, atol: float = 1e-13) -> LagrangianMergingRun:
    r"""The Lagrangian measure of ``density`` through the formation of its clusters, then the merging flow of its
    collapsed points over the long plateaus (the lifetimes of metastable states from the density).

    The continuity equation ∂_t μ + div(μ X[μ]) = 0 from μ_0 = ρ_0 dθ is solved by characteristics
    (``meanfield.solve(..., representation="lagrangian")``: adaptive Gauss panels, then fixed nodes; docs/MATH.md
    §6): μ_t = Σ_i w_i δ_{X_i(t)} with Ẋ_i = X[μ_t](X_i) is an exact weak solution, its weights w_i = ρ_0(x_i) ×
    quadrature weight resolving ρ_0 and the flow map. Inside a cluster the characteristics converge exponentially
    and soon coincide to round-off; explicit steps across a plateau of length e^{2β} are then held to O(1) by the
    contraction inside the clusters (the system is stiff), over all the points. So at the first accepted step where
    the points, joined within chord distance ``merge``, number at most min(``max_merged``, ``collapsed`` × the
    points), the measure is handed to :func:`particles.metastability.merging_flow` (LSODA, points within ``merge``
    merged at each output): an O(``merge``) change of μ in W₁ and no other approximation, as in the particle study.
    Past the hand-over the log-density is no longer carried (the clusters are points: their masses and positions
    are the state).

    Parameters
    ----------
    model : SelfAttention
        A zonal model on S¹ (the panels' condition).
    density : meanfield.Density
        ρ_0 on a ``CircleGrid`` (or S²: the same code, pairwise fields in the merging flow).
    t_eval : array_like
        Increasing output times from 0 (geometric spacing for lifetimes spanning decades).
    merge : float
        The merge distance, > 0.
    collapsed : float
        In (0, 1]: hand over once the distinct points are at most this fraction of the Lagrangian points.
    max_merged : int
        And at most this many (the merging flow's LSODA Jacobian costs O(n²) field evaluations of n points).
    lagrangian_tol, rtol, atol : float
        The panels' tolerance (``solve``'s ``lagrangian_tol``) and the integrators' tolerances (the Lagrangian part
        takes ``rtol`` too).
    max_points : int, optional
        ``solve``'s: the most points the panels refine to before fixed nodes go on (default the circle's 2^20).

    Returns
    -------
    LagrangianMergingRun
        ``states(beta)`` gives the metastable states, ``T2`` among them; :func:`two_cluster_state` the prediction.
    """
    from meanfield import solve

    t = np.asarray(t_eval, dtype=float)
    if t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError(f"`t_eval` must be at least two increasing finite times, got shape {t.shape}.")
    if not merge > 0:
        raise ValueError(f"`merge` must be positive, got {merge!r}.")
    if not 0 < collapsed <= 1:
        raise ValueError(f"`collapsed` must lie in (0, 1], got {collapsed!r}.")
    if int(max_merged) < 1:
        raise ValueError(f"`max_merged` must be a positive integer, got {max_merged!r}.")

    def gathered(_, frame):  # > 0 while the points are spread, <= 0 once they have collapsed onto few
        n = int(np.count_nonzero(frame.weights))
        return _distinct(frame.points, frame.weights, merge) - min(float(max_merged), collapsed * n) - 0.5

    gathered.terminal, gathered.direction = True, -1.0
    sol = solve(model, density, (float(t[0]), float(t[-1])), t_eval=t, representation="lagrangian",
                lagrangian_tol=lagrangian_tol, max_points=max_points, rtol=rtol, progress=False, events=[gathered])
    frames = [f for f in sol.frames if f.lagrangian]
    if sol.status not in (Status.SUCCESS, Status.EVENT) or not frames:
        raise RuntimeError(f"lagrangian_merging_flow: the Lagrangian measure stopped at t = {sol.t_reached:g}: "
                           f"{sol.message}")
    last = frames[-1]
    kept = [f for f in frames if np.any(np.isclose(f.t, t, rtol=0, atol=1e-12 * max(1.0, abs(f.t))))]
    times = [float(f.t) for f in kept]
    pts, wts = [np.asarray(f.points) for f in kept], [np.asarray(f.weights) for f in kept]
    nfev, handover = int(sol.nfev), float("nan")
    if sol.status is Status.EVENT:
        handover = float(last.t)
        rest = t[t > handover * (1 + 1e-12)]
        if rest.size:
            held = last.weights > 0  # characteristics without mass (where ρ_0 = 0) move nothing and weigh nothing
            run = merging_flow(model, last.points[held], np.concatenate([[handover], rest]), last.weights[held],
                               merge=merge, rtol=rtol, atol=atol)
            times += list(rest)
            pts += list(run.points[1:])
            wts += list(run.weights[1:])
            nfev += run.nfev
    return LagrangianMergingRun(np.array(times), tuple(pts), tuple(wts), nfev, tuple(kept), handover,
                                len(last.weights), _distinct(last.points, last.weights, merge), sol.message)


@dataclass(frozen=True)
class TwoClusterState:
    """The two-cluster state of a run and its prediction (:func:`two_cluster_state`).

    Attributes
    ----------
    T2 : float
        Its lifetime (``MetastableStates.T2``; NaN where the run did not go from two clusters to one).
    start : float
        Its first output time.
    masses : (float, float)
        The masses of its two clusters there (clusters of mass >= ``min_mass``).
    gap : float
        The angle between their centres there.
    prediction : float
        :func:`two_cluster_merge_time` of those masses and gap: the exact time two point masses take to merge.
    resolution : float
        The output spacing at its end: T₂ is located to within it.
    """

    T2: float
    start: float
    masses: tuple
    gap: float
    prediction: float
    resolution: float


def two_cluster_state(run, beta: float, *, delta: float = 1e-4, min_mass: float = 0.02,
                      normalized: bool = True) -> TwoClusterState:
    """T₂ of a merging run (:func:`particles.metastability.merging_flow` or :func:`lagrangian_merging_flow`) and the
    two-point prediction from the masses and gap of its two clusters at the state's first output (the particle
    study's definition: clusters at tolerance δ, the states of ``run.states``).

    The prediction is exact for two point masses (the weighted two-point ODE, :func:`two_cluster_merge_time`); it
    errs by the clusters' width at the start and by the stragglers (mass outside the two clusters), and T₂ itself
    by the output spacing at the merge (``resolution``).
    """
    st = run.states(delta=delta, min_mass=min_mass)
    nan = float("nan")
    two = [(a, b) for a, b in zip(st.states[:-1], st.states[1:]) if a.count == 2 and b.count == 1]
    if not two:
        return TwoClusterState(nan, nan, (nan, nan), nan, nan, nan)
    a, _ = two[0]
    k = int(np.searchsorted(run.t, a.start))
    centres = getattr(run, "centres", None)  # a Lagrangian run's clusters are its density's
    m_min = min_mass * float(np.sum(run.weights[k]))
    c, m = centres(k, delta, m_min) if centres else cluster_centres(run.points[k], delta, run.weights[k], m_min)
    gap = float(np.arccos(np.clip(c[0] @ c[1], -1.0, 1.0)))
    total = float(np.sum(run.weights[k]))  # masses as fractions of the run's mass (USA's rate scales with them)
    pred = two_cluster_merge_time(beta, m[0] / total, m[1] / total, gap, delta, normalized)
    return TwoClusterState(float(a.lifetime), float(a.start), (float(m[0]), float(m[1])), gap, pred,
                           float(a.resolution))
