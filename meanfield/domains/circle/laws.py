r"""Initial laws on the circle (:mod:`meanfield.laws` and study files reach them through ``CIRCLE``).

- uniform noise: 1 + Σ_{k=1}^{m} a_k cos(kθ + φ_k), φ_k ~ U(0, 2π), a_k ~ U(½A, A) (unnormalised);
- the Poisson kernel (wrapped Cauchy) f_a(θ) = (1/2π)(1 − |a|²)/|e^{iθ} − a|², |a| < 1, whose
  trigonometric moments are ∫ e^{inθ} f_a dθ = aⁿ (MATH.md §3: the Ott–Antonsen family at β = 0).
"""

from __future__ import annotations

import numpy as np

from ...core import checks
from .geometry import points_to_angles

__all__ = ["uniform_noise", "wrapped_cauchy", "wrapped_cauchy_sample", "poisson", "sample_poisson",
           "check_poisson_parameter"]


def uniform_noise(amplitude: float, modes: int, rng: np.random.Generator):
    """The perturbed uniform law (module docstring) as a function of points, unnormalised."""
    k = np.arange(1, modes + 1)
    phases = rng.uniform(0.0, 2.0 * np.pi, modes)
    amps = amplitude * rng.uniform(0.5, 1.0, modes)
    law = lambda theta: 1.0 + np.cos(np.multiply.outer(theta, k) + phases) @ amps  # noqa: E731
    checks.positive_perturbation(law, amps, k, amplitude, modes)
    return lambda x: law(points_to_angles(x))


def check_poisson_parameter(a) -> complex:
    """``a`` as a complex number with |a| < 1 (``ValueError`` otherwise)."""
    a = complex(a)
    if not abs(a) < 1:
        raise ValueError(f"the Poisson parameter `a` must satisfy |a| < 1, got {a!r}.")
    return a


def wrapped_cauchy(theta, a) -> np.ndarray:
    r"""Wrapped Cauchy (Poisson kernel) density with respect to dθ.

    .. math:: f_a(θ) = \frac{1}{2π}\frac{1 - |a|^2}{|e^{iθ} - a|^2},\qquad |a| < 1,

    whose trigonometric moments are ∫ e^{inθ} f_a dθ = aⁿ (n >= 0).
    """
    a = check_poisson_parameter(a)
    theta = np.asarray(theta, dtype=float)
    return (1.0 - abs(a) ** 2) / (2.0 * np.pi * np.abs(np.exp(1j * theta) - a) ** 2)


def wrapped_cauchy_sample(phi, a) -> np.ndarray:
    r"""Push angles φ (uniform → iid, equispaced → quasi-uniform) to the wrapped Cauchy law.

    e^{iθ} = (e^{iφ} + a)/(1 + ā e^{iφ}) maps the uniform law to f_a (MATH.md §3).
    Returns θ in [0, 2π).
    """
    a = check_poisson_parameter(a)
    z = np.exp(1j * np.asarray(phi, dtype=float))
    return np.mod(np.angle((z + a) / (1.0 + np.conj(a) * z)), 2.0 * np.pi)


def sample_poisson(a, shape, rng):
    """iid points of f_a, a = (a₁, a₂): uniform angles pushed by :func:`wrapped_cauchy_sample`, shape ``shape + (2,)``."""
    theta = wrapped_cauchy_sample(rng.uniform(0.0, 2.0 * np.pi, shape), complex(a[0], a[1]))
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def poisson(a):
    """f_a of the point ``a = (a₁, a₂)`` of the unit disc as a function of points of the circle."""
    a = check_poisson_parameter(complex(a[0], a[1]))
    return lambda x: wrapped_cauchy(points_to_angles(x), a)
