r"""Bounds on the field of a model, for step sizes and stability estimates: one place (MATH.md §4).

Sphere heads. With a = β‖Q‖‖K‖ (so |β⟨Qx, Ky⟩| <= a on the sphere) and
v = ‖V‖ (operator 2-norms), let s = 1 for SA and s = e^{a} for USA. For any
probability measure μ the unprojected average u_μ = ∫ e^{β⟨Qx,Ky⟩} V y dμ / Z_μ
satisfies

    sup |u_μ| <= v s,   sup |Du_μ| <= v a s,   sup |D²u_μ| <= 2 v a² (SA), v a² e^{a} (USA)

(SA: Du is the covariance of Vy and βKᵀQy under the tilted law π_x, D²u
their third joint cumulant, |Vy − E Vy| <= 2v; USA: the k-th derivative of
e^{β⟨Qx,Ky⟩} is at most a^k e^{a}). Everything below is built from these:

- :func:`rate_scale` = Σ_h v(1 + a) s, the inverse time scale the solvers'
  default steps divide by (sup|u| + sup|Du|); :func:`rate_scale_over` the largest
  over the layers of time-dependent weights met in a time interval;
- :func:`lipschitz_constants`: L_x = Σ_h v(2 + a) s, since
  |D(P_x^⊥ u)| <= |Du| + 2|u|; L_μ = Σ_h v(1 + 2a) e^{2a} for SA (the a priori
  constant of MATH.md §4 for Q = K = V = I) and v e^{a}(1 + a) for USA.

  Derivation of L_μ (SA). With k(x, y) = e^{β⟨Qx,Ky⟩},
  u_μ(x) − u_ν(x) = ∫ k(x, y)(Vy − u_ν(x)) d(μ − ν)(y) / Z_μ(x), and the
  integrand's gradient in y is at most k(v + |∇_y log k|·2v), so by
  Kantorovich–Rubinstein |u_μ(x) − u_ν(x)| <= v(1 + 2a) K_μ(x) W_1(μ, ν) with
  K_μ(x) = sup_y k(x, y)/Z_μ(x) <= e^{2a} (log k oscillates by at most 2a).
  The a posteriori estimate of :mod:`validation.stability` measures K_μ along
  the solution instead of bounding it by e^{2a}.

R^d heads (:func:`head_constants` with the support radius R: all points of
both measures lie in |y| <= R). With A = KᵀQ, v = ‖V‖ and the law
π_x(dy) ∝ k(x, y) μ(dy):

=========  =====================  ==============================  ===================
model      ∇_x log k (y-part)     a_μ = R sup|∇_y log k|          L_x = sup|DΓ|
=========  =====================  ==============================  ===================
softmax    βAᵀy                   β‖A‖R²                          v β‖A‖ R²
L2         QᵀKy/τ                 ‖K‖(‖Q‖ + ‖K‖)R²/τ              v ‖A‖ R²/τ
Sinkhorn   QᵀKy/τ (μ fixed)       — (L_μ not derived: ∞)          v ‖A‖ R²/τ
sigmoid    σ'(⟨Ax,y⟩+b)Aᵀy        —                               v ‖A‖ R²/4
=========  =====================  ==============================  ===================

DΓ = Cov_{π_x}(Vy, ∇_x log k) and |Cov(f, g)| <= sd(f) sd(g) with
sd(Vy) <= vR and sd(g) <= Lip(g) R give the L_x column; for the normalised
kernels L_μ = v(1 + 2a_μ) K_μ <= v(1 + 2a_μ) e^{2a_μ}, as on the sphere
(|Vy − Γ_ν(x)| <= 2vR); for sigmoid attention (no normaliser, σ <= 1,
σ' <= 1/4) L_μ = v(1 + ‖A‖R²/4). Sinkhorn's L_μ needs the stability of the
Sinkhorn potentials in W_1, not derived here: its a priori and a posteriori
bounds are reported as ∞ (vacuous), never as a number that is not a bound.
Masked attention is not Lipschitz in μ for W_1 (the mask 1_{τ <= s} is
discontinuous in τ): ∞ too. The sphere is the case R = 1 of the softmax
row (a = β‖Q‖‖K‖ there, ‖A‖ <= ‖Q‖‖K‖).

Second derivatives, for turning a maximum over grid nodes into a supremum
(:attr:`HeadConstants.second`, a Lipschitz constant of the one-sided
Lipschitz number Λ(x) = max_{|w|=1} ⟨w, ∇_w X⟩): in R^d Λ(x) = λ_max(sym DΓ)
and |D²Γ| is the third cumulant, <= 2vR(cR)² with c the y-Lipschitz constant
of ∇_x log k (v R (‖A‖R)²/(6√3) for sigmoid, |σ''| <= 1/(6√3)); on the
sphere Λ(x) = max_{w ⊥ x} ⟨w, Du w⟩ − ⟨x, u⟩ and moving x moves the maximising
tangent w by at most 2|δx|, so Lip Λ <= |D²u| + 5|Du| + |u|.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.numerics import EXP_MAX
from .base import heads

__all__ = ["head_norms", "rate_scale", "rate_scale_over", "lipschitz_constants", "head_constants", "HeadConstants", "exp_or_inf", "norm2",
           "SIGMOID_CURVATURE"]

#: max |σ''| = 1/(6√3), the sigmoid's second derivative
SIGMOID_CURVATURE = 1.0 / (6.0 * np.sqrt(3.0))


def norm2(M) -> float:
    """The operator 2-norm of M (1 for ``None``, the identity)."""
    return 1.0 if M is None else float(np.linalg.norm(M, 2))


def head_norms(head) -> tuple[float, float]:
    """(a, v) = (|β|‖Q‖‖K‖, ‖V‖), operator 2-norms: |β⟨Qx, Ky⟩| <= a and |Vy| <= v on the sphere (β < 0 too)."""
    return abs(head.beta) * norm2(head.Q) * norm2(head.K), norm2(head.V)


def exp_or_inf(x: float) -> float:
    """e^x, or ``inf`` past float64's range."""
    return float("inf") if x > EXP_MAX else float(np.exp(x))


@dataclass(frozen=True)
class HeadConstants:
    """The bounds of one head on a support of radius R (module docstring).

    Attributes
    ----------
    v : float
        ‖V‖.
    L_x : float
        Lipschitz constant of the field in x (sphere: of P_x^⊥u, chordal).
    L_mu : float
        Lipschitz constant of the field in μ for W_1 (``inf`` where not derived).
    a_mu : float or None
        R sup|∇_y log k|, so that L_μ(x) <= v(1 + 2a_μ) K_μ(x) with
        K_μ(x) = sup_y k(x, y)/Z_μ(x) <= e^{2a_μ}; None for kernels without a
        normaliser (sigmoid) or without a derived L_μ.
    grad_x : float
        sup|∇_x log k|: log K_μ is 2·grad_x-Lipschitz in x.
    second : float
        A Lipschitz constant in x of the one-sided Lipschitz number Λ(x).
    """

    v: float
    L_x: float
    L_mu: float
    a_mu: float | None
    grad_x: float
    second: float


def head_constants(head, radius: float | None = None) -> HeadConstants:
    """The :class:`HeadConstants` of one head (its ``constants``, next to its field in its model module);
    ``radius`` R is required in R^d (the sphere has R = 1)."""
    return head.constants(radius)


def rate_scale(model) -> float:
    """Σ_h v(1 + a) s (module docstring): a bound on sup|u| + sup|∇u| for any probability measure (each sphere
    head's ``speed_bound``).

    The solvers scale their default time steps by its inverse. ``inf`` where
    the USA factor e^{a} overflows float64. A model with time-dependent weights
    has one per time: ``ValueError`` here, :func:`rate_scale_over` its largest
    over an interval.
    """
    from .transformer import Transformer, as_model

    model = as_model(model)
    if getattr(model, "time_dependent", False):
        raise ValueError(f"{model!r} has time-dependent weights, whose rate scale changes with t: take the largest over "
                         "the run, rate_scale_over(model, t0, t1), or that of one time, rate_scale(model.at(t)).")
    if isinstance(model, Transformer):  # a X_att + b Σ X_ff
        a, b = model.weights
        att = abs(a) * rate_scale(model.attention) if model.attention is not None and a else 0.0
        return float(att + abs(b) * sum(f.speed_bound() for f in model.feedforward))
    return float(sum(h.speed_bound() for h in heads(model)))


def rate_scale_over(model, t0: float, t1: float) -> float:
    """The largest :func:`rate_scale` of ``model`` over [t0, t1]: its own for constant weights; for a schedule of
    layers (:func:`meanfield.models.layers`) the largest of the layers met in [t0, t1], each a constant model
    (``model.at(t)`` at t0 and at every layer boundary inside), so that a step divided by it is small enough in every
    layer of the run (a particle system's or a study's default step).

    Raises
    ------
    ValueError
        A weight given by a callable (no bound on its speeds over an interval: the step must be given).
    """
    from .schedule import piecewise_constant
    from .transformer import as_model

    model = as_model(model)
    if not getattr(model, "time_dependent", False):
        return rate_scale(model)
    if not piecewise_constant(model):
        raise ValueError(f"{model!r} has a weight given by a callable, with no bound on its speeds: give the step.")
    starts = np.concatenate([[float(t0)], model.breakpoints(float(t0), float(t1))])
    return max(rate_scale(model.at(t)) for t in starts)


def lipschitz_constants(model, radius: float | None = None) -> tuple[float, float]:
    """(L_x, L_μ), the a priori Lipschitz constants of the field in x and in μ for W_1 (module docstring).

    Sums over the heads; ``radius`` is the support radius R in R^d (required
    there), 1 on the sphere.
    """
    parts = [head_constants(h, radius) for h in heads(model)]
    return sum(p.L_x for p in parts), sum(p.L_mu for p in parts)
