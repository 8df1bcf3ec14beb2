r"""What the circle and S² share for zonal models (Q = qI, K = kI, V = cI; MATH.md §2.1).

The kernel e^{β⟨x,y⟩} is then zonal, its multipliers (Bessel I_k on the circle,
Funk–Hecke 4π i_l on S²) give the spectral strategy, and the interaction energy
E_β is monotone along the flow (GLPR Lemma 3.7). Here: the choice between the
spectral and the quadrature strategy, and E_β from the well-conditioned excess.
"""

from __future__ import annotations

import numpy as np

from .. import strategies
from ..numerics import EXP_MAX

__all__ = ["choose_rate", "energy_beta", "energy_from_excess"]


def choose_rate(model, grid, path: str, spectral, quadrature, where: str, field=None):
    """``spectral(grid, β_eff, c, normalized)`` when the kernel is zonal and ``path`` allows it ("auto" or
    "spectral"), else ``quadrature(grid, field)`` ("auto" or "quadrature"; default ``model.field``)."""
    strategies.check(path, ("quadrature", "spectral"), where)
    zonal = model.zonal
    if path == "spectral" and zonal is None:
        raise ValueError(f"the spectral path needs Q = qI, K = kI, V = cI (qk >= 0); got {model!r}.")
    if zonal is not None and path in ("auto", "spectral"):
        return spectral(grid, zonal[0], zonal[1], model.normalized)
    return quadrature(grid, model.field if field is None else field)


def energy_beta(model) -> float | None:
    """β_eff = βqk of a zonal model, whose E_β the solver monitors; None otherwise."""
    zonal = model.zonal
    return None if zonal is None else zonal[0]


def energy_from_excess(excess: float, mass: float, beta: float) -> float:
    """E_β = e^β·excess + m²/2β from the excess e^{-β}(E_β − m²/2β) (= E_β's β → 0 limit at β = 0).

    ``OverflowError`` past β ≈ 709, where e^β overflows."""
    if beta == 0.0:
        return excess
    if beta > EXP_MAX:
        raise OverflowError(f"E_β overflows float64 for β = {beta:g}.")
    return excess * np.exp(beta) + mass * mass / (2.0 * beta)
