r"""Initial laws on the sphere (:mod:`meanfield.laws` and study files reach them through ``SPHERE``).

- uniform noise: 1 + A Σ_{j=1}^{m} a_j e^{2(⟨x,u_j⟩ − 1)}, u_j uniform on S², a_j ~ U(½, 1) (unnormalised);
- the Poisson kernel of the ball, the Möbius-invariant family p_w(x)/|S^{D-1}| with
  p_w(x) = ((1 − |w|²)/|x − w|²)^{D−1} against the normalised surface measure (MATH.md §3; the power
  D − 1, not the harmonic measure's).
"""

from __future__ import annotations

import numpy as np

__all__ = ["uniform_noise", "mobius_density", "mobius_map", "poisson", "sample_poisson", "check_ball_point"]


def uniform_noise(amplitude: float, modes: int, rng: np.random.Generator):
    """The perturbed uniform law (module docstring) on S² as a function of points, unnormalised."""
    centres = rng.standard_normal((modes, 3))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    amps = amplitude * rng.uniform(0.5, 1.0, modes)
    return lambda x: 1.0 + np.exp(2.0 * (x @ centres.T - 1.0)) @ amps


def check_ball_point(w, D: int) -> np.ndarray:
    """``w`` as a vector of the open unit ball of R^D (``ValueError`` otherwise)."""
    w = np.asarray(w, dtype=float)
    if w.shape != (D,):
        raise ValueError(f"`w` must be a vector of length D = {D}, got shape {w.shape}.")
    if not np.linalg.norm(w) < 1:
        raise ValueError(f"`w` must lie in the open unit ball, got |w| = {np.linalg.norm(w):.6g}.")
    return w


def mobius_density(x, w) -> np.ndarray:
    r"""p_w(x)/|S^{D-1}|: the Möbius-invariant family as a density against surface area (module docstring)."""
    from scipy.special import gamma

    x = np.asarray(x, dtype=float)
    D = x.shape[-1]
    w = check_ball_point(w, D)
    area = 2.0 * np.pi ** (D / 2.0) / gamma(D / 2.0)
    return ((1.0 - w @ w) / np.sum((x - w) ** 2, axis=-1)) ** (D - 1) / area


def mobius_map(x, w) -> np.ndarray:
    r"""M_w(x) = ((1 − |w|²)x + 2(1 + ⟨w, x⟩)w)/(1 + 2⟨w, x⟩ + |w|²): it carries the uniform law σ of S^{D-1} to
    p_w σ (MATH.md §3), so it samples the Möbius family exactly."""
    x = np.asarray(x, dtype=float)
    w = check_ball_point(w, x.shape[-1])
    wx = x @ w
    return ((1.0 - w @ w) * x + 2.0 * (1.0 + wx)[..., None] * w) / (1.0 + 2.0 * wx + w @ w)[..., None]


def sample_poisson(a, shape, rng):
    """iid points of p_a/|S^{D-1}|, D = len(a): uniform points pushed by :func:`mobius_map`, shape ``shape + (D,)``."""
    a = np.asarray(a, dtype=float)
    x = rng.standard_normal(tuple(shape) + (a.size,))
    return mobius_map(x / np.linalg.norm(x, axis=-1, keepdims=True), a)


def poisson(a):
    """p_a/|S²| of the point ``a`` of the unit ball as a function of points of the sphere."""
    a = np.array(a, dtype=float)
    return lambda x: mobius_density(x, a)
