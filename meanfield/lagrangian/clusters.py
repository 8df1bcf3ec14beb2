r"""Clusters of a Lagrangian frame and their history: where the mass gathers, how much, how wide, when they merge.

A cluster is a connected set of points holding a point where the density exceeds
``threshold`` times the uniform density of the domain's volume (1/2π on the circle,
1/4π on S²; in R^d the mean density over the points' bounding box). On S² and in R²
the points are connected along the edges of the moved triangles whose vertices all exceed it and that are not
stretched across a gap: the density a triangle implies (its vertices' mean weight over twice its area) reaches an
eighth of the level, and each of its edges is no longer than 16 cells at the level, ℓ² × level <= 256 × the
larger weight of its ends. A triangle whose vertices went to two clusters spans the gap between them: its area
implies a low density, or, once two of its vertices have collapsed into one cluster and it has become a sliver
of almost no area, its edges to the third vertex are long.
On the circle and in R¹ neighbours in the physical order are connected where the gap
between them is short enough to hold that density with their mass (gap × level <=
the larger weight, or a gap below float64's resolution of the coordinate): inside a collapsed cluster float64 cannot order the points, and
points that arrived from a repelling region may still carry a low density there. Its mass is the
sum of its weights, its centre the normalised mean (on spheres) or the mean, its
width the root-mean-square geodesic distance of its points to the centre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..density import Frame
from .measure import LagrangianMeasure

__all__ = ["Cluster", "clusters", "cluster_history", "ClusterHistory"]

_CELLS = 16.0  # the longest edge of a cluster's mesh, in cells at the threshold density (ℓ² × level <= 256 × w)


@dataclass(frozen=True)
class Cluster:
    """One cluster: mass, centre (a point of the domain), RMS width, number of points."""

    mass: float
    centre: np.ndarray
    width: float
    size: int


def _edges(frame: LagrangianMeasure, dense: np.ndarray, level: float) -> np.ndarray:
    """The edges along which a cluster is connected (module docstring)."""
    pts, w = frame.points, frame.weights
    if frame.mesh is None:  # circle and R¹: neighbours in the physical (cyclic) order, joined across short gaps
        periodic = frame.domain.periodic
        key = np.mod(frame.state[:, 0], 2 * np.pi) if periodic else frame.state[:, 0]
        order = np.argsort(key, kind="stable")
        nxt = np.roll(order, -1) if periodic else order[1:]
        e = np.stack([order[: nxt.size], nxt], axis=1)
        gap = frame.domain.chord_distance(np.linalg.norm(pts[e[:, 0]] - pts[e[:, 1]], axis=-1))
        resolution = 256.0 * np.finfo(float).eps * max(1.0, float(np.max(np.abs(key))))  # float64 cannot part them
        return e[(gap * level <= np.maximum(w[e[:, 0]], w[e[:, 1]])) | (gap <= resolution)]
    tri = np.asarray(frame.mesh)
    # a moved triangle holds a cluster where its vertices are dense and it is not stretched across a gap: the density
    # its area implies (its vertices' mean weight over twice its area — a node carries about the area of two
    # triangles) reaches an eighth of the level. A triangle whose vertices went to two clusters is stretched over
    # the gap between them and implies almost no density, though its vertices are dense.
    V = pts[tri]
    if pts.shape[1] == 2:
        u, v = V[:, 1] - V[:, 0], V[:, 2] - V[:, 0]
        area = 0.5 * np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])
    else:
        area = 0.5 * np.linalg.norm(np.cross(V[:, 1] - V[:, 0], V[:, 2] - V[:, 0]), axis=-1)
    held = np.all(dense[tri], axis=1) & (np.mean(w[tri], axis=1) >= 0.25 * level * area)
    tri = tri[held]
    e = np.concatenate([tri[:, [a, b]] for a in range(tri.shape[1]) for b in range(a + 1, tri.shape[1])])
    # a sliver (two vertices collapsed into one cluster, the third in another) has almost no area, but long edges
    length2 = np.sum((pts[e[:, 0]] - pts[e[:, 1]]) ** 2, axis=-1)
    return e[length2 * level <= _CELLS**2 * np.maximum(w[e[:, 0]], w[e[:, 1]])]


def _centre(frame, pts, w):
    return frame.domain.retract(w @ pts / np.sum(w))  # the mean, normalised on spheres


def clusters(frame: LagrangianMeasure, threshold: float = 10.0, min_mass: float = 1e-6,
             separation: float = 1e-3) -> list[Cluster]:
    """The clusters of a frame, heaviest first (module docstring).

    Parameters
    ----------
    frame : LagrangianMeasure
    threshold : float
        A point belongs to a cluster where ρ >= threshold × the uniform density.
    min_mass : float
        Clusters lighter than this are dropped.
    separation : float
        Clusters whose centres are closer than this (geodesic distance) count as one: two clusters that merge
        approach each other exponentially and never meet, so their merge time is when they come this close.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if not (isinstance(frame, Frame) and frame.lagrangian):  # log ρ at the points: what the clusters are read from
        raise TypeError(f"`frame` must be a LagrangianMeasure, got {type(frame).__name__}.")
    if not threshold > 0:
        raise ValueError(f"`threshold` must be positive, got {threshold!r}.")
    if frame.domain.quotient_of(frame.domain.particle_domain(frame.dim)):
        raise ValueError(f"the points of the {frame.domain.name} domain are rings, not tokens: a dense set of rings is "
                         "no cluster of S^(d-1) (only the poles' are); clusters are counted on particles.")
    pts, w = frame.points, frame.weights
    volume = frame.domain.volume
    if volume is None:
        volume = float(np.prod(np.ptp(pts, axis=0)))
    level = threshold * frame.mass() / volume
    dense = frame.log_density >= np.log(level)
    e = _edges(frame, dense, level)
    n = len(frame)
    graph = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    groups = [np.flatnonzero((label == lab) & (dense | (frame.mesh is None))) for lab in np.unique(label[dense])]
    groups = [g for g in groups if np.sum(w[g]) > 0]
    # components whose centres are closer than `separation` are one cluster
    if len(groups) > 1:
        centres = np.array([_centre(frame, pts[g], w[g]) for g in groups])
        near = frame.domain.distance(centres, centres) < separation
        _, joined = connected_components(coo_matrix(near), directed=False)
        groups = [np.concatenate([g for g, j in zip(groups, joined) if j == lab]) for lab in np.unique(joined)]
    out = []
    for idx in groups:
        m = float(np.sum(w[idx]))
        if m < min_mass:
            continue
        c = _centre(frame, pts[idx], w[idx])
        dist = frame.domain.distance(pts[idx], c[None])[:, 0]
        out.append(Cluster(m, c, float(np.sqrt(w[idx] @ dist**2 / m)), idx.size))
    return sorted(out, key=lambda cl: -cl.mass)


@dataclass(frozen=True, repr=False)
class ClusterHistory:
    """The clusters of every frame of a Lagrangian solution (:func:`cluster_history`).

    Attributes
    ----------
    t : ndarray, shape (T,)
        The times of the frames.
    count : ndarray of int, shape (T,)
        The number of clusters in each frame.
    masses : tuple of T ndarrays
        The masses of each frame's clusters, heaviest first (``count[k]`` of them).
    events : tuple of (float, int, int)
        (t, count before, count after) where the count changes, t the first frame with the new count: formation
        where it rises, merges where it falls.

    Its repr is a summary (frames, time span, counts, changes); :meth:`to_dataframe` is the table of every frame
    (pandas), :meth:`to_dataset` the same as an xarray Dataset.
    """

    t: np.ndarray
    count: np.ndarray
    masses: tuple
    events: tuple

    def __len__(self) -> int:
        return len(self.t)

    def __repr__(self) -> str:
        if not len(self.t):
            return "ClusterHistory(no frames)"
        span = f"t = {self.t[0]:g} … {self.t[-1]:g}" if len(self.t) > 1 else f"t = {self.t[0]:g}"
        lo, hi = int(np.min(self.count)), int(np.max(self.count))
        counts = f"{lo}" if lo == hi else f"{lo}–{hi}"
        shown = "; ".join(f"{a} → {b} at t = {t:g}" for t, a, b in self.events[:4])
        more = f"; … {len(self.events) - 4} more" if len(self.events) > 4 else ""
        changes = f", changes: {shown}{more}" if self.events else ", no change"
        return (f"ClusterHistory({len(self.t)} frames, {span}, clusters {counts} ({int(self.count[0])} first, "
                f"{int(self.count[-1])} last){changes})")

    def states(self, energy=None, *, min_mass: float = 0.02, settled: float = 0.9, min_duration: float = 0.0):
        """The metastable states and merges of the history (:func:`meanfield.lagrangian.metastability.
        metastable_states` of its ``t`` and ``masses``, probability masses): their lifetimes, T₂ and the last merge.
        ``energy`` (one value per frame, e.g. each frame's ``energy(beta)``) is averaged over each state."""
        from .metastability import metastable_states

        return metastable_states(self.t, self.masses, energy=energy, min_mass=min_mass, settled=settled,
                                 min_duration=min_duration)

    def _mass_table(self) -> np.ndarray:
        """The masses as a (T, max count) array, heaviest first, NaN where a frame has fewer clusters."""
        k = int(np.max(self.count)) if len(self.count) else 0
        table = np.full((len(self.t), k), np.nan)
        for i, m in enumerate(self.masses):
            table[i, : len(m)] = m
        return table

    def to_dataset(self):
        """The history as an xarray Dataset: ``count`` (time) and ``mass`` (time, cluster; heaviest first, NaN
        where a frame has fewer clusters), the changes of count in ``attrs["events"]`` ((t, before, after) as a
        list)."""
        import xarray as xr

        table = self._mass_table()
        return xr.Dataset(
            {"count": ("time", np.asarray(self.count, dtype=np.int64), {"long_name": "number of clusters"}),
             "mass": (("time", "cluster"), table, {"long_name": "cluster mass, heaviest first"})},
            coords={"time": ("time", np.asarray(self.t, dtype=float)),
                    "cluster": ("cluster", np.arange(1, table.shape[1] + 1))},
            attrs={"events": [list(e) for e in self.events]})

    def to_dataframe(self):
        """The history as a pandas DataFrame, one row per frame indexed by ``t``: ``count`` and ``mass_1``,
        ``mass_2``, … (heaviest first, NaN where a frame has fewer clusters).

        pandas comes with xarray, a dependency of meanfield, so it is installed wherever this package is; without
        it this raises ImportError and :meth:`to_dataset` gives the same table as an xarray Dataset.
        """
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - xarray requires pandas
            raise ImportError("ClusterHistory.to_dataframe needs pandas, which is not installed; "
                              "ClusterHistory.to_dataset() gives the same table as an xarray Dataset.") from None
        table = self._mass_table()
        columns = {"count": np.asarray(self.count, dtype=np.int64)}
        columns.update({f"mass_{j + 1}": table[:, j] for j in range(table.shape[1])})
        return pd.DataFrame(columns, index=pd.Index(np.asarray(self.t, dtype=float), name="t"))


def cluster_history(frames, threshold: float = 10.0, min_mass: float = 1e-6,
                    separation: float = 1e-3) -> ClusterHistory:
    """The clusters of each Lagrangian frame of a solution (or a sequence of frames), and where their count
    changes (the time of the first frame with the new count).

    Parameters
    ----------
    frames : Solution or sequence of LagrangianMeasure
        A :func:`meanfield.solve` result (its Lagrangian frames are read: those after a hand-over from the grid,
        or all of a Lagrangian run; grid frames are skipped) or the frames themselves.
    threshold, min_mass, separation : float
        As for :func:`clusters`.

    Returns
    -------
    ClusterHistory
        ``t``, ``count`` and ``masses`` of every Lagrangian frame and the ``events`` where the count changes; its
        repr summarises them, ``to_dataframe()`` / ``to_dataset()`` tabulate them.

    Raises
    ------
    ValueError
        There is no Lagrangian frame (a grid-only solution).
    """
    frames = [f for f in getattr(frames, "densities", frames) if f.lagrangian]
    if not frames:
        raise ValueError("no Lagrangian frames: solve with representation='lagrangian' or let the grid hand over.")
    cl = [clusters(f, threshold, min_mass, separation) for f in frames]
    t = np.array([f.t for f in frames])
    count = np.array([len(c) for c in cl])
    events = tuple((float(t[i]), int(count[i - 1]), int(count[i])) for i in range(1, len(t)) if count[i] != count[i - 1])
    return ClusterHistory(t, count, tuple(np.array([c.mass for c in cc]) for cc in cl), events)
