r"""W_1 between the one-dimensional marginals of a product domain's density and particles in R^d (issue 47, item 5).

A density on a product grid — pre/peri-LN tokens x = rθ as (θ, s = log r) on the cylinder S¹ × (0, ∞), or as
(polar angle, s) on the zonal S^{d-1} × (0, ∞) — is compared with particles x_i ∈ R^d factor by factor: its grid
gives the law of each factor's coordinate as it represents it, and how particles read that coordinate
(:meth:`meanfield.domains.Grid.marginals`, :class:`meanfield.domains.marginals.Marginal`); nothing here asks which
grid or domain it holds. Each marginal is one-dimensional, so its W_1 is exact:

- a **cell law** (:class:`~meanfield.domains.marginals.CellLaw`: masses m_i spread uniformly on cells
  [e_i, e_{i+1}], the finite-volume cell averages in s = log r) against weighted points, or against another cell
  law: on the line W_1(μ, ν) = ∫ |F_μ − F_ν| ds (Vallender 1973). Between consecutive breakpoints (the cell edges
  and the points) a cell law's CDF is linear and the points' is constant, so F_μ − F_ν is linear on each piece
  [x_k, x_{k+1}] of length h with end values a, b, and

  .. math:: \int_{x_k}^{x_{k+1}} |F_μ − F_ν| = \begin{cases} h |a + b| / 2, & ab \ge 0, \\
            h (a^2 + b^2) / (2(|a| + |b|)), & ab < 0, \end{cases}

  summed over the pieces: exact up to round-off (:func:`line_w1`; ``Distance.method`` "cells");
- a **frame of a one-dimensional domain** (the direction's law on the circle, a circle density whose measure is
  its trigonometric interpolant; the polar angle's law on the zonal S^{d-1}, a zonal density whose measure is its
  polynomial interpolant in cos θ) against the particles' directions x/|x|: :func:`validation.distance` — on the
  circle the circular W_1 = min_c ∫_0^{2π} |F − G − c| dθ through the interpolant's exact CDF quantised to M cells
  (bound π/M), on the zonal sphere the W_1 of the polar angles θ = arccos⟨x/|x|, e⟩ on [0, π] through the
  interpolant's exact law on M cells (bound π/(2M)); ``Distance.method`` "circle" or "polar-angle".

A cell law's masses must sum to 1 (within 1e-9: refused, not renormalised, as in :mod:`validation.wasserstein`);
small negative masses (a centred scheme's undershoot, which the cylinder's monitor bounds by ``neg_tol``) are kept:
the value is then ∫|F_μ − F_ν| with the signed F_μ, within ν⁻(e_n − e_0) of W_1 between ν and the law of the
positive part rescaled to mass 1 (ν⁻ the negative mass: |F_μ − F_μ'| <= ν⁻ pointwise and vanishes outside
[e_0, e_n]), and that is the ``bound``.
"""

from __future__ import annotations

import numpy as np

from meanfield.density import Frame
from meanfield.domains.marginals import CellLaw, Marginal

from .wasserstein import Distance, distance

__all__ = ["line_w1", "marginal_distances", "marginal_w1"]

#: how far a cell law's masses or the points' weights may sum from 1 (round-off of a conservative scheme's mass)
MASS_TOL = 1e-9


def _atoms(points, weights=None, name: str = "points") -> tuple[np.ndarray, np.ndarray]:
    """Sorted points of the line (n,) with their weights (default 1/n), checked."""
    x = np.asarray(points, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-D array of points of the line, got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"`{name}` holds {int(np.sum(~np.isfinite(x)))} non-finite point(s).")
    w = np.full(x.size, 1.0 / x.size) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != x.shape:
        raise ValueError(f"the weights of `{name}` must have shape {x.shape}, got {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"the weights of `{name}` must be finite and non-negative.")
    if abs(float(w.sum()) - 1.0) > MASS_TOL:
        raise ValueError(f"the weights of `{name}` sum to {float(w.sum()):.12g}, not 1: probability measures only "
                         "(refused rather than renormalised).")
    order = np.argsort(x, kind="stable")
    return x[order], w[order]


def _law(obj, name: str):
    """A cell law (checked: mass 1) or atoms (sorted points, weights) of the line."""
    if isinstance(obj, CellLaw):
        if abs(obj.total - 1.0) > MASS_TOL:
            raise ValueError(f"`{name}`: the cell law's masses sum to {obj.total:.12g}, not 1 (a density of unit mass "
                             "has it: Density.unit_mass()).")
        return obj
    if isinstance(obj, tuple) and len(obj) == 2:
        return _atoms(obj[0], obj[1], name)
    return _atoms(obj, None, name)


def _breaks(law) -> np.ndarray:
    return law.edges if isinstance(law, CellLaw) else law[0]


def _ends(law, x) -> tuple[np.ndarray, np.ndarray]:
    """The CDF's values at the two ends of each piece [x_k, x_{k+1}] (its right end a left limit): a cell law's
    (linear between them, every edge being a breakpoint), the atoms' (constant on [x_k, x_{k+1}))."""
    if isinstance(law, CellLaw):
        F = law.cdf(x) / law.total
        return F[:-1], F[1:]
    xs, w = law
    G = np.concatenate([[0.0], np.cumsum(w)])[np.searchsorted(xs, x[:-1], side="right")]
    return G, G


def _negative(law) -> float:
    """ν⁻(e_n − e_0) of a cell law, 0 for atoms: the bound on the signed CDF's effect (module docstring)."""
    if isinstance(law, CellLaw):
        return law.negative / law.total * float(law.edges[-1] - law.edges[0])
    return 0.0


def _w1(la, lb) -> float:
    """∫|F_a − F_b| over the merged breakpoints, piece by piece in closed form (module docstring)."""
    x = np.union1d(_breaks(la), _breaks(lb))
    if x.size < 2:  # two atoms at one point
        return 0.0
    a0, a1 = _ends(la, x)
    b0, b1 = _ends(lb, x)
    left, right = a0 - b0, a1 - b1
    h = np.diff(x)
    same = left * right >= 0
    cross = np.abs(left) + np.abs(right)
    area = np.where(same, 0.5 * h * np.abs(left + right),
                    0.5 * h * (left * left + right * right) / np.where(same, 1.0, cross))
    return float(np.sum(area))


def line_w1(a, b) -> float:
    r"""W_1 = ∫ |F_a − F_b| ds between two laws of the line, exactly (module docstring).

    Parameters
    ----------
    a, b : CellLaw, array_like (n,), or (points, weights)
        A cell law (masses spread uniformly on their cells, summing to 1), or points (equal weights 1/n), or points
        with weights (non-negative, summing to 1).

    Returns
    -------
    float
        ∫ |F_a − F_b| (with a cell law's signed CDF where it has negative masses; module docstring).
    """
    return _w1(_law(a, "a"), _law(b, "b"))


# ---------------------------------------------------------------------------------------------------------------- sides
def _marginals_of(obj, name: str):
    """{name: Marginal} of a density on a product grid (a frame on a grid whose grid has marginals) or of a tuple of
    Marginals; None for point sets."""
    if isinstance(obj, (tuple, list)) and obj and all(isinstance(m, Marginal) for m in obj):
        return {m.name: m for m in obj}
    if isinstance(obj, Frame) and obj.grid is not None:
        found = obj.grid.marginals(obj.values)
        if found is None:
            raise ValueError(f"`{name}` is a density on {obj.grid!r}, which has no one-dimensional marginals: compare "
                             "it as a whole (validation.distance).")
        return {m.name: m for m in found}
    return None


def _points_of(obj, name: str):
    """(points (..., n, d), weights (n,) or None) of a point frame (a particle snapshot, a Lagrangian measure), a
    measure carrying its domain, a pair (points, weights), or an array (..., n, d) of equal weights."""
    if isinstance(obj, Frame):
        obj = obj.as_measure()
    points, weights = obj, None
    if not isinstance(obj, (np.ndarray, list)):  # a Measure (which unpacks as points, weights) or a pair
        try:
            points, weights = obj
        except (TypeError, ValueError):
            raise TypeError(f"`{name}` must be a density on a product grid, its marginals, or points (a particle "
                            f"snapshot, an array, a pair (points, weights)), got {type(obj).__name__}.") from None
    points = np.asarray(points, dtype=float)
    if points.ndim < 2 or points.shape[-2] == 0:
        raise ValueError(f"`{name}` must be points of shape (..., n, d) with n >= 1 (particles' tokens in R^d), a "
                         f"particle snapshot, or a density on a product grid; got shape {points.shape}.")
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
        if points.ndim != 2 or weights.shape != points.shape[:1]:
            raise ValueError(f"the weights of `{name}` must have shape ({points.shape[0]},) for points of shape "
                             f"(n, d), got {weights.shape} for {points.shape}.")
    return points, weights


def marginal_distances(a, b, *, marginals=None, cells: int | None = None) -> dict[str, Distance]:
    r"""W_1 between the one-dimensional marginals of two measures, one of them (at least) a density on a product grid.

    Parameters
    ----------
    a, b : Frame, tuple of Marginal, or points
        A density on a product grid (``Solution.frame(k)`` of the cylinder; anything whose ``grid.marginals``
        answers), the tuple of :class:`~meanfield.domains.marginals.Marginal` such a grid returns, or particles'
        tokens in R^d: a :class:`particles.Snapshot` (``Trajectory.frame(k)``), a pair (points (n, d), weights), or
        an array (n, d) or (batch, n, d) of equal weights (a batch gives arrays of distances).
    marginals : Frame or tuple of Marginal, optional
        Whose marginals name the coordinates where both ``a`` and ``b`` are point sets (default: those of the
        density among ``a``, ``b``).
    cells : int, optional
        Cells a circle or zonal density's law is quantised into (:func:`validation.distance`'s ``cells``).

    Returns
    -------
    dict of str to Distance
        By the marginals' names (the cylinder's "direction" and "log r", the zonal cylinder's "polar angle" and
        "log r"): ``value`` W_1, ``bound`` on its error (0 for cell laws of non-negative masses; π/M and π/(2M) for
        the quantised circle and zonal laws), ``method`` ("cells", "circle", "polar-angle").

    Raises
    ------
    ValueError
        Neither side a density with marginals (and no ``marginals``), two densities with different marginals, points
        not in R^d, weights or masses not summing to 1.
    """
    ma, mb = _marginals_of(a, "a"), _marginals_of(b, "b")
    ref = _marginals_of(marginals, "marginals") if marginals is not None else (ma if ma is not None else mb)
    if ref is None:
        raise ValueError("neither `a` nor `b` is a density on a product grid with marginals: pass `marginals` (a "
                         "density, or its grid's marginals) to say which coordinates to compare the point sets in.")
    for name, m in (("a", ma), ("b", mb)):
        if m is not None and set(m) != set(ref):
            raise ValueError(f"`{name}` has the marginals {sorted(m)}, not {sorted(ref)}.")
    pa = None if ma is not None else _points_of(a, "a")
    pb = None if mb is not None else _points_of(b, "b")
    out = {}
    for key, marginal in ref.items():
        sides = [m[key].law if m is not None else (marginal.read(p[0]), p[1])
                 for m, p in ((ma, pa), (mb, pb))]
        if isinstance(marginal.law, CellLaw):
            out[key] = _cells_distance(*sides)
        else:
            domain = marginal.law.domain
            sides = [s if isinstance(s, Frame) else (s[0] if s[1] is None else s) for s in sides]
            out[key] = distance(sides[0], sides[1], 1, domain=domain, cells=cells)
    return out


def _cells_distance(a, b) -> Distance:
    """W_1 of a cell law or points of the line against another (points may carry a batch axis)."""
    batched = [s for s in (a, b) if not isinstance(s, CellLaw) and np.ndim(s[0]) > 1]
    if not batched:
        la, lb = _law(a, "a"), _law(b, "b")
        return Distance(_w1(la, lb), _negative(la) + _negative(lb), "cells", 1.0,
                        tuple(law.masses.size if isinstance(law, CellLaw) else law[0].size for law in (la, lb)))
    shape = np.broadcast_shapes(*(np.shape(s[0])[:-1] for s in batched))
    value, bound = np.empty(shape), np.empty(shape)
    atoms = (0, 0)
    for idx in np.ndindex(shape):
        pick = [s if isinstance(s, CellLaw) or np.ndim(s[0]) == 1 else (np.broadcast_to(s[0], shape + s[0].shape[-1:])
                                                                        [idx], s[1]) for s in (a, b)]
        d = _cells_distance(*pick)
        value[idx], bound[idx] = d.value, d.bound
        atoms = (max(atoms[0], d.atoms[0]), max(atoms[1], d.atoms[1]))
    return Distance(value, bound, "cells", 1.0, atoms)


def marginal_w1(a, b, **kwargs) -> dict:
    """The values of :func:`marginal_distances` alone: {name: W_1} (floats, or arrays for a batch of point sets)."""
    return {k: d.value for k, d in marginal_distances(a, b, **kwargs).items()}
