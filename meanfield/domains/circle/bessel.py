r"""e^{-β} I_k(β) for every real β: the circle's kernel multipliers (MATH.md §2.1, §13).

scipy's ``ive(k, β)`` is I_k(β) e^{-|β|}; the circle's sums are written with the factor e^{-β} (it cancels in SA
and is multiplied back in USA), which is the same for β >= 0 only. For repulsive attention, β < 0,
I_k(β) = (−1)^k I_k(|β|) and e^{-β} I_k(β) = e^{2|β|} ive(k, β): the signs alternate in k, the magnitudes are those
of |β| (so the truncation degrees are |β|'s).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ive

__all__ = ["scaled_bessel"]


def scaled_bessel(k, beta: float) -> np.ndarray:
    """e^{-β} I_k(β) (module docstring), any real β; ``ive(k, β)`` itself for β >= 0, bit for bit."""
    out = ive(k, beta)
    return out * np.exp(-2.0 * beta) if beta < 0 else out
