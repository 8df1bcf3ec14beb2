"""Floating-point limits of float64 that several layers must respect (MATH.md §2.1).

USA keeps the unscaled kernel e^{β⟨x,y⟩}; SA shifts exponents by their maximum,
so only USA (and E_β itself) can overflow. The one threshold and the one
overflow message live here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EXP_MAX", "check_usa_beta"]

#: Largest exponent whose exponential is finite in float64 (log of the largest double, ≈ 709.78).
EXP_MAX = float(np.log(np.finfo(float).max))


def check_usa_beta(beta: float, normalized: bool, where: str) -> None:
    """``OverflowError`` for USA where the unscaled kernel e^β overflows float64 (MATH.md §2.1)."""
    if not normalized and beta > EXP_MAX:
        raise OverflowError(
            f"USA on {where} with β = {beta:g}: the unscaled kernel e^(β⟨x,y⟩) overflows float64 for β > "
            f"{EXP_MAX:.1f} (MATH.md §2.1 keeps it unscaled); use SA or a smaller β."
        )
