r"""Wasserstein distances between measures: densities, particle sets, weighted points.

.. math:: W_p(μ, ν) = \Big(\inf_{π ∈ Π(μ, ν)} \int d(x, y)^p \, dπ(x, y)\Big)^{1/p}

with d the geodesic distance on the circle and on S², the Euclidean one in
R^d. The functions return W_p itself (never W_p^p).

A measure is given as a frame (:class:`meanfield.density.Frame`: a :class:`meanfield.Density`, a
:class:`meanfield.lagrangian.LagrangianMeasure` — a frame of the Lagrangian
solution: its points with their fixed weights —, a particle snapshot
``trajectory.frame(k)``, ``solution.frame(k)``), a
:class:`meanfield.domains.Measure` (``frame.as_measure()``), an array of points (uniform weights), or a pair
``(points, weights)``. A frame is asked what it is able to give, never which class it is: one on a grid
(``frame.grid``) enters through its density (below), any other through its points (``frame.as_measure()``). Densities and measures carry their domain, and the
distance is the one of that domain, chosen by what the domain is, not by its
name (:func:`_distance`: a periodic domain of dimension 1 by the circle's CDF
formulas, intrinsic dimension 1 by quantiles, any other by exact OT with the
domain's geodesic ``distance`` as cost);
a periodic domain of dimension 1 whose period P = ``domain.volume`` is not 2π (a loop ℝ/Pℤ) is measured on the angles
2πφ/P of its coordinates φ and the distance scaled back by P/2π (W_p scales with the metric);
bare point sets are compared on the domain the other measure carries, or read
by :func:`meanfield.domains.infer`. Weights must be non-negative and sum to 1
(within 1e-9): other weights are *refused*, not renormalised, since a mass
defect usually signals a bug upstream.

Circle (exact). With F, G the cumulative distribution functions cut at
θ = 0 and extended by F(θ + 2π) = F(θ) + 1,

- W_1 = min_c ∫_0^{2π} |F − G − c| dθ, the minimum at a weighted median of
  F − G (Rabin, Delon & Gousseau 2011; Cabrelli & Molter 1995);
- W_p^p = min_α ∫_0^1 |F^{-1}(u) − G^{-1}(u + α)|^p du, a convex function of
  α (Delon, Salomon & Sobolevski, SIAM J. Appl. Math. 70, 2010) and, for
  discrete measures, piecewise linear: golden-section search brackets the
  minimiser to 1e-8, then the cost is evaluated exactly at the kinks
  α = G_j − F_i + k inside the bracket (the 8 nearest its centre; each
  evaluation a compiled linear merge of the quantile breakpoints).

Point sets are exact. A density enters through the exact CDF of its
trigonometric interpolant: its mass on each of M equal cells (default
M = 2^20) is placed at the cell's midpoint. Moving mass inside cells of width
h = 2π/M costs at most h/2, so the result is within h/2 (3e-6 for the
default) of the exact distance; :func:`circle_density_resolution` says it.
W_1 against N points (N small beside M) does not merge the M + N atoms: on
each of the N + 1 arcs between points, F is the cells' non-decreasing
cumulative masses, so the measure of {F − G < c} and ∫|F − G − c| are binary
searches and prefix sums, O(N log M) per level c, and c is bisected to
adjacent doubles (:func:`_circle_w1_cells`; the same number).

Zonal densities of S^{d-1} (the zonal domain, any d): W_p between two zonal measures equals W_p between the
laws of their polar angles θ = arccos⟨x, e⟩ on [0, π] (docs/MATH.md §9), computed exactly by quantiles; a density
enters through the exact law of its polar angle on M equal cells (as the circle's, within π/(2M)). Points of
S^{d-1} compared with a zonal measure enter by their polar angles (``Distance.method`` "polar-angle"): that is W_p
between the polar angles' laws, a lower bound of W_p on S^{d-1} between the zonal measure and the points (θ is
1-Lipschitz), equal where the points are themselves zonal — for particles, the part of the distance the zonal
density can see.

S² and S^{d-1}: optimal transport with the geodesic cost arccos⟨x, y⟩ by
POT's network simplex (:func:`ot.emd2`), exact, O(nm) memory (about 45 bytes
per entry of the n × m cost matrix at its peak, measured: 1.9 GB at 4·10^7).
R^d: the same with |x − y| for d >= 2, quantiles for d = 1, and the
closed-form Bures–Wasserstein distance between Gaussians (:func:`gaussian_w2`).

Measures too large for exact OT (n·m > ``max_entries``, default
:data:`EXACT_OT_MAX`: a density on a fine grid, a Lagrangian frame of 10^5
points, large particle sets) are *coarsened* (:mod:`validation.coarsening`):
the larger measure μ is replaced by μ' with few enough atoms that exact OT fits
(both are, when both are large: :func:`_plan`), each atom's mass moved to the
representative of its cell of a partition of the domain. That move is an
explicit transport plan, so W_p(μ, μ') <= b_p := (Σ_i w_i d(x_i, T x_i)^p)^{1/p},
computed exactly from the atoms, and by the triangle inequality (W_p is a
metric on probability measures: Villani, *Optimal Transport, Old and New*,
2009, §6)

.. math:: |W_p(μ, ν) − W_p(μ', ν')| \le W_p(μ, μ') + W_p(ν, ν') \le b_p(μ) + b_p(ν) .

:func:`distance` returns the value with that certified bound and the method
(:class:`Distance`); :func:`wasserstein`, :func:`w1` and :func:`w2` return the
value alone. The bound is on the error of the method with respect to W_p
between the measures as they enter (a sphere density's grid measure, whose own
distance to the density is :func:`discretisation`'s business; a circle
density's quantised interpolant, within π/M of the interpolant: that π/M is
part of the bound). ``method="exact"`` refuses (:class:`ExactOTTooLarge`)
instead of coarsening. :func:`sliced_wasserstein_sphere` is a spherical
sliced estimate for large sets — an estimate, not the distance and not a bound.
"""

from __future__ import annotations

import warnings

from dataclasses import dataclass, replace
from functools import cached_property
from math import isqrt

import numba as nb
import numpy as np

from meanfield.core import checks
from meanfield.integrate.trackers import progress_while
from meanfield import domains
from meanfield.density import Density, Frame
from meanfield.domains import CIRCLE, SPHERE
from meanfield.domains.circle import fourier

from .coarsening import coarsen

__all__ = [
    "distance",
    "Distance",
    "METHODS",
    "wasserstein",
    "w1",
    "w2",
    "gaussian_w2",
    "sliced_wasserstein_sphere",
    "circle_density_resolution",
    "prepare",
    "Prepared",
    "discretisation",
    "ExactOTTooLarge",
    "EXACT_OT_MAX",
    "OT_BYTES_PER_ENTRY",
]

TWO_PI = 2.0 * np.pi
#: default number of cells a circle density is quantised into
CIRCLE_CELLS = 1 << 20
#: default largest n·m for which exact OT (a dense cost matrix) is attempted (``max_entries``); beyond it the
#: measures are coarsened. About 2.3 GB and 15 s at this size (network simplex, 2 cores).
EXACT_OT_MAX = 5 * 10**7
#: peak bytes per cost entry of exact OT (the cost matrix, its power and the network simplex's arcs), measured:
#: 2.2 GiB for a 25 000 × 2000 problem, 1.9 GB for 20 000 × 2000 (with the interpreter's ~0.2 GB)
OT_BYTES_PER_ENTRY = 48
#: what ``method`` may ask: "auto" exact where it fits and coarsened OT beyond; "exact" never approximates
METHODS = ("auto", "exact")
#: cost entries from which one distance shows its progress line (``progress`` on): exact OT of 5·10^6 entries
#: takes a few seconds (15 s at :data:`EXACT_OT_MAX`); smaller ones finish before a bar could say anything
PROGRESS_ENTRIES = 5 * 10**6
#: seconds a batch of distances runs before its bar appears (tqdm's ``delay``): short batches stay silent
PROGRESS_DELAY = 2.0


def _bar(enabled: bool, total: int, desc: str, delay: float = 0.0):
    """A tqdm bar (off unless ``enabled``), removed when it closes."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False, delay=delay)


class ExactOTTooLarge(ValueError):
    """``method="exact"`` and exact OT would need a cost matrix of more than ``max_entries`` entries (refused, not
    attempted; the default method coarsens instead)."""


@dataclass(frozen=True)
class Distance:
    r"""W_p between two measures as computed, with a certified bound on its error.

    Attributes
    ----------
    value : float or ndarray
        The computed W_p (not W_p^p); an array of the batch shape for batched point sets.
    bound : float or ndarray
        Certified: |value − W_p(a, b)| <= bound (up to round-off), W_p between the measures as they enter (module
        docstring). 0 for exact methods; the coarsening bounds b_p(a) + b_p(b) for "coarsened-ot"; π/M for each
        circle density quantised into M cells.
    method : str
        "circle" (CDF formulas), "quantiles" (R¹, and two zonal measures of S^{d-1}: their polar angles' laws),
        "polar-angle" (a zonal measure against points of S^{d-1}: W_p between the laws of their polar angles, a lower
        bound of W_p on S^{d-1}, equal where the points are zonal), "exact-ot" (network simplex on the measures
        themselves) or "coarsened-ot" (network simplex between coarsened measures, :mod:`validation.coarsening`).
    p : float
        The order of W_p.
    atoms : tuple of int
        The atoms of ``a`` and of ``b`` the distance was computed between (for a batch, the largest over it).
    """

    value: float | np.ndarray
    bound: float | np.ndarray
    method: str
    p: float
    atoms: tuple

    @property
    def lower(self):
        """max(value − bound, 0) <= W_p."""
        return np.maximum(self.value - self.bound, 0.0)

    @property
    def upper(self):
        """value + bound >= W_p."""
        return self.value + self.bound


# ---------------------------------------------------------------------- measures
@dataclass(frozen=True)
class Prepared:
    """A probability measure in the form the distances work on.

    ``coords`` are angles (n,) on the circle (on a periodic domain of dimension 1 and period P, the angles 2πφ/P of
    its coordinates; ``resolution`` then in radians too, scaled by P/2π with the distance) and points (n, d) elsewhere;
    ``weights`` (n,) sum to 1; ``domain`` is where it lives; ``resolution``
    bounds W_p between this measure and the density it stands for where that
    is known (π/M for a circle density quantised into M cells), else None (a
    grid measure: see :func:`discretisation`). ``coarsening`` bounds W_q,
    q <= ``coarsening_p``, between this measure and the one it was coarsened
    from (0: not coarsened). ``projected``: the points were mapped onto a quotient
    domain (particles of S^{d-1} onto the zonal domain by their polar angles), so
    W_p computed there is a lower bound of W_p on S^{d-1}. ``equal_cells``: the atoms
    are a circle density's quantisation, the midpoints of M equal cells in order, whose
    cumulative masses (:attr:`cell_sums`) W_1 against a smaller point set reads instead
    of merging the M atoms (:func:`_circle_w1_cells`). Preparing a density once
    (:func:`prepare`) and passing the result saves its quantisation when it is
    compared with many point sets.
    """

    coords: np.ndarray
    weights: np.ndarray
    domain: domains.Domain
    resolution: float | None = None
    coarsening: float = 0.0
    coarsening_p: float = np.inf
    projected: bool = False
    equal_cells: bool = False

    @cached_property
    def cell_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """The cumulative masses S_j (j < M) of equal cells and their prefix sums Σ_{i<j} S_i (M + 1), computed on
        first use (a W_1 against few points) and kept."""
        cumulative = np.cumsum(self.weights)
        return cumulative, np.concatenate([[0.0], np.cumsum(cumulative)])


def _carried(obj):
    """The domain a measure carries (a frame, a :class:`~meanfield.domains.Measure`, a :class:`Prepared`), or None
    for bare arrays and (points, weights) tuples."""
    return getattr(obj, "domain", None)


def _probability_weights(w, n, name):
    if w.shape != (n,):
        raise ValueError(f"the weights of `{name}` must have shape ({n},), got {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"the weights of `{name}` must be finite and non-negative.")
    if abs(w.sum() - 1.0) > 1e-9:
        raise ValueError(
            f"the weights of `{name}` sum to {w.sum():.12g}, not 1: probability measures only "
            "(they are refused rather than renormalised)."
        )
    return w


def prepare(measure, domain=None, cells: int | None = None, name: str = "measure") -> Prepared:
    """``measure`` as a :class:`Prepared` measure on ``domain`` (default: the domain it carries, else inferred).

    Parameters
    ----------
    measure : Frame (Density, LagrangianMeasure, particle Snapshot), Measure, Prepared, array (n, d), or (points, weights)
        A frame on a grid (``frame.grid``: a density) on the circle enters through the exact CDF of its
        trigonometric interpolant, its mass on each of ``cells`` equal cells
        at the cell's midpoint (module docstring); on other domains through the exact law of its coordinate where
        the domain has one, else as its grid measure; a frame of points (a Lagrangian measure, a particle snapshot)
        as its points with their weights (``frame.as_measure()``). Bare points are read by
        :func:`meanfield.domains.infer` unless ``domain`` is given.
    domain : Domain or str, optional
    cells : int, optional
        Cells a circle density is quantised into (default 2^20), or a zonal density's polar angle (default 2^16).
    name : str
        The argument's name in error messages.
    """
    dom = None if domain is None else domains.get(domain)
    carried = _carried(measure)
    if carried is not None and dom is not None and carried is not dom and not dom.quotient_of(carried):
        where = "a density" if getattr(measure, "grid", None) is not None else "a measure"
        raise ValueError(f"`{name}` is {where} on the {carried.name} but the other measure lives on {dom.name}.")
    if isinstance(measure, Prepared):
        return measure
    if isinstance(measure, Frame) and measure.grid is not None:  # a density on a grid: through its interpolant
        if _on_angles(measure.domain):
            theta, w = _quantise_circle_density(measure, cells)
            return Prepared(theta, w, measure.domain,
                            circle_density_resolution(CIRCLE_CELLS if cells is None else int(cells)), equal_cells=True)
        law = measure.domain.coordinate_law(measure, None if cells is None else int(cells))
        if law is not None:  # a domain of dimension 1 (the zonal sphere): the exact law of its coordinate
            points, w, resolution = law
            return Prepared(points, w, measure.domain, resolution)
        pts, w = measure.as_measure()
        return Prepared(pts, w, measure.domain)
    if isinstance(measure, Frame):  # a frame of points (a Lagrangian measure, a particle snapshot)
        measure = measure.as_measure()
    if carried is not None:  # a Measure: points with weights on the domain it carries
        if not (hasattr(measure, "points") and hasattr(measure, "weights")):
            raise TypeError(f"`{name}` must be a frame, a Measure, an array of points or (points, weights), got a "
                            f"{type(measure).__name__}.")
        pts, w = np.asarray(measure.points, dtype=float), np.asarray(measure.weights, dtype=float)
        dom = measure.domain if dom is None else dom
    elif isinstance(measure, tuple):
        if len(measure) != 2:
            raise TypeError(f"`{name}` as a tuple must be (points, weights), got {len(measure)} items.")
        pts, w = np.asarray(measure[0], dtype=float), np.asarray(measure[1], dtype=float)
    else:
        pts = np.asarray(measure, dtype=float)
        w = None
    if pts.ndim == 1:
        if dom is None:  # numbers: points of the line, but angles or a row of one point are a common slip
            warnings.warn(f"`{name}` is a 1-D sequence of {pts.size} numbers: read as {pts.size} points of the line R "
                          "(pass domain='euclidean' to say so; angles on the circle are rows (cos θ, sin θ); one "
                          "point of R^d is a row of shape (1, d)).", UserWarning,
                          stacklevel=checks.user_stacklevel(("validation",)))  # w1 → … → prepare: the caller's line
        pts = pts[:, None]
    if pts.ndim != 2:
        raise ValueError(f"`{name}` must be points of shape (n, d), got shape {pts.shape}.")
    n = pts.shape[0]
    if n == 0:
        raise ValueError(f"`{name}` is empty: a measure needs at least one point.")
    if not np.all(np.isfinite(pts)):
        raise ValueError(f"`{name}` contains non-finite coordinates.")
    w = np.full(n, 1.0 / n) if w is None else _probability_weights(w, n, name)
    dom = domains.infer(pts) if dom is None else dom
    projected = False
    if not dom.contains(pts):  # to 1e-8 (unit rows on spheres)
        lifted = dom.from_ambient(pts)  # a quotient's points: the polar angles of unit vectors on the zonal sphere
        if lifted is None:
            raise ValueError(
                f"`{name}` must lie on the {dom.name} (within 1e-8) to be compared there: the measures live on "
                "different domains."
            )
        pts, projected = lifted, True
    if _on_angles(dom):
        if pts.shape[1] != 2:
            raise ValueError(f"`{name}` must hold points in R^2 on the circle, got dimension {pts.shape[1]}.")
        return Prepared(dom.coordinates(pts) / _arc(dom), w, dom)  # the angles 2πφ/P of its coordinates φ
    return Prepared(pts, w, dom, projected=projected)


def _pair(a, b, domain, cells) -> tuple[Prepared, Prepared]:
    if domain is not None:
        domain = domains.get(domain)  # a Domain, or the name of a registered one (ValueError listing them)
    ca, cb = _carried(a), _carried(b)
    quotient = None
    if domain is None and ca is not None and cb is not None and ca is not cb:
        quotient = ca if ca.quotient_of(cb) else cb if cb.quotient_of(ca) else None
        if quotient is None:
            raise ValueError(f"the measures live on different domains: `a` on {ca.name}, `b` on {cb.name}.")
    dom = domain if domain is not None else quotient if quotient is not None else (ca if ca is not None else cb)
    pa = prepare(a, dom, cells, "a")
    pb = prepare(b, dom, cells, "b")
    if pa.domain is not pb.domain:
        raise ValueError(f"the measures live on different domains: `a` on {pa.domain.name}, `b` on {pb.domain.name}.")
    if not _on_angles(pa.domain) and pa.coords.shape[1] != pb.coords.shape[1]:
        raise ValueError(f"the measures live in different dimensions: {pa.coords.shape[1]} and {pb.coords.shape[1]}.")
    return pa, pb


def discretisation(density: Density, p: float = 1, cells: int | None = None) -> float:
    """W_p between ``density`` and the measure it enters the distances as (a bound, or an estimate).

    On the circle the bound π/cells of its quantisation; elsewhere the grid
    measure, estimated by refinement as half of W_p between the grid measures
    at half and at full resolution (first-order convergence assumed), that W_p
    taken at the upper end of its certified interval where it is coarsened.
    """
    prepared = prepare(density, cells=cells)
    if prepared.resolution is not None:
        return prepared.resolution * (_arc(prepared.domain) if _on_angles(prepared.domain) else 1.0)
    d = distance(density.grid.coarsened(density.values), density.as_measure(), p)
    return 0.5 * (d.value + d.bound)


# ---------------------------------------------------------------------- circle
def circle_density_resolution(cells: int = CIRCLE_CELLS) -> float:
    """Bound h/2 = π/M on the error a density's quantisation into M cells adds to W_p."""
    return np.pi / cells


def _quantise_circle_density(density: Density, cells):
    """Midpoints of M equal cells and the density's exact masses on them (CDF of the interpolant)."""
    M = CIRCLE_CELLS if cells is None else int(cells)
    edges = np.linspace(0.0, TWO_PI, M + 1)
    F = fourier.cdf_equispaced(density.values, M)
    mass = np.diff(F)
    if np.any(mass < -1e-13):
        raise ValueError("the density's interpolant is negative somewhere: it is not a probability law.")
    mass = np.maximum(mass, 0.0)
    return 0.5 * (edges[:-1] + edges[1:]), mass / mass.sum()


def _sorted(theta, w):
    if np.all(theta[1:] >= theta[:-1]):
        return np.ascontiguousarray(theta), np.ascontiguousarray(w)
    order = np.argsort(theta)
    return np.ascontiguousarray(theta[order]), np.ascontiguousarray(w[order])


@nb.njit(cache=True)
def _weighted_median(values, weights):
    """A minimiser c of Σ w_i |v_i − c|: weighted quickselect with 3-way partitions, O(N) expected."""
    v = values.copy()
    w = weights.copy()
    target = 0.5 * np.sum(w)
    lo, hi = 0, v.size - 1
    while lo < hi:
        a, b, c = v[lo], v[(lo + hi) // 2], v[hi]
        pivot = max(min(a, b), min(max(a, b), c))  # median of three
        lt, i, gt = lo, lo, hi
        while i <= gt:  # v[lo:lt] < pivot, v[lt:i] == pivot, v[gt+1:hi+1] > pivot
            if v[i] < pivot:
                v[lt], v[i] = v[i], v[lt]
                w[lt], w[i] = w[i], w[lt]
                lt += 1
                i += 1
            elif v[i] > pivot:
                v[gt], v[i] = v[i], v[gt]
                w[gt], w[i] = w[i], w[gt]
                gt -= 1
            else:
                i += 1
        w_less = np.sum(w[lo:lt])
        w_equal = np.sum(w[lt : gt + 1])
        if target < w_less:
            hi = lt - 1
        elif target <= w_less + w_equal:
            return pivot
        else:
            target -= w_less + w_equal
            lo = gt + 1
    return v[lo]


@nb.njit(cache=True)
def _merge_steps(ta, wa, tb, wb):
    """F − G on the intervals between merged sorted atoms, and their lengths.

    The first interval [0, t_0) carries F − G = 0 (the CDFs are cut at 0)."""
    n, m = ta.size, tb.size
    h = np.empty(n + m + 1)
    ell = np.empty(n + m + 1)
    i = j = 0
    cur, prev = 0.0, 0.0
    for k in range(n + m):
        if j >= m or (i < n and ta[i] <= tb[j]):
            t, jump = ta[i], wa[i]
            i += 1
        else:
            t, jump = tb[j], -wb[j]
            j += 1
        h[k] = cur
        ell[k] = t - prev
        cur += jump
        prev = t
    h[n + m] = cur
    ell[n + m] = TWO_PI - prev
    return h, ell


def _circle_w1(ta, wa, tb, wb):
    """min_c ∫|F − G − c| dθ with step CDFs (exact)."""
    ta, wa = _sorted(ta, wa)
    tb, wb = _sorted(tb, wb)
    h, ell = _merge_steps(ta, wa, tb, wb)
    c = _weighted_median(h, ell)
    return float(np.sum(ell * np.abs(h - c)))


@nb.njit(cache=True)
def _cells_levels(S, P, h, t, G, c, value):
    """For the step CDF F of M equal cells (cumulative masses S, their prefix sums P, width h; F = S_{j-1} on
    [x_{j-1}, x_j), x_j = (j + ½)h, F = 0 before x_0) and the sorted atoms t with G_k = their mass before t_k:
    the length of {θ : F(θ) − G(θ) < c} and, with ``value``, ∫|F − G − c| dθ. Each interval between atoms is
    two partial segments and a run of whole cells on which S is non-decreasing (a binary search)."""
    M, N = S.size, t.size
    below = 0.0
    total = 0.0
    lo = 0.0
    for k in range(N + 1):
        hi = t[k] if k < N else 2.0 * np.pi
        u = G[k] + c  # F − G_k < c  ⇔  F < u
        ja = min(max(int(np.ceil(lo / h - 0.5)), 0), M)  # midpoints x_j in [lo, hi): ja <= j < jb
        jb = min(max(int(np.ceil(hi / h - 0.5)), ja), M)
        first = S[ja - 1] if ja > 0 else 0.0  # F on [lo, x_ja)
        if ja == jb:
            length = hi - lo
            if first < u:
                below += length
            if value:
                total += length * abs(first - u)
        else:
            last = S[jb - 1]  # F on [x_{jb-1}, hi)
            for f, length in ((first, (ja + 0.5) * h - lo), (last, hi - (jb - 0.5) * h)):
                length = max(length, 0.0)
                if f < u:
                    below += length
                if value:
                    total += length * abs(f - u)
            # whole cells [x_j, x_{j+1}), ja <= j < jb - 1, F = S_j: those with S_j < u are ja <= j < q
            q = ja + np.searchsorted(S[ja : jb - 1], u)
            below += h * (q - ja)
            if value:
                total += h * (u * (q - ja) - (P[q] - P[ja]) + (P[jb - 1] - P[q]) - u * (jb - 1 - q))
        lo = hi
    return below, total


@nb.njit(cache=True)
def _circle_w1_cells(S, P, t, w):
    """min_c ∫|F − G − c| dθ for the cells' step CDF against sorted atoms (t, w): the same number as merging the
    M cell atoms with the N others (:func:`_circle_w1`) in O(N log M) per level c. The best c is a median of
    F − G under dθ: bisected on {θ : F − G < c} against π to adjacent doubles (the objective is convex and
    piecewise linear in c with slope 2|{F − G < c}| − 2π, so it is then within round-off of its minimum)."""
    M = S.size
    h = 2.0 * np.pi / M
    G = np.zeros(t.size + 1)
    G[1:] = np.cumsum(w)
    lo, hi = -1.0 - 1e-12, 1.0 + 1e-12  # F − G lies in [−1, 1]
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if _cells_levels(S, P, h, t, G, mid, False)[0] < np.pi:
            lo = mid
        else:
            hi = mid
    return min(_cells_levels(S, P, h, t, G, lo, True)[1], _cells_levels(S, P, h, t, G, hi, True)[1])


@nb.njit(cache=True)
def _circle_cost(xa, ca, xb, cb, alpha, p):
    """∫_0^1 |F^{-1}(u) − G^{-1}(u + α)|^p du for step quantile functions (linear merge).

    ca, cb: cumulative weights (upper ends of each atom's quantile interval)."""
    k = np.floor(alpha)
    frac = alpha - k
    m = cb.size
    # first atom of b whose quantile interval reaches past level frac
    j = np.searchsorted(cb, frac, side="right")
    if j >= m:
        j = 0
        k += 1.0
        frac -= 1.0
    shift = k * 2.0 * np.pi
    u = 0.0
    i = 0
    total = 0.0
    wraps = 0
    while i < ca.size:
        ub = cb[j] - frac + wraps  # level (in u) where the current b atom ends
        ua = ca[i]
        if abs(ua - ub) <= 1e-15:  # the same level up to rounding: no sliver between them
            ub = ua
        end = ua if ua < ub else ub
        if end > u:
            dist = np.abs(xa[i] - (xb[j] + shift + wraps * 2.0 * np.pi))
            if p == 2.0:
                total += (end - u) * dist * dist
            else:
                total += (end - u) * dist**p
            u = end
        if ua <= ub:
            i += 1
        else:
            j += 1
            if j == m:
                j = 0
                wraps += 1
    return total


def _circle_wp(ta, wa, tb, wb, p):
    xa, pa = _sorted(ta, wa)
    xb, pb = _sorted(tb, wb)
    ca, cb = np.cumsum(pa), np.cumsum(pb)
    ca[-1] = cb[-1] = 1.0
    f = lambda a: _circle_cost(xa, ca, xb, cb, a, float(p))
    # golden-section search on the convex cost, bracketed in [-1, 1], to machine precision in α
    g = (np.sqrt(5.0) - 1.0) / 2.0
    lo, hi = -1.0, 1.0
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    while hi - lo > 1e-8:
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
        if x1 >= x2:
            break
    # the cost is convex and piecewise linear in α: its minimum over [lo, hi] is at an end or at a
    # kink, where a breakpoint of F^{-1} meets one of G^{-1}(· + α): α = cb_j − ca_i + k
    best = min(f1, f2, f(lo), f(hi))
    kinks = _kinks(ca, cb, lo - 1e-12, hi + 1e-12)
    # large sets have many kinks in the bracket, where the cost is flat to O(slope × 1e-8): the ones
    # nearest the centre suffice; small sets have one or two and get the exact minimum
    for alpha in kinks[np.argsort(np.abs(kinks - 0.5 * (lo + hi)))[:8]]:
        best = min(best, f(alpha))
    return float(max(best, 0.0) ** (1.0 / p))


def _kinks(ca, cb, lo, hi):
    """The kinks α = cb_j − ca_i + k of the circle cost inside [lo, hi] (at most a few)."""
    a = np.concatenate([[0.0], ca])
    b = np.concatenate([[0.0], cb])
    out = []
    for k in (-1.0, 0.0, 1.0):
        start = np.searchsorted(b, a + lo - k, side="left")
        stop = np.searchsorted(b, a + hi - k, side="right")
        for i in np.nonzero(stop > start)[0][:64]:
            out.extend((b[start[i] : min(stop[i], start[i] + 64)] - a[i] + k).tolist())
    return np.unique(out)


# ---------------------------------------------------------------------- sphere and R^d
def _exact_ot(xa, wa, xb, wb, cost, p, max_entries):
    import ot

    if xa.shape[0] * xb.shape[0] > max_entries:
        raise ExactOTTooLarge(
            f"exact OT between {xa.shape[0]} and {xb.shape[0]} points needs a {xa.shape[0]}×{xb.shape[0]} cost "
            f"matrix (limit `max_entries` = {max_entries:.0e} entries); use method=\"auto\" (coarsened OT with a "
            "certified bound), fewer points, or a larger `max_entries`."
        )
    C = cost(xa, xb) ** p
    value, log = ot.emd2(wa, wb, C, numItermax=10**8, log=True)
    if log["result_code"] != 1:  # not optimal: the cost of a feasible plan, an upper bound only
        raise RuntimeError(f"the network simplex stopped before optimality ({log['warning']}): W_p between "
                           f"{xa.shape[0]} and {xb.shape[0]} points is not certified; lower `max_entries`.")
    return float(max(value, 0.0) ** (1.0 / p))


def _plan(n: int, m: int, max_entries: int) -> tuple[int, int]:
    """The atoms (k_a, k_b) to coarsen measures of n and m atoms to so that k_a·k_b <= ``max_entries``.

    The smaller measure is kept whole where it can be (min(n, m)² <= max_entries) and the larger gets
    max_entries // min(n, m) atoms; otherwise both get ⌊√max_entries⌋. Coarsening the larger one alone is
    what the mean-field comparisons need (a fine grid or a Lagrangian frame against N <= 10^4 particles)."""
    if n * m <= max_entries:
        return n, m
    small = min(n, m)
    if small * small <= max_entries:
        big = max_entries // small
        return (big, m) if n >= m else (n, big)
    k = max(isqrt(max_entries), 1)
    return min(n, k), min(m, k)


def _coarsened(x: Prepared, atoms: int, p: float) -> Prepared:
    """``x`` coarsened to at most ``atoms`` atoms (:func:`validation.coarsening.coarsen`), its bound recorded."""
    c = coarsen(x.coords, x.weights, atoms, x.domain, p)
    if c.bound == 0.0 and c.weights.size == x.weights.size:
        return x
    return replace(x, coords=c.points, weights=c.weights, coarsening=x.coarsening + c.bound,
                   coarsening_p=min(x.coarsening_p, p) if c.bound > 0 else x.coarsening_p)


def _quantile_1d(xa, wa, xb, wb, p):
    xa, pa = _sorted(xa[:, 0], wa)
    xb, pb = _sorted(xb[:, 0], wb)
    ca, cb = np.cumsum(pa), np.cumsum(pb)
    ca[-1] = cb[-1] = 1.0
    levels = np.union1d(ca, cb)
    du = np.diff(np.concatenate([[0.0], levels]))
    ia = np.minimum(np.searchsorted(ca, levels, side="left"), xa.size - 1)
    ib = np.minimum(np.searchsorted(cb, levels, side="left"), xb.size - 1)
    return float(np.sum(du * np.abs(xa[ia] - xb[ib]) ** p) ** (1.0 / p))


# ---------------------------------------------------------------------- public API
def distance(a, b, p: float = 1, *, domain: str | None = None, cells: int | None = None,
             max_entries: int | None = None, method: str = "auto", progress: bool | None = None) -> Distance:
    r"""W_p(a, b) between two probability measures on the same domain, with a certified bound and the method.

    .. math:: W_p(a, b) = \Big(\inf_{π ∈ Π(a, b)} \int d(x, y)^p \, dπ(x, y)\Big)^{1/p}

    Parameters
    ----------
    a, b : Frame (Density, LagrangianMeasure, particle Snapshot), Measure, Prepared, array (n, d), or (points, weights)
        A frame or measure carries its domain, and a bare point set is
        compared on it; two bare point sets are read by
        :func:`meanfield.domains.infer` (unit rows in R² on the circle, in
        R^d, d >= 3, on the sphere, others in R^d) unless ``domain`` says.
    p : float >= 1
    domain : Domain or the name of one ("circle", "sphere", "euclidean"), optional
        Where to compare (it must agree with what the measures carry).
    cells : int, optional
        Cells a circle density is quantised into (default 2^20; error
        <= π/cells, see the module docstring).
    max_entries : int >= 1, optional
        The largest cost matrix (n·m entries) exact OT may build on S^{d-1} and in R^d, d >= 2 (default
        :data:`EXACT_OT_MAX` as it is at the call, about 2.3 GB and 15 s); beyond it the measures are coarsened to fit
        (:func:`_plan`, :mod:`validation.coarsening`). The circle and R¹ are exact at any size.
    method : {"auto", "exact"}
        "auto": exact where it fits, else coarsened OT with its bound; "exact": :class:`ExactOTTooLarge` rather
        than an approximation.
    progress : bool or None
        A tqdm bar for distances that take more than a few seconds: a batch of sets (shown once it has run
        :data:`PROGRESS_DELAY` s), an optimal transport of :data:`PROGRESS_ENTRIES` cost entries or more (a line
        naming it while it runs). Default None: on where standard error is a terminal (``sys.stderr.isatty()``);
        elsewhere (a batch job's log, a pipe) a line after 30 s and every 60 s says the call is still running, as
        ``meanfield.solve`` and ``particles.simulate`` do (``meanfield.integrate.trackers.progress_while``).

    Returns
    -------
    Distance
        ``value`` (W_p, not W_p^p), ``bound`` (|value − W_p| <= bound), ``method``, ``p``, ``atoms``. Batched
        point sets — bare arrays of shape (..., n, d), e.g. the (R, n, d) realisations of a particle system — give
        ``value`` and ``bound`` arrays of the broadcast batch shape, one per set (a density or measure on the
        other side is prepared, and coarsened, once).

    Raises
    ------
    ValueError
        Bad ``p``, ``cells``, ``max_entries`` or ``method``; measures on different domains or in different
        dimensions; weights that are negative or do not sum to 1.
    ExactOTTooLarge
        ``method="exact"`` and n·m > ``max_entries``.
    RuntimeError
        The network simplex stopped before optimality (its value would not be certified).
    """
    p = float(p)
    if not (np.isfinite(p) and p >= 1):
        raise ValueError(f"`p` must be a finite number >= 1, got {p!r}.")
    if cells is not None and (int(cells) != cells or cells < 16):
        raise ValueError(f"`cells` must be an integer >= 16, got {cells!r}.")
    max_entries = EXACT_OT_MAX if max_entries is None else max_entries
    if isinstance(max_entries, bool) or not isinstance(max_entries, (int, np.integer)) or max_entries < 1:
        raise ValueError(f"`max_entries` must be an integer >= 1, got {max_entries!r}.")
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    lines = checks.progress_lines(progress)  # no terminal ("auto"): a line after 30 s, as solve and simulate
    progress = checks.progress(progress)
    with progress_while(f"validation.distance: W{p:g}", lines):
        batch_a, batch_b = _batch_shape(a), _batch_shape(b)
        if batch_a or batch_b:
            return _batched(a, b, batch_a, batch_b, p, domain, cells, int(max_entries), method, progress)
        pa, pb = _pair(a, b, domain, cells)
        return _measure_distance(pa, pb, p, int(max_entries), method, progress)


def wasserstein(a, b, p: float = 1, *, domain: str | None = None, cells: int | None = None,
                max_entries: int | None = None, method: str = "auto", progress: bool | None = None) -> float:
    r"""W_p(a, b) between two probability measures on the same domain: :func:`distance`'s value.

    Exact where exact OT fits in ``max_entries`` (the circle and R¹ always), else coarsened OT within the bound
    :func:`distance` returns with it (module docstring). Parameters as :func:`distance`.

    Returns
    -------
    float or ndarray
        W_p (not W_p^p). Batched point sets — bare arrays of shape (..., n, d), e.g. the (R, n, d) realisations of
        a particle system — give an array of the broadcast batch shape, one distance per set (a density or measure
        on the other side is prepared once).
    """
    return distance(a, b, p, domain=domain, cells=cells, max_entries=max_entries, method=method,
                    progress=progress).value


def _batch_shape(x) -> tuple:
    """The batch shape of a bare array of point sets (..., n, d) with ndim >= 3; () for anything else."""
    arr = np.asarray(x) if isinstance(x, (list, np.ndarray)) else None
    return tuple(arr.shape[:-2]) if arr is not None and arr.ndim >= 3 else ()


def _batched(a, b, batch_a, batch_b, p, domain, cells, max_entries, method, progress=False) -> Distance:
    """W_p for every set of the broadcast batch; an unbatched side is prepared (and coarsened) once."""
    try:
        shape = np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        raise ValueError(f"the batch shapes of `a` {batch_a} and `b` {batch_b} do not broadcast.") from None
    if not batch_a or not batch_b:  # the unbatched side once, on the domain it carries or the sets share
        one, sets = (a, np.asarray(b, dtype=float)) if not batch_a else (b, np.asarray(a, dtype=float))
        dom = domain if domain is not None else _carried(one)
        if dom is None:
            dom = prepare(sets.reshape((-1,) + sets.shape[-2:])[0], None, cells).domain
        fixed = prepare(one, dom, cells, "a" if not batch_a else "b")
        m = sets.shape[-2]
        if _by_ot(fixed) and fixed.weights.size * m > max_entries and method == "auto":
            fixed = _coarsened(fixed, _plan(fixed.weights.size, m, max_entries)[0], p)
        a, b = (fixed, b) if not batch_a else (a, fixed)
    # views of the broadcast batch (no copies); an unbatched side stays one object
    A = np.broadcast_to(np.asarray(a, dtype=float), shape + np.shape(a)[-2:]) if batch_a else None
    B = np.broadcast_to(np.asarray(b, dtype=float), shape + np.shape(b)[-2:]) if batch_b else None
    value, bound = np.empty(shape), np.empty(shape)
    methods, atoms = set(), (0, 0)
    with _bar(progress, int(np.prod(shape)), f"W{p:g} of {int(np.prod(shape))} sets", PROGRESS_DELAY) as bar:
        for idx in np.ndindex(*shape):
            pa, pb = _pair(a if A is None else A[idx], b if B is None else B[idx], domain, cells)
            d = _measure_distance(pa, pb, p, max_entries, method)
            value[idx], bound[idx] = d.value, d.bound
            methods.add(d.method)
            atoms = (max(atoms[0], d.atoms[0]), max(atoms[1], d.atoms[1]))
            bar.update()
    return Distance(value, bound, "coarsened-ot" if "coarsened-ot" in methods else methods.pop(), p, atoms)


def _circle(a: Prepared, b: Prepared, p: float) -> float:
    """Exact on the circle: W_1 by the median-shifted CDF, W_p by the convex shift functional (module docstring)."""
    if p == 1:
        for x, y in ((a, b), (b, a)):  # a density's cells against a smaller point set: no merge of the M cells
            if x.equal_cells and not y.equal_cells and _cells_pay(x.weights.size, y.weights.size):
                t, w = _sorted(y.coords, y.weights)
                return float(_circle_w1_cells(*x.cell_sums, t, w))
        return _circle_w1(a.coords, a.weights, b.coords, b.weights)
    return _circle_wp(a.coords, a.weights, b.coords, b.weights, p)


def _cells_pay(cells: int, atoms: int) -> bool:
    """Whether :func:`_circle_w1_cells` (about 64 levels × (atoms + 1) binary searches over the cells) costs less
    than the merge and median of all ``cells + atoms`` atoms."""
    return 64 * (atoms + 1) * max(int(cells).bit_length(), 1) < 16 * cells


def _on_angles(domain) -> bool:
    """Whether measures on ``domain`` are prepared as angles and compared by :func:`_circle`: a periodic domain
    of dimension 1 (the circle), whose one chart coordinate wraps."""
    return domain.periodic and domain.intrinsic_dimension(domain.check_dimension(None, False)) == 1


def _arc(domain) -> float:
    """The length of the domain's period per radian, P/2π (P = ``domain.volume``: 1 on the circle, whose period is
    2π): what the angles the circle's formulas work on are multiplied by to give the domain's own lengths."""
    return domain.volume / TWO_PI


def _by_ot(x: Prepared) -> bool:
    """Whether W_p on ``x``'s domain is optimal transport with a cost matrix (not the circle's or R¹'s formulas)."""
    dom = x.domain
    return not _on_angles(dom) and not (dom.intrinsic_dimension(x.coords.shape[1]) == 1 and not dom.unit_vectors)


def _distance(a: Prepared, b: Prepared, p: float, max_entries: int) -> float:
    """The exact W_p on the measures' domain, by what the domain is: a periodic domain of dimension 1 by the
    circle's formulas; intrinsic dimension 1 (the line: points that are not unit vectors, which would close
    into a curve) by quantiles; otherwise exact OT with the domain's geodesic distance as cost (arccos⟨x, y⟩ on
    S^{d-1}, |x − y| in R^d), :class:`ExactOTTooLarge` beyond ``max_entries``."""
    dom = a.domain
    if _on_angles(dom):
        return _circle(a, b, p)
    if not _by_ot(a):
        return _quantile_1d(a.coords, a.weights, b.coords, b.weights, p)
    return _exact_ot(a.coords, a.weights, b.coords, b.weights, dom.distance, p, max_entries)


def _measure_distance(a: Prepared, b: Prepared, p: float, max_entries: int, method: str,
                      progress: bool = False) -> Distance:
    """:func:`_distance` where it fits, else between the measures coarsened by :func:`_plan`; with the bound
    Σ (resolution + coarsening) of both sides. With ``progress``, an optimal transport of at least
    :data:`PROGRESS_ENTRIES` cost entries is named on a bar while it runs."""
    for name, x in (("a", a), ("b", b)):
        if x.coarsening > 0 and p > x.coarsening_p:
            raise ValueError(f"`{name}` was coarsened with a bound on W_q for q <= {x.coarsening_p:g}, not W_{p:g}.")
    n, m = a.weights.size, b.weights.size
    long = progress and _by_ot(a) and n * m >= PROGRESS_ENTRIES
    coarsen_them = _by_ot(a) and n * m > max_entries and method == "auto"
    stages = 1 + coarsen_them
    with _bar(long, stages, f"W{p:g} between {n} and {m} atoms") as bar:
        if coarsen_them:
            ka, kb = _plan(np.count_nonzero(a.weights), np.count_nonzero(b.weights), max_entries)
            bar.set_description(f"W{p:g}: coarsening {n} × {m} atoms to {ka} × {kb}")
            a, b = _coarsened(a, ka, p), _coarsened(b, kb, p)
            bar.update()
        bound = sum((x.resolution or 0.0) + x.coarsening for x in (a, b))
        kind = "circle" if _on_angles(a.domain) else "exact-ot" if _by_ot(a) else \
            "polar-angle" if a.projected or b.projected else "quantiles"
        if kind == "exact-ot" and (a.coarsening > 0 or b.coarsening > 0):  # atoms of weight 0 dropped: still exact
            kind = "coarsened-ot"
        if kind in ("exact-ot", "coarsened-ot"):
            bar.set_description(f"W{p:g}: exact OT of {a.weights.size} × {b.weights.size} atoms")
        value = _distance(a, b, p, max_entries)
        if _on_angles(a.domain):  # angles → the domain's own lengths (a period P: W_p scales with the metric, by P/2π)
            value, bound = value * _arc(a.domain), bound * _arc(a.domain)
        bar.update()
    return Distance(value, bound, kind, p, (a.weights.size, b.weights.size))


def w1(a, b, **kwargs) -> float:
    """W_1(a, b); see :func:`wasserstein`.

    Examples
    --------
    Turning n equally spaced points of the circle by an angle s < 2π/n moves each by s, and no plan is cheaper:
    W_1 = s (to round-off in the angles).

    >>> import numpy as np
    >>> from validation import w1
    >>> th = 2 * np.pi * np.arange(8) / 8
    >>> x, y = (np.stack([np.cos(th + s), np.sin(th + s)], -1) for s in (0.0, 0.1))
    >>> bool(abs(w1(x, y) - 0.1) < 1e-14)
    True
    """
    return wasserstein(a, b, 1, **kwargs)


def w2(a, b, **kwargs) -> float:
    """W_2(a, b); see :func:`wasserstein`."""
    return wasserstein(a, b, 2, **kwargs)


def gaussian_w2(mean_a, cov_a, mean_b, cov_b) -> float:
    r"""Bures–Wasserstein distance between N(m_a, Σ_a) and N(m_b, Σ_b).

    .. math:: W_2^2 = |m_a - m_b|^2 + \operatorname{tr}\big(Σ_a + Σ_b
              - 2(Σ_a^{1/2} Σ_b Σ_a^{1/2})^{1/2}\big)

    (Dowson & Landau 1982; Givens & Shortt 1984). The trace term is evaluated as ‖Σ_a^{1/2} − Σ_b^{1/2} R‖_F²
    with R = VUᵀ from the SVD Σ_a^{1/2}Σ_b^{1/2} = USVᵀ (the orthogonal R maximising tr(Σ_a^{1/2}Σ_b^{1/2}R) is
    that polar factor, and its maximum is tr((Σ_a^{1/2}Σ_bΣ_a^{1/2})^{1/2})): a sum of squares, so nearby
    Gaussians get their distance to round-off instead of the √ε ≈ 1.5e-8 floor of the cancelling trace formula.
    """
    ma, mb = np.atleast_1d(np.asarray(mean_a, float)), np.atleast_1d(np.asarray(mean_b, float))
    Sa, Sb = np.atleast_2d(np.asarray(cov_a, float)), np.atleast_2d(np.asarray(cov_b, float))
    d = ma.size
    for name, S in (("cov_a", Sa), ("cov_b", Sb)):
        if S.shape != (d, d):
            raise ValueError(f"`{name}` must be {d}×{d} to match the means, got {S.shape}.")
        if not np.allclose(S, S.T, rtol=0, atol=1e-12 * max(1.0, np.abs(S).max())):
            raise ValueError(f"`{name}` must be symmetric.")
        if np.linalg.eigvalsh(S).min() < -1e-12 * max(1.0, np.abs(S).max()):
            raise ValueError(f"`{name}` must be positive semi-definite.")
    if mb.size != d:
        raise ValueError(f"the means have different dimensions: {d} and {mb.size}.")
    def root(S):
        lam, U = np.linalg.eigh(0.5 * (S + S.T))
        return (U * np.sqrt(np.maximum(lam, 0.0))) @ U.T

    ra, rb = root(Sa), root(Sb)
    U, _, Vt = np.linalg.svd(ra @ rb)
    return float(np.sqrt(np.sum((ma - mb) ** 2) + np.sum((ra - rb @ (Vt.T @ U.T)) ** 2)))


def sliced_wasserstein_sphere(a, b, p: float = 2, projections: int = 200, rng=None) -> float:
    r"""Spherical sliced Wasserstein distance (Bonet et al., ICLR 2023) — an *estimate*.

    Both measures are projected on ``projections`` random great circles
    (x ↦ UᵀX/|UᵀX| for U with orthonormal columns) and the exact circle
    W_p^p are averaged: SSW_p = (E_U W_p^p(P_U#a, P_U#b))^{1/p}. It is a
    distance of its own, cheap for large sets (O(n log n) per projection),
    but neither equal to W_p nor a bound on it: use it to compare, not to
    certify.
    """
    pa, pb = _pair(a, b, SPHERE, None)
    xa, wa, xb, wb = pa.coords, pa.weights, pb.coords, pb.weights
    if xa.shape[1] < 3:
        raise ValueError("sliced_wasserstein_sphere is for S^{d-1}, d >= 3; on the circle use `wasserstein` (exact).")
    rng = checks.generator(rng)
    total = 0.0
    for _ in range(int(projections)):
        U, _ = np.linalg.qr(rng.standard_normal((xa.shape[1], 2)))
        # angles of the projections on the plane of U
        ta, tb = (CIRCLE.coordinates(np.stack([x @ U[:, 0], x @ U[:, 1]], axis=-1)) for x in (xa, xb))
        total += (_circle_w1(ta, wa, tb, wb) if p == 1 else _circle_wp(ta, wa, tb, wb, p) ** p)
    return float((total / projections) ** (1.0 / p)) if p != 1 else float(total / projections)
