r"""Coarsening a weighted point set to fewer atoms, with a certified bound on the Wasserstein distance it moves.

A measure μ = Σ_i w_i δ_{x_i} on a domain (S^{d-1} or R^d) is replaced by
μ' = Σ_k m_k δ_{r_k}: the points are partitioned into cells C_k, each cell's
mass m_k = Σ_{i ∈ C_k} w_i is put at one representative r_k of the domain, and
the map T(x_i) = r_{k(i)} is an explicit transport of μ onto μ'. Its cost
bounds the distance it moves (the coupling (id, T)#μ is admissible):

.. math:: W_p(μ, μ') \le \Big(\sum_i w_i\, d(x_i, T(x_i))^p\Big)^{1/p}
          =: b_p \;\le\; \max_k \max_{i ∈ C_k} d(x_i, r_k),

and, W_p being a metric, for any ν the triangle inequality gives

.. math:: |W_p(μ, ν) − W_p(μ', ν)| \le W_p(μ, μ') \le b_p .

b_p is computed exactly from the atoms (geodesic distances, by the domain's
``chord_distance`` of the chords |x_i − r_k|), not estimated: it certifies
whatever partition is used. It is also a bound for every q <= p (Jensen:
the L^q norm of the displacement is at most its L^p norm under a probability).

The partition (:func:`coarsen`) is built greedily, top down, as a k-d tree of
the ambient coordinates: starting from one cell holding every point, the cell
of largest cost Σ_{i∈C} w_i |x_i − c_C|^p (c_C its weighted centroid) is cut
in two by the hyperplane through c_C normal to the coordinate axis of largest
weighted variance, until there are ``atoms`` cells or every cell has cost 0
(the variance split of colour quantisation: Wan, Wong & Prusinkiewicz, ACM TOG
7, 1988). Heavy, spread cells are cut first, so where mass piles up (clusters
of a Lagrangian frame) the cells are fine and where there is little mass they
are coarse. The representative r_k is the weighted centroid brought back onto
the domain (``domain.retract``: c/|c| on spheres), the minimiser of the
cell's Σ w_i |x_i − r|² in R^d. The heuristic only decides how small b_p is;
the bound holds for any partition.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numba as nb
import numpy as np

__all__ = ["Coarsened", "coarsen"]


@dataclass(frozen=True)
class Coarsened:
    """A measure coarsened by :func:`coarsen`.

    Attributes
    ----------
    points : ndarray, shape (k, d)
        The representatives r_k, points of the domain.
    weights : ndarray, shape (k,)
        The masses m_k of the cells (positive, summing to the input's total).
    bound : float
        b_p = (Σ_i w_i d(x_i, r_{k(i)})^p)^{1/p} >= W_p(input, coarsened), exactly as computed (0 when
        nothing was merged); a bound on W_q for every q <= ``p`` as well.
    p : float
        The order the bound was computed for.
    labels : ndarray of int, shape (n,)
        The cell k(i) of every input point (-1 for points of weight 0, which are dropped).
    """

    points: np.ndarray
    weights: np.ndarray
    bound: float
    p: float
    labels: np.ndarray


@nb.njit(cache=True)
def _cell(x, w, idx, start, end, p):
    """Weighted centroid, per-axis weighted variance and cost Σ w |x − c|^p of the cell idx[start:end]."""
    d = x.shape[1]
    mass = 0.0
    c = np.zeros(d)
    for k in range(start, end):
        i = idx[k]
        mass += w[i]
        for j in range(d):
            c[j] += w[i] * x[i, j]
    if mass > 0.0:
        for j in range(d):
            c[j] /= mass
    var = np.zeros(d)
    cost = 0.0
    for k in range(start, end):
        i = idx[k]
        s = 0.0
        for j in range(d):
            dx = x[i, j] - c[j]
            s += dx * dx
            var[j] += w[i] * dx * dx
        cost += w[i] * (s if p == 2.0 else s ** (0.5 * p))
    return c, var, cost


@nb.njit(cache=True)
def _partition(x, idx, start, end, axis, threshold):
    """Reorder idx[start:end] so that points with x[:, axis] < threshold come first; the index where the rest start."""
    lo, hi = start, end - 1
    while lo <= hi:
        if x[idx[lo], axis] < threshold:
            lo += 1
        else:
            idx[lo], idx[hi] = idx[hi], idx[lo]
            hi -= 1
    return lo


@nb.njit(cache=True)
def _greedy_cells(x, w, atoms, p):
    """The greedy variance-split k-d partition (module docstring): ``labels`` (n,) in 0..cells-1 and the cell count."""
    n = x.shape[0]
    idx = np.arange(n)
    starts = np.zeros(atoms, np.int64)
    ends = np.zeros(atoms, np.int64)
    ends[0] = n
    cells = 1
    c, var, cost = _cell(x, w, idx, 0, n, p)
    heap = [(-cost, 0)]
    while cells < atoms and len(heap) > 0:
        negative, k = heapq.heappop(heap)
        if -negative <= 0.0:
            break
        s, e = starts[k], ends[k]
        c, var, cost = _cell(x, w, idx, s, e, p)
        axis = np.argmax(var)
        mid = _partition(x, idx, s, e, axis, c[axis])
        if mid == s or mid == e:  # the centroid rounded onto an end: cut halfway between the extremes
            lo, hi = x[idx[s], axis], x[idx[s], axis]
            for q in range(s, e):
                lo = min(lo, x[idx[q], axis])
                hi = max(hi, x[idx[q], axis])
            mid = _partition(x, idx, s, e, axis, 0.5 * (lo + hi)) if hi > lo else s
            if mid == s or mid == e:
                continue  # identical coordinates: nothing to gain, the cell stays whole
        ends[k] = mid
        starts[cells], ends[cells] = mid, e
        for q, (a, b) in enumerate(((s, mid), (mid, e))):
            _, _, part = _cell(x, w, idx, a, b, p)
            heapq.heappush(heap, (-part, k if q == 0 else cells))
        cells += 1
    labels = np.empty(n, np.int64)
    for k in range(cells):
        for q in range(starts[k], ends[k]):
            labels[idx[q]] = k
    return labels, cells


def coarsen(points, weights, atoms: int, domain, p: float = 1.0) -> Coarsened:
    r"""At most ``atoms`` atoms standing for Σ_i w_i δ_{x_i}, and the certified bound b_p on W_p between the two.

    Parameters
    ----------
    points : ndarray, shape (n, d)
        Points of ``domain``.
    weights : ndarray, shape (n,)
        Non-negative masses; atoms of weight 0 are dropped (they move no mass).
    atoms : int >= 1
        The most atoms the result may have.
    domain : Domain
        Where the points live: its ``retract`` brings the cells' centroids onto it and its ``chord_distance`` turns
        chords into the geodesic distances the bound is made of.
    p : float >= 1
        The order of the bound.

    Returns
    -------
    Coarsened
        With ``bound`` = (Σ_i w_i d(x_i, r_{k(i)})^p)^{1/p} >= W_p(μ, μ') (module docstring); the input itself
        (bound 0) when it has at most ``atoms`` atoms of positive weight.

    Raises
    ------
    ValueError
        ``atoms`` not an integer >= 1, or ``p`` < 1.
    """
    if isinstance(atoms, bool) or int(atoms) != atoms or atoms < 1:
        raise ValueError(f"`atoms` must be an integer >= 1, got {atoms!r}.")
    p = float(p)
    if not (np.isfinite(p) and p >= 1):
        raise ValueError(f"`p` must be a finite number >= 1, got {p!r}.")
    x = np.ascontiguousarray(points, dtype=float)
    w = np.ascontiguousarray(weights, dtype=float)
    keep = w > 0
    labels = np.full(w.shape, -1, dtype=np.int64)
    if np.count_nonzero(keep) <= atoms:
        labels[keep] = np.arange(np.count_nonzero(keep))
        return Coarsened(x[keep], w[keep], 0.0, p, labels)
    xk, wk = np.ascontiguousarray(x[keep]), np.ascontiguousarray(w[keep])
    cell, k = _greedy_cells(xk, wk, int(atoms), p)
    mass = np.bincount(cell, wk, minlength=k)
    centroid = np.stack([np.bincount(cell, wk * xk[:, j], minlength=k) for j in range(xk.shape[1])], axis=-1)
    centroid /= mass[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = np.asarray(domain.retract(centroid), dtype=float)
    for c in np.nonzero(~np.all(np.isfinite(reps), axis=1))[0]:  # a centroid at a sphere's centre: the heaviest atom
        members = np.nonzero(cell == c)[0]
        reps[c] = xk[members[np.argmax(wk[members])]]
    moved = np.asarray(domain.chord_distance(np.linalg.norm(xk - reps[cell], axis=-1)), dtype=float)
    bound = float(np.sum(wk * moved**p) ** (1.0 / p))
    labels[keep] = cell
    return Coarsened(reps, mass, bound, p, labels)
