r"""Linear interpolation on a moved simplicial mesh (the Lagrangian measure on S² and in R²).

The initial grid's nodes are connected once (the convex hull of the nodes on S², a
Delaunay triangulation in R²); the flow moves the nodes and the triangles move with
them (a diffeomorphism keeps them non-overlapping). A query is located by barycentric
coordinates among the triangles around its nearest moved nodes: on S² the query q
solves q = Σ_a λ_a v_a with λ >= 0 (the central projection of the flat triangle), in
R² q = Σ_a λ_a v_a with Σ_a λ_a = 1; the value is Σ_a λ_a f_a / Σ_a λ_a.
"""

from __future__ import annotations

import numpy as np

__all__ = ["interpolate"]


def interpolate(vertices, simplices, values, queries, *, homogeneous: bool, outside: float = -np.inf,
                neighbours: int = 12) -> np.ndarray:
    """Piecewise-linear interpolation of nodal ``values`` on the moved mesh at ``queries`` (m, D).

    Parameters
    ----------
    vertices : ndarray (n, D)
        The moved nodes.
    simplices : ndarray (T, k)
        Node indices of each simplex (k = 3: triangles on S² or in R²).
    homogeneous : bool
        True in R^D (barycentric coordinates sum to one), False on the sphere (central projection).
    outside : float
        The value where no simplex contains the query (outside the moved hull in R²).
    """
    from scipy.spatial import cKDTree

    q = np.asarray(queries, dtype=float).reshape(-1, vertices.shape[1])
    n, k = vertices.shape[0], simplices.shape[1]
    # simplices around each node, padded to a rectangular table
    incidence = np.bincount(simplices.ravel(), minlength=n)
    table = -np.ones((n, int(incidence.max())), dtype=np.int64)
    fill = np.zeros(n, dtype=np.int64)
    for t, tri in enumerate(simplices):
        for a in tri:
            table[a, fill[a]] = t
            fill[a] += 1
    _, near = cKDTree(vertices).query(q, k=min(neighbours, n))
    cand = table[near.reshape(len(q), -1)].reshape(len(q), -1)  # (m, c), −1 = none
    out = np.full(len(q), outside)
    found = np.zeros(len(q), dtype=bool)
    for j in range(cand.shape[1]):
        t = cand[:, j]
        todo = (~found) & (t >= 0)
        if not np.any(todo):
            continue
        V = vertices[simplices[t[todo]]]  # (mt, k, D)
        M = np.swapaxes(V, -1, -2)
        r = q[todo]
        if homogeneous:
            M = np.concatenate([M, np.ones((M.shape[0], 1, k))], axis=1)
            r = np.concatenate([r, np.ones((r.shape[0], 1))], axis=1)
        with np.errstate(all="ignore"):
            lam = np.linalg.solve(M, r[..., None])[..., 0]
        ok = np.all(lam >= -1e-12 * np.max(np.abs(lam), axis=-1, keepdims=True), axis=-1) & np.all(
            np.isfinite(lam), axis=-1)
        idx = np.flatnonzero(todo)[ok]
        lam = lam[ok]
        lam = lam / np.sum(lam, axis=-1, keepdims=True)
        out[idx] = np.sum(lam * values[simplices[t[idx]]], axis=-1)
        found[idx] = True
    if not homogeneous and not np.all(found):  # S² is covered: search the rest among all triangles
        for i in np.flatnonzero(~found):
            V = vertices[simplices]
            with np.errstate(all="ignore"):
                lam = np.linalg.solve(np.swapaxes(V, -1, -2), np.broadcast_to(q[i], (len(V), 3))[..., None])[..., 0]
            ok = np.flatnonzero(np.all(lam >= 0, axis=-1))
            if ok.size:
                la = lam[ok[0]] / np.sum(lam[ok[0]])
                out[i] = la @ values[simplices[ok[0]]]
    return out.reshape(np.shape(queries)[:-1])
