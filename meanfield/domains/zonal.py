r"""What the circle and S² share for zonal models (Q = qI, K = kI, V = cI; MATH.md §2.1).

The kernel e^{β⟨x,y⟩} is then zonal, its multipliers (Bessel I_k on the circle,
Funk–Hecke 4π i_l on S²) give the spectral strategy, and the interaction energy
E_β is monotone along the flow (GLPR Lemma 3.7). Here: what a zonal kernel offers
(the spectral strategy, before the quadrature), and E_β from the well-conditioned excess.
"""

from __future__ import annotations

import numpy as np

from ..core.numerics import EXP_MAX

__all__ = ["zonal_strategies", "zonal_refusal", "energy_beta", "energy_from_excess"]

#: The rule of the zonal fast paths (MATH.md §2.1), stated once.
ZONAL_RULE = "Q = qI, K = kI, V = cI with qk >= 0"


def zonal_refusal(model) -> str | None:
    """None for a zonal model, else why the spectral strategies do not apply to it."""
    return None if model.zonal is not None else f"it needs {ZONAL_RULE}; got {model!r}"


def zonal_strategies(model) -> dict[str, str | None]:
    """``spectral`` (where the kernel is zonal), then ``quadrature`` (always): best first, with the refusals."""
    return {"spectral": zonal_refusal(model), "quadrature": None}


def energy_beta(model) -> float | None:
    """β_eff = βqk of the zonal kernel of the model's interaction energy (``model.energy_kernel``), whose E_β the
    solver records; None otherwise."""
    kernel = getattr(model, "energy_kernel", None)  # a model of the user's own may not say
    return None if kernel is None else kernel.beta


def energy_from_excess(excess: float, mass: float, beta: float) -> float:
    """E_β = e^β·excess + m²/2β from the excess e^{-β}(E_β − m²/2β) (= E_β's β → 0 limit at β = 0).

    ``OverflowError`` past β ≈ 709, where e^β overflows."""
    if beta == 0.0:
        return excess
    if beta > EXP_MAX:
        raise OverflowError(f"E_β overflows float64 for β = {beta:g}.")
    return excess * np.exp(beta) + mass * mass / (2.0 * beta)
