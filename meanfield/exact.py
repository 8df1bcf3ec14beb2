r"""Closed-form and exactly reduced solutions used as oracles (MATH.md §3).

- :func:`wrapped_cauchy`, :func:`ott_antonsen`: the circle at β = 0
  (Ott & Antonsen, Chaos 18, 037113, 2008).
- :func:`equiangular`: n pairwise orthogonal particles stay equiangular
  (GLPR Theorem 6.8, ODEs (6.9) and (6.10)).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

__all__ = ["wrapped_cauchy", "ott_antonsen", "wrapped_cauchy_sample", "equiangular"]


def _check_a(a) -> complex:
    a = complex(a)
    if not abs(a) < 1:
        raise ValueError(f"the Poisson parameter `a` must satisfy |a| < 1, got {a!r}.")
    return a


def wrapped_cauchy(theta, a) -> np.ndarray:
    r"""Wrapped Cauchy (Poisson kernel) density with respect to dθ.

    .. math:: f_a(θ) = \frac{1}{2π}\frac{1 - |a|^2}{|e^{iθ} - a|^2},\qquad |a| < 1,

    whose trigonometric moments are ∫ e^{inθ} f_a dθ = aⁿ (n >= 0).
    """
    a = _check_a(a)
    theta = np.asarray(theta, dtype=float)
    return (1.0 - abs(a) ** 2) / (2.0 * np.pi * np.abs(np.exp(1j * theta) - a) ** 2)


def ott_antonsen(t, a0) -> np.ndarray:
    r"""Parameter a(t) of the wrapped Cauchy solution at β = 0 (SA and USA, mass 1).

    With X(θ) = Im(z e^{-iθ}), z = ∫ e^{iθ} dμ (MATH.md §2.1), the family f_a
    is invariant and ȧ = ½ a (1 − |a|²): arg a is constant and

    .. math:: |a(t)|^2 = \frac{|a_0|^2 e^{t}}{1 - |a_0|^2 + |a_0|^2 e^{t}}.

    Returns complex a(t) with the shape of ``t``.
    """
    a0 = _check_a(a0)
    t = np.asarray(t, dtype=float)
    r2 = abs(a0) ** 2
    if r2 == 0.0:
        return np.zeros(t.shape, dtype=complex)
    mod2 = r2 / (r2 + (1.0 - r2) * np.exp(-t))
    return (a0 / abs(a0)) * np.sqrt(mod2)


def wrapped_cauchy_sample(phi, a) -> np.ndarray:
    r"""Push angles φ (uniform → iid, equispaced → quasi-uniform) to the wrapped Cauchy law.

    e^{iθ} = (e^{iφ} + a)/(1 + ā e^{iφ}) maps the uniform law to f_a (MATH.md §3).
    Returns θ in [0, 2π).
    """
    a = _check_a(a)
    z = np.exp(1j * np.asarray(phi, dtype=float))
    return np.mod(np.angle((z + a) / (1.0 + np.conj(a) * z)), 2.0 * np.pi)


def equiangular(t, n: int, beta: float, normalized: bool = True) -> np.ndarray:
    r"""Common inner product ρ(t) = ⟨x_i(t), x_j(t)⟩ of n particles started orthogonal.

    For n pairwise orthogonal particles in d >= n (GLPR Theorem 6.8) the
    inner products stay equal and, with Q = K = V = I,

    .. math::

        \text{SA (6.9):}\quad ρ' = \frac{2(1-ρ)((n-1)ρ + 1)}{e^{β(1-ρ)} + n - 1},\qquad
        \text{USA (6.10):}\quad ρ' = \frac{2}{n} e^{βρ}(1-ρ)((n-1)ρ + 1),

    ρ(0) = 0. (Derivation: y = Σ_j e^{β⟨x_i,x_j⟩}x_j has
    ⟨P_{x_i}^⊥ y, x_k⟩ = e^{βρ}(1 − ρ)(1 + (n − 1)ρ), and ρ' = 2⟨ẋ_i, x_k⟩;
    Z_i = e^β + (n−1)e^{βρ} for SA and n for USA.) Solved with DOP853 at
    rtol = 1e-13.
    """
    if int(n) != n or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, got {n!r}.")
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"`beta` must be finite and >= 0, got {beta!r}.")
    t = np.asarray(t, dtype=float)

    def rhs(_, r):
        g = (1.0 - r) * ((n - 1) * r + 1.0)
        if normalized:
            return 2.0 * g / (np.exp(beta * (1.0 - r)) + n - 1)
        return 2.0 / n * np.exp(beta * r) * g

    tt = np.atleast_1d(t)
    if np.any(tt < 0):
        raise ValueError("`t` must be >= 0.")
    order = np.argsort(tt)
    sol = solve_ivp(rhs, (0.0, max(float(tt.max()), 0.0)), [0.0], method="DOP853",
                    t_eval=tt[order], rtol=1e-13, atol=1e-15)
    out = np.empty(tt.shape)
    out[order] = sol.y[0]
    return out.reshape(t.shape)
