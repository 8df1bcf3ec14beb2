"""What the adaptive Lagrangian panels of every domain share (docs/MATH.md §6, "adaptive panels"): the
support record a domain declares them by, Gauss–Legendre nodes and their discrete Legendre transform, the
conditioning of a characteristic, and the Runge–Kutta tableau the field is recorded on (that of
:class:`meanfield.integrate.RecordingStepper`). Each domain's panel set and field record are in its own
package (``circle/panels.py``, ``sphere/panels.py``); :mod:`meanfield.lagrangian.panels` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.integrate as si
from numpy.polynomial import legendre

__all__ = ["PanelSupport", "gauss", "condition", "TABLEAU"]


@dataclass(frozen=True)
class PanelSupport:
    """A domain's adaptive panels (``Domain.panels``) and their defaults.

    Attributes
    ----------
    panels : type
        The panel set: ``Panels(density, order, count, tol, min_width)`` with ``y``, ``w``, ``cond``, ``count``,
        ``unresolved(L)``, ``bisect(split, replay)``, ``origins()``, ``frame()`` and ``default_count(density, order)``.
    field : type
        The zonal field recorded by its moments: ``Field(model)`` with ``degree``, ``k``, ``ncol``,
        ``record_shape``, ``record_dtype``, ``rate(state, w)``, ``replay(y, cond, hs, M)``, ``retract(y)``.
    order : int
        Gauss nodes per panel (per side).
    min_width : float
        The narrowest panel that is still bisected.
    tol : float
        Each panel's bound on its contribution to the error of the moments.
    max_points : int
        The most points before the panels stop (a chain then goes on with fixed nodes).
    """

    panels: type
    field: type
    order: int
    min_width: float
    tol: float
    max_points: int

#: The tableau (A, B, C, E3, E5) of scipy's Dormand–Prince 8(5,3): the stages the field is recorded at.
TABLEAU = si.DOP853


@lru_cache(maxsize=8)
def gauss(order: int):
    """(nodes, weights, T): the Gauss–Legendre rule of ``order`` nodes on [−1, 1] and the discrete Legendre transform
    on them, a_k = (2k+1)/2 Σ_j ω_j P_k(x_j) f_j = (T f)_k, k < order (exact for polynomials of degree < order)."""
    gx, gw = legendre.leggauss(int(order))
    T = legendre.legvander(gx, int(order) - 1).T * gw * (np.arange(int(order))[:, None] + 0.5)
    for a in (gx, gw, T):
        a.setflags(write=False)
    return gx, gw, T


def condition(cond, ell):
    """After a step: log κ_i = max over s' <= s <= t of ℓ_i(s) − ℓ_i(s'), the largest expansion of the flow
    along the characteristic (at the accepted steps), with the running minimum of ℓ_i (``cond[..., 0]``)."""
    np.minimum(cond[..., 0], ell, out=cond[..., 0])
    np.maximum(cond[..., 1], ell - cond[..., 0], out=cond[..., 1])
