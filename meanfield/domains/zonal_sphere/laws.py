r"""Initial laws of the zonal domain: zonal about e (:func:`~meanfield.domains.zonal_sphere.grid.axis`), as
functions of unit vectors of R^d (the same functions work on S¹, S² and for particles).

- uniform noise: f(x) = 1 + Σ_{k=1}^{m} s_k a_k P̃_k(⟨x, e⟩), s_k = ±1, a_k ~ U(A/2, A), P̃_k = p̄_k/p̄_k(1) the zonal
  polynomial of degree k normalised to 1 at the pole (|P̃_k| <= 1: A·m < 1 keeps f positive; on the circle
  P̃_k(cos θ) = cos kθ, the even modes of the circle's law);
- the Poisson kernel of a point a = s e of the axis (|s| < 1), p_a(x)/|S^{d−1}| (MATH.md §3): zonal exactly when
  a ∥ e, refused otherwise.
"""

from __future__ import annotations

import numpy as np

from ...core import checks
from ..sphere import laws as _sphere_laws
from ..gegenbauer import orthonormal
from .grid import axis

__all__ = ["uniform_noise", "poisson", "sample_poisson"]


def uniform_noise(d: int, amplitude: float, modes: int, rng: np.random.Generator):
    """The perturbed uniform law of the module docstring, unnormalised, a function of unit vectors (..., d)."""
    amps = amplitude * rng.uniform(0.5, 1.0, modes) * np.where(rng.random(modes) < 0.5, -1.0, 1.0)
    top = orthonormal(d, modes, np.ones(1), normalized=True)[0]
    e = axis(d)
    checks.positive_perturbation(
        lambda theta: 1.0 + (orthonormal(d, modes, np.cos(theta), normalized=True)[..., 1:] / top[1:]) @ amps,
        amps, np.arange(1, modes + 1), amplitude, modes)

    def f(x):
        P = orthonormal(d, modes, np.clip(np.asarray(x, dtype=float) @ e, -1.0, 1.0), normalized=True)
        return 1.0 + (P[..., 1:] / top[1:]) @ amps

    return f


def _on_axis(a, d: int) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.shape != (d,):
        raise ValueError(f"`a` must be a point of R^{d} (the zonal domain's dimension), got shape {a.shape}.")
    e = axis(d)
    if np.linalg.norm(a - (a @ e) * e) > 1e-12 * max(1.0, np.linalg.norm(a)):
        raise ValueError(f"the Poisson-kernel law of a is zonal about the axis e = e_{1 if d == 2 else d} only where "
                         f"a is on it; got a = {a!r}.")
    return a


def poisson(d: int, a):
    """p_a/|S^{d−1}| for a on the axis (module docstring), a function of unit vectors."""
    a = _on_axis(a, d)
    return lambda x: _sphere_laws.mobius_density(x, a)


def sample_poisson(d: int, a, shape, rng):
    """Exact iid draws of S^{d-1} from :func:`poisson` of ``a`` (uniform points pushed by the Möbius map)."""
    return _sphere_laws.sample_poisson(_on_axis(a, d), shape, rng)
