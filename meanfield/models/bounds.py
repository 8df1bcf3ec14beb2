r"""Bounds on the field of a model, for step sizes and stability estimates: one place (MATH.md §4).

Per head, with a = β‖Q‖‖K‖ (so |β⟨Qx, Ky⟩| <= a on the sphere) and v = ‖V‖
(operator 2-norms), let s = 1 for SA and s = e^{a} for USA. For any probability
measure μ the unprojected average u_μ = ∫ e^{β⟨Qx,Ky⟩} V y dμ / Z_μ satisfies

    sup |u_μ| <= v s,   sup |∇_x u_μ| <= v a s

(SA: ∇_x u is the covariance of Vy and βKᵀQy under the tilted law; USA:
|∇_y e^{β⟨Qx,Ky⟩}| <= a e^{a}). Everything below is built from these two:

- :func:`rate_scale` = Σ_h v(1 + a) s, the inverse time scale the solvers'
  default steps divide by (sup|u| + sup|∇u|);
- :func:`lipschitz_constants`: L_x = Σ_h v(2 + a) s, since |D(P_x^⊥ u)| <= |∇u| + 2|u|;
  L_μ = Σ_h v e^{a}(1 + 2a)/min Z for SA (<= v(1 + 2a)e^{2a}, the a priori
  constant of MATH.md §4 for Q = K = V = I, from min_x Z_μ(x) >= e^{-a}) and
  v e^{a}(1 + a) for USA (|∇_y(k V y)| <= v e^{a}(1 + a)). Derivation in
  :mod:`validation.stability`.
"""

from __future__ import annotations

import numpy as np

from ..numerics import EXP_MAX
from .base import heads

__all__ = ["head_norms", "rate_scale", "lipschitz_constants"]


def head_norms(head) -> tuple[float, float]:
    """(a, v) = (β‖Q‖‖K‖, ‖V‖), operator 2-norms: |β⟨Qx, Ky⟩| <= a and |Vy| <= v on the sphere."""
    nq, nk, nv = (1.0 if M is None else float(np.linalg.norm(M, 2)) for M in (head.Q, head.K, head.V))
    return head.beta * nq * nk, nv


def rate_scale(model) -> float:
    """Σ_h v(1 + a) s (module docstring): a bound on sup|u| + sup|∇u| for any probability measure.

    The solvers scale their default time steps by its inverse. ``inf`` where
    the USA factor e^{a} overflows float64.
    """
    total = 0.0
    for h in heads(model):
        b, nv = head_norms(h)
        if h.normalized:
            total += nv * (1.0 + b)
        elif b + np.log1p(b) + np.log(max(nv, 1e-300)) > EXP_MAX:
            return float("inf")
        else:
            total += nv * (1.0 + b) * np.exp(b)
    return total


def lipschitz_constants(model) -> tuple[float, float]:
    """(L_x, L_μ), the a priori Lipschitz constants of the field in x and in μ for W_1 (module docstring)."""
    Lx = Lmu = 0.0
    for h in heads(model):
        a, v = head_norms(h)
        if h.normalized:
            Lx += v * (2.0 + a)
            Lmu += v * (1.0 + 2.0 * a) * np.exp(2.0 * a)
        else:
            Lx += v * np.exp(a) * (2.0 + a)
            Lmu += v * np.exp(a) * (1.0 + a)
    return Lx, Lmu
