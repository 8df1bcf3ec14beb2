r"""Particles driven by a common noise (MATH.md §13; :mod:`meanfield.models.common_noise`).

dX_i = X[μ^n](X_i) dt + √(2D) dB_i + Σ_k P_{X_i}(Σ_k X_i) ∘ dW^k on S¹ and S^{d-1}, by the split scheme of
:mod:`meanfield.models.common_noise`: on the common path's grid t_j = t0 + jh, the tokens are moved by the noise
map x ↦ e^{A}x/|e^{A}x| (A = Σ_k ΔW^k Σ_k over the half step before and the half step after t_j, one merged map
where no output falls at t_j), then by the drift over [t_j, t_{j+1}]: retracted RK4 steps (each path step cut into
the fewest equal steps <= the run's step), and with D > 0 each of them Strang split as today's
:class:`particles.system.SplittingStepper` (drift(s/2), Brownian(D·s), drift(s/2)). Without the noise maps the drift
steps are the noiseless run's own, so a skew Σ (rotations) with rotation-equivariant attention gives the noiseless
trajectory rotated by :meth:`~meanfield.models.common_noise.CommonNoise.flow` to round-off.

:func:`synchronisation_rate` measures how fast tokens synchronise up to sign (the slope of the log of the largest
pairwise projective distance), to compare with :func:`meanfield.models.common_noise.lyapunov_gap`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from meanfield.integrate import Stepper, equal_steps
from meanfield.integrate.steppers import rk4
from meanfield.models.common_noise import interval_maps

__all__ = ["CommonNoiseStepper", "synchronisation_rate", "SyncRate", "projective_spread"]


class CommonNoiseStepper(Stepper):
    """One output interval [t, t_bound] of the split scheme (module docstring): one call of :meth:`step` per step of
    the common path, the noise map before its drift and, at the last, the second half-map after it."""

    def __init__(self, f, t, y, t_bound, h: float, noise, domain, diffusion: float = 0.0, rng=None):
        super().__init__(f, t, y, t_bound)
        self.noise, self.domain, self.diffusion, self.rng = noise, domain, float(diffusion), rng
        path = noise.path
        self.j0, self.j1 = path.index(self.t, "t_eval"), path.index(self.t_bound, "t_eval")
        self.maps = interval_maps(noise, self.j0, self.j1)
        self.substeps_per_step, self._s = equal_steps(path.dt, h)
        self._taken = 0

    def _move(self, y, M):
        return y if M is None else self.domain.retract(y @ M.T)

    def _drift(self, y, start, s):
        return self.domain.retract(rk4(lambda v, tau: self._f(v, start + tau), y, s, timed=True))

    def _step_impl(self):
        i, s = self._taken, self._s
        y = self._move(self.y, self.maps[i])
        start = self.noise.path.t0 + (self.j0 + i) * self.noise.path.dt
        for q in range(self.substeps_per_step):
            t = start + q * s
            if self.diffusion:
                y = self._drift(y, t, 0.5 * s)
                y = self.domain.brownian_step(y, self.diffusion * s, self.rng)
                y = self._drift(y, t + 0.5 * s, 0.5 * s)
            else:
                y = self._drift(y, t, s)
        self._taken += 1
        last = self._taken == self.j1 - self.j0
        if last:
            y = self._move(y, self.maps[-1])
        return (self.t_bound if last else start + self.noise.path.dt), y, self.noise.path.dt, None


def projective_spread(x) -> np.ndarray:
    r"""max_{i<j} |x_i ∧ x_j| = max sin∠(x_i, x_j) over pairs of unit vectors, shape x.shape[:-2]: the largest
    distance between the tokens' lines (up to sign). The linear flow of a common noise sends x and −x to antipodal
    points, so without attention tokens synchronise up to sign: this spread decays at the Lyapunov gap λ₁ − λ₂
    (|Φx ∧ Φy| ≍ e^{(λ₁+λ₂)t}|x ∧ y| and |Φx|, |Φy| ≍ e^{λ₁t}; MATH.md §13)."""
    x = np.asarray(x, dtype=float)
    # |x ∧ y|² as the sum of the squared 2×2 minors x_a y_b − x_b y_a: |x ∧ y| to an absolute ~1e-16 (the minors'
    # cancellation), where sqrt(1 − ⟨x, y⟩²) would floor at ~1e-8
    d = x.shape[-1]
    minors = np.zeros(x.shape[:-1] + (x.shape[-2],))
    for a in range(d):
        for b in range(a + 1, d):
            m = x[..., :, None, a] * x[..., None, :, b] - x[..., :, None, b] * x[..., None, :, a]
            minors += m * m
    return np.sqrt(np.max(minors, axis=(-2, -1)))


@dataclass(frozen=True)
class SyncRate:
    """The synchronisation rate of tokens up to sign (:func:`synchronisation_rate`).

    Attributes
    ----------
    rate : float
        The mean over the realisations of −slope of log(projective spread) against t.
    low, high : float
        Its two-sided 95 % Student-t interval over the realisations.
    rates : ndarray, shape (realisations,)
        Each realisation's fitted rate.
    """

    rate: float
    low: float
    high: float
    rates: np.ndarray


def synchronisation_rate(t, x, window=None, level: float = 0.95) -> SyncRate:
    r"""−d/dt log max_{i<j}|x_i ∧ x_j| by least squares over ``window`` = (t_a, t_b), for each realisation, with the
    Student-t interval of the mean over realisations.

    Parameters
    ----------
    t : array_like, shape (T,)
    x : array_like, shape (R, T, n, d) or (T, n, d)
        Unit vectors: R independent realisations (each on its own common path) of a trajectory.
    window : (float, float), optional
        The fit's time window (default the whole span); keep the spread above round-off (1e-13) inside it.
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    if x.ndim == 3:
        x = x[None]
    if x.ndim != 4 or x.shape[1] != t.size:
        raise ValueError(f"`x` must have shape (realisations, len(t), n, d), got {x.shape} for {t.size} times.")
    a, b = (t[0], t[-1]) if window is None else window
    sel = (t >= a) & (t <= b)
    if sel.sum() < 3:
        raise ValueError(f"`window` {window!r} holds fewer than 3 output times.")
    logs = np.log(projective_spread(x[:, sel]))
    if not np.all(np.isfinite(logs)):
        raise ValueError("the projective spread reached 0 inside `window`: shorten it (the fit needs spread > 0).")
    rates = np.array([-np.polyfit(t[sel], ls, 1)[0] for ls in logs])
    R = rates.size
    if R < 2:
        return SyncRate(float(rates[0]), np.nan, np.nan, rates)
    half = float(stats.t.ppf(0.5 + level / 2, R - 1) * rates.std(ddof=1) / np.sqrt(R))
    return SyncRate(float(rates.mean()), float(rates.mean()) - half, float(rates.mean()) + half, rates)
