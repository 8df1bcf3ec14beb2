r"""Metastable states of a particle trajectory: its clusters over time, the states and merges, the energy staircase.

A cluster at tolerance δ is a connected component of the graph with an edge where ⟨x_i, x_j⟩ >= 1 − δ (as
:func:`particles.clusters.cluster_count`), i.e. |x_i − x_j| <= √(2δ) on the sphere (:func:`chord_clusters`, the
library's one single-linkage function); its mass is the sum of its particles' weights, its centre their normalised
weighted mean. :func:`cluster_masses` gives the masses of every output time, which
:func:`meanfield.lagrangian.metastability.metastable_states` cuts into metastable states (Geshkovski, Koubbi,
Polyanskiy & Rigollet, arXiv 2410.06833: clusters form by t ~ β and persist until log t ~ β, E_β climbing a
staircase between saddles); :func:`trajectory_states` does both and attaches E_β of each output (the plateaus of the
staircase). :func:`formed_clusters` gives the centres of the clusters of the first state, to compare with the
prediction from the initial data (:func:`meanfield.lagrangian.metastability.predicted_clusters`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from meanfield.lagrangian.metastability import MetastableStates, metastable_states


__all__ = ["chord_clusters", "cluster_masses", "cluster_centres", "trajectory_states", "formed_clusters",
           "circular_error", "merging_flow", "MergingRun"]


def _frames(x, weights):
    x = np.asarray(x, dtype=float)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3 or x.shape[1] < 1:
        raise ValueError(f"positions must have shape (T, n, d) or (n, d) (one system, time first), got {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("positions contain non-finite values.")
    n = x.shape[1]
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"`weights` must be {n} finite non-negative numbers, got shape {np.shape(weights)}.")
    return x, w


def _delta(delta) -> float:
    d = float(delta)
    if not 0 < d <= 2:
        raise ValueError(f"`delta` must lie in (0, 2] (inner products lie in [-1, 1]), got {delta!r}.")
    return d


def chord_clusters(x, radius: float) -> np.ndarray:
    r"""The single-linkage clusters of points at chord distance ``radius``: the connected components of the graph

    .. math:: i \sim j \iff |x_i - x_j| \le h,

    equivalently, for unit vectors, ⟨x_i, x_j⟩ >= 1 − h²/2 (|x_i − x_j|² = 2 − 2⟨x_i, x_j⟩), the δ-graph of
    :func:`cluster_masses` and :func:`particles.clusters.cluster_count` with h = √(2δ) (the clusters of the
    metastable states, module docstring).

    The pairs come from a k-d tree (``scipy.spatial.cKDTree.query_pairs``: the pairs whose Σ_k (x_ik − x_jk)² is
    at most h², exactly, no approximation), the components from ``scipy.sparse.csgraph.connected_components`` on
    those edges: O(n log n + edges) in time and memory — few edges while the clusters are many and apart (thousands
    of points in milliseconds), but up to n²/2 when all points lie within h of one another (n = 4000 collapsed
    to one cluster: 0.7 s and ~0.4 GB of pairs, as much as the dense n × n comparison it replaced).
    The comparison is the squared Euclidean distance against h²: a pair at distance exactly h (to round-off) may
    be joined here and not by the dot-product form ⟨x_i, x_j⟩ >= 1 − h²/2, or the reverse — the two differ by a few
    ulps of 2 − 2⟨x_i, x_j⟩; away from such ties they agree.

    Parameters
    ----------
    x : array_like, shape (n, d)
        Points (unit vectors for the sphere's reading; any finite points for the chord one).
    radius : float
        h >= 0.

    Returns
    -------
    ndarray of int, shape (n,)
        The component of each point, numbered 0, 1, ... in the order of their first point (the labels of
        ``connected_components``: the same graph gives the same labels, whatever its storage).
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"`x` must have shape (n, d), got {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("`x` contains non-finite values (NaN or inf).")
    h = float(radius)
    if not h >= 0:
        raise ValueError(f"`radius` must be >= 0, got {radius!r}.")
    n = x.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    pairs = cKDTree(x).query_pairs(h, output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs), dtype=np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def _components(x, delta):
    """The clusters at tolerance δ: ⟨x_i, x_j⟩ >= 1 − δ, the chord √(2δ) on the sphere (:func:`chord_clusters`)."""
    return chord_clusters(x, np.sqrt(2.0 * delta))


def cluster_masses(x, delta: float = 1e-4, weights=None) -> list:
    """The masses of the clusters at tolerance δ at each output time, heaviest first (module docstring).

    Parameters
    ----------
    x : array_like, shape (T, n, d)
        One system's positions over time (``Trajectory.x`` of an unbatched run), or (n, d) for one time.
    delta : float
        Points with ⟨x_i, x_j⟩ >= 1 − δ are joined (δ = 1e-4: within about 0.014 rad). Choose it below the initial
        spacing (2π/n for n evenly spread points on S¹: δ = 1e-4 suits n < 440), or the spread points already form
        one chain.
    weights : array_like, shape (n,), optional
        Default 1/n each.

    Returns
    -------
    list of T ndarrays
    """
    x, w = _frames(x, weights)
    delta = _delta(delta)
    out = []
    for X in x:
        lab = _components(X, delta)
        out.append(np.sort(np.bincount(lab, weights=w))[::-1])
    return out


def cluster_centres(x, delta: float = 1e-4, weights=None, min_mass: float = 0.02):
    """(centres (k, d), masses (k,)) of the clusters of mass >= ``min_mass`` of one configuration ``x`` (n, d),
    heaviest first; a centre is the normalised weighted mean of the cluster's points."""
    x, w = _frames(x, weights)
    if x.shape[0] != 1:
        raise ValueError(f"`x` must be one configuration (n, d), got {x.shape[0]} frames.")
    X = x[0]
    lab = _components(X, _delta(delta))
    m = np.bincount(lab, weights=w)
    keep = np.flatnonzero(m >= min_mass)
    keep = keep[np.argsort(m[keep])[::-1]]
    c = np.array([w[lab == j] @ X[lab == j] for j in keep]).reshape(len(keep), X.shape[1])
    return c / np.linalg.norm(c, axis=1)[:, None], m[keep]


def trajectory_states(trajectory, beta: float | None = None, *, delta: float = 1e-4, min_mass: float = 0.02,
                      settled: float = 0.9, min_duration: float = 0.0) -> MetastableStates:
    r"""The metastable states of an unbatched particle trajectory (module docstring), with E_β of each output.

    Parameters
    ----------
    trajectory : particles.Trajectory
        One system (``x`` of shape (T, n, d)).
    beta : float, optional
        The β of E_β = (1/2β)Σ w_i w_j e^{β⟨x_i, x_j⟩} reported for each state (None: no energy).
    delta, min_mass, settled, min_duration : float
        As for :func:`cluster_masses` and :func:`meanfield.lagrangian.metastability.metastable_states`.
    """
    x = np.asarray(trajectory.x)
    if x.ndim != 3:
        raise ValueError(f"`trajectory` must hold one system (x of shape (T, n, d)), got x of shape {x.shape}; "
                         "index a batched run's positions and use cluster_masses.")
    w = np.asarray(trajectory.weights, dtype=float)
    masses = cluster_masses(x, delta, w)
    energy = None if beta is None else np.array([trajectory.frame(k).energy(beta) for k in range(len(trajectory.t))])
    return metastable_states(trajectory.t, masses, energy=energy, min_mass=min_mass, settled=settled,
                             min_duration=min_duration, total=float(np.sum(w)))


def formed_clusters(t, x, delta: float = 1e-4, weights=None, *, min_mass: float = 0.02, settled: float = 0.9,
                    persist: float = 0.0):
    """The clusters that formed: at the first output time whose clusters of mass >= ``min_mass`` hold at least
    ``settled`` of the mass and whose count then stays the same (at every settled output) for at least ``persist``,
    (t, centres (k, d), masses (k,)); None where no output qualifies.

    ``persist`` > 0 skips transient counts: from iid points, whose close pairs form small components at any δ, the
    clusters that are still gathering can hold 90 % of the mass in several δ-chains for a moment.

    Parameters
    ----------
    t : array_like, shape (T,)
    x : array_like, shape (T, n, d)
    delta, weights, min_mass, settled
        As for :func:`trajectory_states`.
    persist : float
        How long the count must last, >= 0.
    """
    x, w = _frames(x, weights)
    t = np.asarray(t, dtype=float)
    if t.shape != (x.shape[0],):
        raise ValueError(f"`t` must have one time per frame ({x.shape[0]}), got shape {t.shape}.")
    if not persist >= 0:
        raise ValueError(f"`persist` must be >= 0, got {persist!r}.")
    total = float(np.sum(w))
    count = np.full(t.size, -1)
    for k, m in enumerate(cluster_masses(x, delta, w)):
        heavy = m[m >= min_mass * total]
        if np.sum(heavy) >= settled * total:
            count[k] = heavy.size
    for k in np.flatnonzero(count >= 0):
        later = (t >= t[k]) & (t <= t[k] + persist) & (count >= 0)
        if t[-1] - t[k] >= persist and np.all(count[later] == count[k]):
            c, mm = cluster_centres(x[k], delta, w, min_mass * total)
            return float(t[k]), c, mm
    return None


def circular_error(predicted, formed) -> float:
    """The largest distance on S¹ from a predicted angle to the nearest formed one and back (the Hausdorff distance
    of the two sets of angles, radians in [0, π]); inf where either is empty."""
    a = np.mod(np.asarray(predicted, dtype=float).ravel(), 2.0 * np.pi)
    b = np.mod(np.asarray(formed, dtype=float).ravel(), 2.0 * np.pi)
    if a.size == 0 or b.size == 0:
        return float("inf")
    d = np.abs(a[:, None] - b[None, :])
    d = np.minimum(d, 2.0 * np.pi - d)
    return float(max(np.max(np.min(d, axis=1)), np.max(np.min(d, axis=0))))


@dataclass(frozen=True)
class MergingRun:
    """A particle run whose coincident points were merged as it went (:func:`merging_flow`).

    Attributes
    ----------
    t : ndarray, shape (T,)
        The output times.
    points : tuple of T ndarrays (n_k, d)
        The points at each output (n_k falls as points merge).
    weights : tuple of T ndarrays (n_k,)
        Their weights (a merged point carries the sum of the weights it replaced).
    nfev : int
        Field evaluations.
    """

    t: np.ndarray
    points: tuple
    weights: tuple
    nfev: int

    def masses(self, delta: float = 1e-4) -> list:
        """:func:`cluster_masses` of each output (the clusters at tolerance δ of its weighted points)."""
        return [cluster_masses(x, delta, w)[0] for x, w in zip(self.points, self.weights)]

    def energy(self, beta: float) -> np.ndarray:
        """E_β = (1/2β) Σ w_i w_j e^{β⟨x_i, x_j⟩} at each output (½|Σ w_i x_i|² at β = 0)."""
        out = []
        for x, w in zip(self.points, self.weights):
            a = np.outer(w, w) * np.exp(beta * (np.clip(x @ x.T, -1.0, 1.0) - 1.0))
            out.append(0.5 * float(np.sum((w @ x) ** 2)) if beta == 0 else float(np.exp(beta) * np.sum(a) / (2 * beta)))
        return np.array(out)

    def states(self, beta: float | None = None, *, delta: float = 1e-4, min_mass: float = 0.02,
               settled: float = 0.9, min_duration: float = 0.0) -> MetastableStates:
        """The metastable states of the run (:func:`meanfield.lagrangian.metastability.metastable_states`), with
        E_β of each output where ``beta`` is given."""
        energy = None if beta is None else self.energy(beta)
        return metastable_states(self.t, self.masses(delta), energy=energy, min_mass=min_mass, settled=settled,
                                 min_duration=min_duration, total=float(np.sum(self.weights[0])))


def _merge(x, w, h):
    """Points within chord distance h joined (single linkage): normalised weighted means, summed weights."""
    if x.shape[0] < 2:
        return x, w
    lab = chord_clusters(x, h)
    if lab.max() + 1 == x.shape[0]:
        return x, w
    W = np.bincount(lab, weights=w)
    X = np.stack([np.bincount(lab, weights=w * x[:, k]) for k in range(x.shape[1])], axis=1)
    return X / np.linalg.norm(X, axis=1)[:, None], W


def merging_flow(model, x0, t_eval, weights=None, *, merge: float = 1e-9, rtol: float = 1e-10,
                 atol: float = 1e-13) -> MergingRun:
    r"""Weighted points ẋ_i = X[Σ_j w_j δ_{x_j}](x_i) (``model.field``) over long times, points that coincide merged.

    Metastable states last for times e^{cβ} (arXiv 2410.06833) during which each cluster has collapsed to a point
    to round-off; the run then has few distinct points, and merging them (their weights summed, at their
    normalised weighted mean) makes the slow motion between the clusters cheap to follow to the last merge. Two
    points within chord distance ``merge`` of each other at an output time are merged: an O(merge) change of the
    measure in W₁, with no other approximation (coincident points move together exactly). Each output interval is
    integrated by scipy's LSODA (stiff where stragglers are still falling into their clusters), the points put
    back on the sphere at each output.

    Parameters
    ----------
    model : a sphere model (``SelfAttention``, ...)
        Its ``field(points, weights, queries)`` is the velocity.
    x0 : array_like, shape (n, d)
        Unit vectors.
    t_eval : array_like, shape (T,)
        Increasing output times (geometric spacing for lifetimes spanning decades); merges happen at these.
    weights : array_like, shape (n,), optional
        Default 1/n each.
    merge : float
        The chord distance below which points are merged, > 0.
    rtol, atol : float
        LSODA's tolerances.

    Returns
    -------
    MergingRun
    """
    from scipy.integrate import solve_ivp

    x, w = _frames(x0, weights)
    x = x[0]
    if np.max(np.abs(np.linalg.norm(x, axis=1) - 1.0)) > 1e-8:
        raise ValueError("`x0` must be unit vectors (to 1e-8).")
    t = np.asarray(t_eval, dtype=float)
    if t.ndim != 1 or t.size < 1 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError(f"`t_eval` must be increasing finite times, got shape {t.shape}.")
    if not merge > 0:
        raise ValueError(f"`merge` must be positive, got {merge!r}.")
    x, w = _merge(x / np.linalg.norm(x, axis=1)[:, None], w, merge)
    pts, wts, nfev = [x], [w], 0
    for a, b in zip(t[:-1], t[1:]):
        n, d = x.shape
        ww = w

        def rhs(_, y):
            p = y.reshape(n, d)
            p = p / np.linalg.norm(p, axis=1)[:, None]  # the solver's stages leave the sphere by its tolerance
            return np.asarray(model.field(p, ww, p)).ravel()

        sol = solve_ivp(rhs, (a, b), x.ravel(), method="LSODA", rtol=rtol, atol=atol)
        if not sol.success:
            raise RuntimeError(f"merging_flow: LSODA failed on [{a:g}, {b:g}]: {sol.message}")
        nfev += sol.nfev
        x = sol.y[:, -1].reshape(n, d)
        x, w = _merge(x / np.linalg.norm(x, axis=1)[:, None], w, merge)
        pts.append(x)
        wts.append(w)
    return MergingRun(t, tuple(pts), tuple(wts), nfev)
