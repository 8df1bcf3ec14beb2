r"""Clustering diagnostics (GLPR §6.3), for single systems and batches.

All functions take positions of shape (..., n, d) — any leading batch (and
time) axes — and return one number per system, shape (...).

- :func:`pair_fraction` — fraction of ordered pairs i ≠ j with
  ⟨x_i, x_j⟩ >= 1 − δ (the statistic of GLPR Figure 3 is its expectation,
  P(⟨x_1(t), x_2(t)⟩ >= 1 − δ), by permutation equivariance);
- :func:`cluster_count` — connected components of the graph with an edge
  where ⟨x_i, x_j⟩ >= 1 − δ;
- :func:`span_dimension` — number of eigenvalues of the Gram matrix
  (1/n)Σ x_i x_iᵀ above ``tol`` × the largest;
- :func:`collapse_time` — the first time at which every pair satisfies
  ⟨x_i, x_j⟩ >= 1 − δ (a single cluster at tolerance δ), ``inf`` if never;
- :func:`in_hemisphere` — whether the points lie in an open hemisphere (0 is not
  in their convex hull), the hypothesis of GLPR Theorem 6.3; for iid uniform
  points its probability is Wendel's (:func:`meanfield.analysis.exact.wendel`).

Of one weighted point set (a measure Σ w_i δ_{x_i}: a Lagrangian frame, thousands
of points, many collapsed onto one another):

- :func:`weighted_pair_fraction` — ∬ 1{⟨x, y⟩ >= 1 − δ} dμ dμ / μ(S)², the
  measure's own pair fraction (pairs i = j included, as for a density);
- :func:`heaviest_cluster` — the centre of its heaviest cluster;
- :func:`merge_coincident` — points closer than h merged, their weights summed.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from scipy.sparse.csgraph import connected_components

from meanfield.kernels.fastexp import FASTMATH
from meanfield.kernels.threads import run_tasks

__all__ = ["pair_fraction", "cluster_count", "span_dimension", "collapse_time", "in_hemisphere", "CERTIFICATE_MARGIN",
           "weighted_pair_fraction", "heaviest_cluster", "merge_coincident"]

#: ``in_hemisphere`` answers True only with a direction v, |v_k| <= 1, such that every computed ⟨v, x_i⟩ exceeds
#: this: far above the rounding of those dots (about d^{3/2}·1.1e-16 for unit x_i: 7e-15 at d = 16, 1e-12 at
#: d = 4000), so each true ⟨v, x_i⟩ is positive
CERTIFICATE_MARGIN = 1e-11


def _positions(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim < 2 or x.shape[-2] < 2:
        raise ValueError(f"positions must have shape (..., n, d) with n >= 2, got {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("positions contain non-finite values.")
    return x


def _delta(delta) -> float:
    d = float(delta)
    if not (0 <= d <= 2):
        raise ValueError(f"`delta` must lie in [0, 2] (inner products lie in [-1, 1]), got {delta!r}.")
    return d


def _close(x, delta):
    G = x @ np.swapaxes(x, -1, -2)
    return G >= 1.0 - delta


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _row_count(x, b, i, threshold):
    """#{j > i : ⟨x_i, x_j⟩ >= threshold} in system b, or −1 where a coordinate of x_i is not finite (the sum of
    0·x is then NaN; a non-finite x_j is found at its own row). Vectorised dots (fast-math reassociation)."""
    n, d = x.shape[1], x.shape[2]
    nan = 0.0
    for k in range(d):
        nan += 0.0 * x[b, i, k]
    if nan != 0.0:
        return -1
    count = 0
    for j in range(i + 1, n):
        dot = 0.0
        for k in range(d):
            dot += x[b, i, k] * x[b, j, k]
        if dot >= threshold:
            count += 1
    return count


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _close_pairs(x, threshold, out, start, stop):
    """out[b] = #{i < j : ⟨x_i, x_j⟩ >= threshold} for the systems b = start..stop-1, no n×n array; −1 where a
    coordinate is not finite. One task per system on :func:`meanfield.kernels.threads.run_tasks`, so the same bits
    for any thread count."""
    for b in range(start, stop):
        count = 0
        for i in range(x.shape[1]):
            row = _row_count(x, b, i, threshold)
            if row < 0:
                count = -1
                break
            count += row
        out[b] = count


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _close_pair_rows(x, threshold, out, start, stop):
    """out[t] = :func:`_row_count` of row i of system b for t = b·n + i = start..stop-1 (a task per row)."""
    n = x.shape[1]
    for t in range(start, stop):
        out[t] = _row_count(x, t // n, t % n, threshold)


#: Systems of more points than this are counted a row per task (:func:`_close_pair_rows`): one system's count then
#: runs on every thread, in rounds a deferred Ctrl-C can stop (n = 10⁵: 5·10⁹ pairs, 10–20 s on two cores)
_ROWS_FROM = 2048


def pair_fraction(x, delta: float) -> np.ndarray:
    """Fraction of ordered pairs i ≠ j with ⟨x_i, x_j⟩ >= 1 − δ, shape (...).

    One compiled pass per system with vectorised dots (the finiteness check included), on numba's threads: at
    n = 32, d = 128 about 10 µs per system on one thread, as fast as reading it from memory here (~3 GB/s) and
    3.3× the strict-order loop it replaces (the dots' last bits may differ). Systems of more than 2048 points are
    counted a row per task (the same counts), so that one large system uses every thread and a deferred Ctrl-C
    (:mod:`meanfield.core.interrupts`) stops it between rounds of rows."""
    delta = _delta(delta)
    x = np.asarray(x, dtype=float)
    if x.ndim < 2 or x.shape[-2] < 2:
        raise ValueError(f"positions must have shape (..., n, d) with n >= 2, got {x.shape}.")
    n = x.shape[-2]
    flat = np.ascontiguousarray(x.reshape((-1,) + x.shape[-2:]))
    if n > _ROWS_FROM:
        rows = np.empty(flat.shape[0] * n, dtype=np.int64)
        cost = np.tile(np.arange(n, 0, -1, dtype=float), flat.shape[0])  # row i: its n − 1 − i pairs, and itself
        run_tasks(_close_pair_rows, rows.size, flat, 1.0 - delta, rows, costs=cost)
        rows = rows.reshape(flat.shape[0], n)
        counts = np.where(np.any(rows < 0, axis=1), -1, rows.sum(axis=1))
    else:
        counts = np.empty(flat.shape[0], dtype=np.int64)
        run_tasks(_close_pairs, flat.shape[0], flat, 1.0 - delta, counts)
    if np.any(counts < 0):
        raise ValueError("positions contain non-finite values.")
    return (2.0 * counts / (n * (n - 1))).reshape(x.shape[:-2])


def cluster_count(x, delta: float) -> np.ndarray:
    """Number of clusters: connected components of {⟨x_i, x_j⟩ >= 1 − δ}, shape (...)."""
    x, delta = _positions(x), _delta(delta)
    close = _close(x, delta)
    flat = close.reshape((-1,) + close.shape[-2:])
    counts = np.array([connected_components(c, directed=False)[0] for c in flat])
    return counts.reshape(close.shape[:-2])


def span_dimension(x, tol: float = 1e-6) -> np.ndarray:
    """Number of eigenvalues of (1/n)Σ x_i x_iᵀ above ``tol`` × the largest, shape (...)."""
    x = _positions(x)
    if not (0 < tol < 1):
        raise ValueError(f"`tol` must lie in (0, 1), got {tol!r}.")
    G = np.swapaxes(x, -1, -2) @ x / x.shape[-2]
    ev = np.linalg.eigvalsh(G)
    return np.sum(ev > tol * ev[..., -1:], axis=-1)


def collapse_time(t, x, delta: float) -> np.ndarray:
    """First t_k at which all pairs satisfy ⟨x_i, x_j⟩ >= 1 − δ; ``inf`` if none.

    Parameters
    ----------
    t : array_like, shape (T,)
    x : array_like, shape (T, ..., n, d)
        Positions over time (a :class:`particles.Trajectory`'s ``x``).
    """
    t = np.asarray(t, dtype=float)
    x = _positions(x)
    if x.shape[0] != t.size:
        raise ValueError(f"`x` must have len(t) = {t.size} along its first axis, got {x.shape[0]}.")
    single = pair_fraction(x, delta) >= 1.0  # (T, ...)
    first = np.argmax(single, axis=0)
    return np.where(single.any(axis=0), t[first], np.inf)


def in_hemisphere(x) -> np.ndarray:
    r"""Whether the points of each system lie in an open hemisphere, shape (...).

    x_1, …, x_n lie in an open hemisphere {y : ⟨v, y⟩ > 0} if and only if 0 is not in their convex hull
    (Gordan's alternative: either Xv > 0 for some v, or λ ≥ 0, λ ≠ 0, Xᵀλ = 0). It is decided by the linear
    programme

    .. math:: t^* = \max_{v \in [-1, 1]^d,\ t \le 1} t \quad \text{s.t.}\quad ⟨v, x_i⟩ \ge t,\ i = 1..n,

    (scipy's ``linprog``, HiGHS), whose value is positive exactly when such a v exists — the hypothesis of GLPR
    Theorem 6.3, under which the tokens collapse to one point. For n iid uniform points on S^{d-1} the probability
    is Wendel's, :func:`meanfield.analysis.exact.wendel` (GLPR Theorem 6.7).

    Tolerances: a True is certified, not read off the LP's value: the direction v it returns (or, first, the
    points' mean, which often suffices) must give every computed ⟨v, x_i⟩ > :data:`CERTIFICATE_MARGIN` (1e-11,
    far above the rounding of those dots), so HiGHS's feasibility tolerance (1e-7) cannot make a False True.
    A False means that no v in the box has margin above about that tolerance: configurations with 0 within ~1e-7
    of the boundary of their hull (two antipodal points, points on a great subsphere — ties of probability 0 for
    points with a density) may be answered False although their margin is positive but below it.

    Parameters
    ----------
    x : array_like, shape (..., n, d)
        Points (unit vectors, or any nonzero vectors: only their directions matter), n >= 1.

    Returns
    -------
    ndarray of bool, shape (...)

    Raises
    ------
    ValueError
        Non-finite or zero points, or a shape other than (..., n, d).
    RuntimeError
        If HiGHS does not solve an LP (it always has the feasible point v = 0, t = min(0, 1), and t <= 1).
    """
    from scipy.optimize import linprog

    x = np.asarray(x, dtype=float)
    if x.ndim < 2 or 0 in x.shape[-2:]:  # no point, or points of no coordinate
        raise ValueError(f"`x` must have shape (..., n, d) with n, d >= 1, got {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("`x` contains non-finite values.")
    norms = np.linalg.norm(x, axis=-1)
    if np.any(norms == 0):
        raise ValueError("`x` contains a zero vector, which lies in no open hemisphere's direction set.")
    n, d = x.shape[-2:]
    flat = (x / norms[..., None]).reshape(-1, n, d)
    out = np.zeros(flat.shape[0], dtype=bool)
    c = np.zeros(d + 1)
    c[-1] = -1.0  # maximise t
    bounds = [(-1.0, 1.0)] * d + [(None, 1.0)]
    ones = np.ones((n, 1))
    for b, X in enumerate(flat):
        m = X.sum(axis=0)
        if np.min(X @ (m / max(np.max(np.abs(m)), 1e-300))) > CERTIFICATE_MARGIN:  # the mean is a certificate
            out[b] = True
            continue
        res = linprog(c, A_ub=np.hstack([-X, ones]), b_ub=np.zeros(n), bounds=bounds, method="highs")
        if res.status != 0:
            raise RuntimeError(f"in_hemisphere: HiGHS failed on system {b}: {res.message}")
        out[b] = res.x[-1] > 0 and np.min(X @ res.x[:d]) > CERTIFICATE_MARGIN
    return out.reshape(x.shape[:-2])


# ------------------------------------------------------------------ one weighted point set
def _weighted(x, w) -> tuple[np.ndarray, np.ndarray]:
    """Finite points (n, d), n >= 1, and n finite non-negative weights of positive sum, or ValueError."""
    x, w = np.asarray(x, dtype=float), np.asarray(w, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or w.shape != x.shape[:1]:
        raise ValueError(f"points must have shape (n, d) with n >= 1 and weights shape (n,); got {x.shape} and "
                         f"{w.shape}.")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(w))):
        raise ValueError("points and weights must be finite.")
    if np.any(w < 0) or not np.sum(w) > 0:
        raise ValueError("weights must be non-negative with a positive sum.")
    return x, w


def merge_coincident(x, w, h: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Points in one cell of side ``h`` (their coordinates rounded to multiples of h) merged into one: their
    weighted mean, with their weights summed. A collapsed cluster of a Lagrangian frame (thousands of points within
    rounding of each other) becomes one point, so counts over pairs cost what the distinct points do.

    Parameters
    ----------
    x : array_like, shape (n, d)
    w : array_like, shape (n,)
        Non-negative weights.
    h : float
        The cell side, > 0.

    Returns
    -------
    (ndarray (m, d), ndarray (m,))
        The merged points and their weights, m <= n; the total weight is kept.
    """
    x, w = _weighted(x, w)
    if not h > 0:
        raise ValueError(f"`h` must be positive, got {h!r}.")
    key = np.round(x / h).astype(np.int64)
    _, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.ravel()
    ww = np.bincount(inv, weights=w)
    xx = np.stack([np.bincount(inv, weights=w * x[:, k]) for k in range(x.shape[1])], axis=1) / \
        np.where(ww > 0, ww, 1.0)[:, None]
    return xx, ww


def weighted_pair_fraction(x, w, delta: float) -> float:
    r"""∬ 1{⟨x, y⟩ >= 1 − δ} dμ(x) dμ(y) / μ(S)² of the weighted unit vectors μ = Σ w_i δ_{x_i}.

    The counterpart, for a measure, of :func:`pair_fraction` (there the pairs i = j are left out; here, as for a
    density, each point pairs with itself too). On the circle (d = 2) exactly by sorting the angles (a window of
    half-width arccos(1 − δ) around each); on S^{d−1} by a k-d tree count of the pairs within chord √(2δ), the
    coincident points merged first (:func:`merge_coincident`).

    Parameters
    ----------
    x : array_like, shape (n, d)
        Unit vectors.
    w : array_like, shape (n,)
        Non-negative weights of positive sum.
    delta : float
        δ in [0, 2].

    Returns
    -------
    float
        In [0, 1].
    """
    x, w = _weighted(x, w)
    delta = _delta(delta)
    total = float(np.sum(w))
    if x.shape[1] == 2:  # the circle: angles sorted, a window around each
        a = np.arccos(1.0 - delta)
        th = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2.0 * np.pi)
        order = np.argsort(th)
        th, ww = th[order], w[order]
        ext = np.concatenate([th - 2.0 * np.pi, th, th + 2.0 * np.pi])
        cum = np.concatenate([[0.0], np.cumsum(np.tile(ww, 3))])
        near = cum[np.searchsorted(ext, th + a, side="right")] - cum[np.searchsorted(ext, th - a, side="left")]
        return float(ww @ near) / total ** 2
    from scipy.spatial import cKDTree

    xm, wm = merge_coincident(x, w, 1e-9)
    tree = cKDTree(xm)
    return float(tree.count_neighbors(tree, np.sqrt(2.0 * delta), weights=(wm, wm))) / total ** 2


def heaviest_cluster(x, w, radius: float = 0.2, candidates: int = 2000) -> np.ndarray:
    """The centre of the heaviest cluster of weighted unit vectors: of the ``candidates`` heaviest points (after
    merging coincident ones, :func:`merge_coincident`), the one with the most mass within chord distance
    ``radius``, normalised.

    Parameters
    ----------
    x : array_like, shape (n, d)
        Unit vectors.
    w : array_like, shape (n,)
        Non-negative weights of positive sum.
    radius : float
        The chord distance that makes a cluster, > 0.
    candidates : int
        How many of the heaviest merged points are tried as centres.

    Returns
    -------
    ndarray, shape (d,)
        A unit vector.
    """
    from scipy.spatial import cKDTree

    if not radius > 0:
        raise ValueError(f"`radius` must be positive, got {radius!r}.")
    xm, wm = merge_coincident(x, w, 1e-9)
    tree = cKDTree(xm)
    heaviest = np.argsort(wm)[::-1][:candidates]
    mass = np.array([wm[j].sum() for j in tree.query_ball_point(xm[heaviest], radius)])
    c = xm[heaviest[np.argmax(mass)]]
    return c / np.linalg.norm(c)
