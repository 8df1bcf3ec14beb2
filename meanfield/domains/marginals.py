r"""The one-dimensional marginals of a product domain's densities: what a grid says its factors' laws are.

A density on a product grid — pre/peri-LN tokens x = rθ as (θ, s = log r) on the cylinder S¹ × (0, ∞), or as (polar
angle, s) on the zonal S^{d-1} × (0, ∞) — has no point set in one ambient R^d (its grid refuses ``points``), but each
factor's coordinate has a law that particles in R^d can be compared with exactly in one dimension
(``validation.marginal_distances``). A grid that has such marginals answers :meth:`~meanfield.domains.Grid.marginals`
(None by default) with one :class:`Marginal` per factor: its name, its law as the grid's quadrature represents it,
and how the coordinate is read off particles' points in R^d. Nothing above asks which grid it holds.

Two kinds of law:

- a :class:`CellLaw`: masses m_i spread *uniformly* on cells [e_i, e_{i+1}] of a line — the measure
  Σ_i m_i 1_{[e_i, e_{i+1}]}(s) ds / (e_{i+1} − e_i), whose CDF is piecewise linear: what finite-volume cell
  averages in s = log r are (docs/MATH.md §10.1);
- a frame of a one-dimensional domain (a :class:`~meanfield.Density` on the circle, whose measure is its
  trigonometric interpolant; on the zonal sphere, whose measure is its polynomial interpolant in cos θ), which the
  distances of ``validation`` already compare with points exactly (the circle's CDF, the zonal polar-angle law).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["CellLaw", "Marginal", "directions", "log_radii"]


@dataclass(frozen=True, eq=False)
class CellLaw:
    r"""The law Σ_i m_i U[e_i, e_{i+1}] on the line: mass ``masses[i]`` spread uniformly on cell i.

    Its CDF F is continuous and linear on each cell: F(e_0) = 0, F(e_{i+1}) = m_0 + … + m_i, 0 before e_0, F(e_n)
    after e_n.

    Parameters
    ----------
    edges : array_like, shape (n + 1,)
        Strictly increasing, finite cell edges.
    masses : array_like, shape (n,)
        Finite cell masses of positive sum. Small negative masses (a centred scheme's undershoot in an
        under-resolved tail) are kept as they are: the distances that read the law state their effect in their
        bound (``validation.marginal_distances``).
    label : str
        The coordinate in words ("log r"), for messages.
    """

    edges: np.ndarray
    masses: np.ndarray
    label: str = "s"

    def __post_init__(self):
        edges = np.array(self.edges, dtype=float)
        masses = np.array(self.masses, dtype=float)
        if edges.ndim != 1 or edges.size < 2:
            raise ValueError(f"`edges` must be a 1-D array of at least 2 cell edges, got shape {edges.shape}.")
        if not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
            raise ValueError("`edges` must be finite and strictly increasing.")
        if masses.shape != (edges.size - 1,):
            raise ValueError(f"`masses` must have shape ({edges.size - 1},), one per cell of `edges`, got "
                             f"{masses.shape}.")
        if not np.all(np.isfinite(masses)):
            raise ValueError(f"`masses` holds {int(np.sum(~np.isfinite(masses)))} non-finite value(s).")
        if not float(np.sum(masses)) > 0:
            raise ValueError(f"`masses` must have a positive sum, got {float(np.sum(masses)):.3g}.")
        for a in (edges, masses):
            a.setflags(write=False)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "masses", masses)

    @property
    def total(self) -> float:
        """Σ_i m_i."""
        return float(np.sum(self.masses))

    @property
    def negative(self) -> float:
        """Σ_i max(−m_i, 0): the mass of the negative cells."""
        return float(np.sum(np.maximum(-self.masses, 0.0)))

    def cdf(self, x) -> np.ndarray:
        """F(x): linear on each cell between the cumulative masses at the edges, 0 before, the total after."""
        cumulative = np.concatenate([[0.0], np.cumsum(self.masses)])
        return np.interp(np.asarray(x, dtype=float), self.edges, cumulative)

    def __repr__(self) -> str:
        return (f"CellLaw({self.label}: {self.masses.size} cells on [{self.edges[0]:g}, {self.edges[-1]:g}], "
                f"mass {self.total:.6g})")


@dataclass(frozen=True)
class Marginal:
    """One factor's law of a density on a product grid (:meth:`~meanfield.domains.Grid.marginals`).

    Attributes
    ----------
    name : str
        The coordinate ("direction", "polar angle", "log r"): the key the distances are returned under.
    law : CellLaw or Frame
        Its law as the grid represents it (module docstring): a :class:`CellLaw`, or a frame of a one-dimensional
        domain (a circle or zonal density).
    read : callable
        ``read(x)`` for points x of R^d, shape (..., n, d) (the particles' tokens x = rθ): the coordinate the law is
        the law of — an array (..., n) for a :class:`CellLaw` (s = log|x|), points of the frame's domain for a frame
        (the directions x/|x|, which the circle reads as angles and the zonal sphere as polar angles).
    """

    name: str
    law: object
    read: Callable[[np.ndarray], np.ndarray]


def directions(x) -> np.ndarray:
    """θ = x/|x| of tokens x = rθ ∈ R^d, shape (..., n, d): the direction factor's points (``ValueError`` at r = 0)."""
    x = np.asarray(x, dtype=float)
    r = np.linalg.norm(x, axis=-1, keepdims=True)
    if not np.all(r > 0):
        raise ValueError("tokens x = rθ must have r > 0: a point at the origin has no direction.")
    return x / r


def log_radii(x) -> np.ndarray:
    """s = log|x| of tokens x = rθ ∈ R^d, shape (..., n): the radial factor's coordinate (``ValueError`` at r = 0)."""
    r = np.linalg.norm(np.asarray(x, dtype=float), axis=-1)
    if not np.all(r > 0):
        raise ValueError("tokens x = rθ must have r > 0: log r of a point at the origin is −∞.")
    return np.log(r)
