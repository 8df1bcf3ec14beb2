r"""Time steppers for autonomous systems y' = f(y): one table, one ``step`` that does the bookkeeping.

Modelled on ``scipy.integrate``'s ``OdeSolver``: a stepper is created at (t, y)
with a bound ``t_bound``, and its public :meth:`Stepper.step` advances by one
step towards it, counts the right-hand-side evaluations and sets ``t``, ``y``
and ``status``; subclasses implement only ``_step_impl``.

=========  =========================================================================
method     stepper
=========  =========================================================================
"rk4"      classical fourth-order Runge–Kutta (:func:`rk4`), fixed steps
"ssprk3"   the strong-stability-preserving third-order scheme of Shu & Osher
           (:func:`ssprk3`), fixed steps; positivity preserving for finite volumes
"rk45"     Dormand–Prince 5(4) (``scipy.integrate.RK45``), adaptive
"dop853"   Dormand–Prince 8(5,3) (``scipy.integrate.DOP853``), adaptive
=========  =========================================================================

A linear part diagonal in the stage variables (``Stages.decay``: the eigenvalues λ <= 0 of a
diffusion DΔ on S¹, S² or a box) is integrated exactly by integrating factors (Lawson 1967:
the scheme runs on v = e^{−tL}z, written without e^{+|λ|h} so nothing overflows), so its
stiffness D·L² never limits the step: "rk4" becomes Lawson's RK4 (:func:`lawson_rk4`, fourth
order), "ssprk3" the Strang splitting e^{hL/2} ∘ SSP-RK3 ∘ e^{hL/2} (second order, and
positivity preserving where SSP-RK3 is: the heat semigroup keeps ρ >= 0), "rk45" the Lawson
form of Dormand–Prince 5(4) (:class:`LawsonStepper`: its abscissae increase, so every factor
is e^{−|λ|τ}, τ >= 0). "dop853" has no such form (its abscissae do not increase).

:class:`RecordingStepper` is Dormand–Prince 8(5,3) on scipy's tableau with its own step
control, for right-hand sides that return a *record* with each stage (the adaptive Lagrangian
panels record the moments of the measure at every stage, and replay new characteristics
through them): the records of each accepted step are handed on when the integrator accepts it.

Fixed-step rules (:class:`FixedStepper`): steps of ``h`` (a number, or a
callable giving the next step) with the last one shortened to land on
``t_bound``; or, with ``subdivide=True``, the interval cut into the fewest equal
steps not exceeding ``h`` (:func:`equal_steps`).

Stages in other variables (:class:`Stages`): a fixed step may run its stages on
z = encode(y) where the right-hand side is cheaper there (on S², the spectral
path's coefficients: no transform at degree L per stage) and return
y + decode(z_new − z). The schemes are linear combinations of stages, so this is
the same step as in y wherever f(y) = decode(rate(encode(y))) and
encode(decode(z)) = z; the part of y that encode does not see (grid values
beyond the expansion) is carried along unchanged, as f never changes it. The
next step starts from z_new, which is encode(y + decode(z_new − z)) up to
round-off, as long as the stepper's ``y`` is still the array that step made
(so one encode per stepper, not one per step: on S², one analysis saved per step).
"""

from __future__ import annotations

import abc
from typing import Callable, NamedTuple

import numba as nb
import numpy as np
import scipy.integrate as si

from ..core.pool import map_ranges

__all__ = ["rk4", "ssprk3", "lawson_rk4", "strang_ssprk3", "equal_steps", "step_count", "Stages", "Stepper",
           "FixedStepper", "AdaptiveStepper", "LawsonStepper", "RecordingStepper", "STEPPERS", "METHODS", "FIXED",
           "ADAPTIVE", "INTEGRATING_FACTOR", "integrating_factor_refusal", "make_stepper"]


# The schemes take f(y, τ), τ the time of the stage from the start of the step (a time-dependent problem's rate
# depends on it; the public forms for y' = f(y) below wrap f).
def _rk4(f, y, h):
    k1 = f(y, 0.0)
    if not _same_array(y, k1):
        k2 = f(y + 0.5 * h * k1, 0.5 * h)
        k3 = f(y + 0.5 * h * k2, 0.5 * h)
        k4 = f(y + h * k3, h)
        return y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    # the same operations in the same order, the same bits, in compiled passes over arrays of our own (a stage's
    # input made once, f's outputs only read): 4 passes instead of numpy's 14 over 13 temporaries (a million
    # particles: 16 MB each), on the library's threads (elementwise: the threads change no bit)
    k2 = f(_axpy(0.5 * h, k1, y), 0.5 * h)
    k3 = f(_axpy(0.5 * h, k2, y), 0.5 * h)
    k4 = f(_axpy(h, k3, y), h)
    if not (_same_array(y, k2) and _same_array(y, k3) and _same_array(y, k4)):
        return y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    flat = [np.ascontiguousarray(a).reshape(-1) for a in (y, k1, k2, k3, k4)]
    out = np.empty_like(flat[0])
    map_ranges(lambda i0, i1: _rk4_combination(*flat, h / 6.0, out, i0, i1), out.size, _element_tasks(out.size),
               work=out.size)
    return out.reshape(y.shape)


def _same_array(y, k) -> bool:
    """Whether the rate k is an ndarray of y's shape and dtype, float64: then the compiled form of :func:`_rk4`
    computes what the expressions do."""
    return (isinstance(y, np.ndarray) and type(k) is np.ndarray and k.shape == y.shape and k.dtype == y.dtype
            and y.dtype == np.float64)


def _element_tasks(n: int) -> int:
    """Tasks of about 128k elements each for n elements (at most 16)."""
    return max(1, min(16, n // 131072))


def _axpy(a: float, x, y):
    """y + a·x in one new array: ``a * x`` rounded, then the sum (the bits of the expression)."""
    xf, yf = np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(y).reshape(-1)
    out = np.empty_like(yf)
    map_ranges(lambda i0, i1: _axpy_kernel(a, xf, yf, out, i0, i1), out.size, _element_tasks(out.size), work=out.size)
    return out.reshape(np.shape(y))


# No fast-math flags: each operation rounded as numpy's expressions round it (no fused multiply-add).
@nb.njit(cache=True, nogil=True)
def _axpy_kernel(a, x, y, out, i0, i1):
    xb, yb, ob = x[i0:i1], y[i0:i1], out[i0:i1]
    for i in range(i1 - i0):
        ob[i] = yb[i] + a * xb[i]


@nb.njit(cache=True, nogil=True)
def _rk4_combination(y, k1, k2, k3, k4, c, out, i0, i1):
    """out = y + c·(((k1 + 2k2) + 2k3) + k4), numpy's order, elements i0..i1−1."""
    yb, ab, bb, cb, db, ob = y[i0:i1], k1[i0:i1], k2[i0:i1], k3[i0:i1], k4[i0:i1], out[i0:i1]
    for i in range(i1 - i0):
        ob[i] = yb[i] + c * (((ab[i] + 2.0 * bb[i]) + 2.0 * cb[i]) + db[i])


def _ssprk3(f, y, h):
    y1 = y + h * f(y, 0.0)
    y2 = 0.75 * y + 0.25 * (y1 + h * f(y1, h))
    return y / 3.0 + (2.0 / 3.0) * (y2 + h * f(y2, 0.5 * h))


def _lawson_rk4(f, z, h, decay):
    E = np.exp(0.5 * h * decay)
    n1 = f(z, 0.0)
    na = f(E * (z + 0.5 * h * n1), 0.5 * h)
    Ez = E * z
    nb = f(Ez + 0.5 * h * na, 0.5 * h)
    nc = f(E * (Ez + h * nb), h)
    return E * (E * (z + (h / 6.0) * n1) + (h / 3.0) * (na + nb)) + (h / 6.0) * nc


def _strang_ssprk3(f, z, h, decay):
    E = np.exp(0.5 * h * decay)
    return E * _ssprk3(f, E * z, h)


def rk4(f, y, h, timed: bool = False):
    """One classical RK4 step of size h for y' = f(y) (``timed``: f(y, τ), τ the stage's time from the step's
    start)."""
    return _rk4(f if timed else (lambda z, tau: f(z)), y, h)


def ssprk3(f, y, h, timed: bool = False):
    """One SSP-RK3 step (Shu & Osher 1988): convex combinations of forward Euler steps (``timed`` as in :func:`rk4`)."""
    return _ssprk3(f if timed else (lambda z, tau: f(z)), y, h)


def lawson_rk4(f, z, h, decay, timed: bool = False):
    """One step of Lawson's integrating-factor RK4 for z' = Λz + f(z), Λ = diag(``decay``) <= 0: RK4 on
    v = e^{−tΛ}z, written with the factors E = e^{hΛ/2} only (no e^{+|λ|h}); fourth order, exact for f = 0
    (``timed`` as in :func:`rk4`)."""
    return _lawson_rk4(f if timed else (lambda y, tau: f(y)), z, h, decay)


def strang_ssprk3(f, z, h, decay, timed: bool = False):
    """e^{hΛ/2} ∘ SSP-RK3(h) ∘ e^{hΛ/2}: Strang splitting of the exact linear flow and SSP-RK3 (second order;
    positivity preserving where SSP-RK3 is and e^{tΛ} is, as the heat semigroup; ``timed`` as in :func:`rk4`)."""
    return _strang_ssprk3(f if timed else (lambda y, tau: f(y)), z, h, decay)


#: The integrating-factor form of each method for a diagonal linear part (None: there is none), on f(y, τ).
INTEGRATING_FACTOR = {"rk4": _lawson_rk4, "ssprk3": _strang_ssprk3, "rk45": "lawson-dp54", "dop853": None}


def integrating_factor_refusal(method: str) -> str | None:
    """Why ``method`` cannot advance a problem with a diagonal linear part (``Stages.decay``: the noise's DΔ) by an
    integrating factor, in words; None where it can (:data:`INTEGRATING_FACTOR`). The one rule the
    :class:`~meanfield.integrate.Integrator` applies and the callers that choose a method ask before any work."""
    if INTEGRATING_FACTOR.get(method) is not None:
        return None
    able = ", ".join(repr(m) for m, form in INTEGRATING_FACTOR.items() if form is not None)
    return f"{method!r} has no integrating-factor form (its stages' abscissae do not increase); use one of {able}"


def equal_steps(interval: float, h: float) -> tuple[int, float]:
    """The fewest equal steps of size <= h covering ``interval``: (number, size)."""
    nsteps = max(1, int(np.ceil(interval / h * (1.0 - 1e-12))))
    return nsteps, interval / nsteps


def step_count(times, h: float) -> int:
    """The fixed steps of a run through the increasing ``times`` (its start, outputs and breakpoints): each stretch
    cut into the fewest equal steps <= h (:func:`equal_steps`), as the fixed steppers with ``subdivide`` do."""
    edges = np.unique(np.asarray(times, dtype=float))
    return int(sum(equal_steps(b - a, h)[0] for a, b in zip(edges[:-1], edges[1:])))


class Stages(NamedTuple):
    """The variables the stages of a fixed step run in (module docstring).

    encode : y ↦ z (linear); decode : z ↦ y, with encode(decode(z)) = z; rate : z ↦ dz/dt,
    with f(y) = decode(rate(encode(y))). ``decay``: the eigenvalues λ <= 0 of a linear part diagonal in z
    (dz/dt = rate(z) + λz), integrated exactly by the integrating-factor schemes; None: there is none.
    """

    encode: Callable
    decode: Callable
    rate: Callable
    decay: np.ndarray | None = None


class Stepper(abc.ABC):
    """Advance y' = f(y) from (t, y) towards ``t_bound`` one step at a time.

    Attributes
    ----------
    t, y : float, ndarray
        The current time and state.
    status : {"running", "finished", "failed"}
    nfev : int
        Right-hand-side evaluations so far.
    substeps : int
        Steps of the scheme one call of :meth:`step` takes (1, except for compiled steppers that
        advance a whole interval at once).
    message : str or None
        Why the last step failed.
    """

    adaptive = False
    substeps = 1

    def __init__(self, f, t: float, y: np.ndarray, t_bound: float, timed: bool = False):
        self.f, self.t, self.y, self.t_bound = f, float(t), y, float(t_bound)
        self.timed = bool(timed)  # f(y, t): a time-dependent problem (its rate reads the stage's time)
        self.status = "running" if self.t < self.t_bound else "finished"
        self.message = None
        self.nfev = 0

    def _f(self, y, t=None):
        """f at y (at the stage time t where f depends on time)."""
        self.nfev += 1
        return self.f(y, self.t if t is None else t) if self.timed else self.f(y)

    def step(self) -> float:
        """Advance one step; returns its size h (0 if the stepper had finished or failed)."""
        if self.status != "running":
            return 0.0
        t, y, h, message = self._step_impl()
        if message is not None:
            self.status, self.message = "failed", message
            return 0.0
        self.t, self.y = t, y
        if self.t >= self.t_bound:
            self.status = "finished"
        return h

    @abc.abstractmethod
    def _step_impl(self) -> tuple[float, np.ndarray, float, str | None]:
        """(t_new, y_new, h, None), or (t, y, 0, message) on failure."""

    def accept(self) -> None:
        """The integrator accepted the step just taken (no tracker rejected it): commit what it recorded."""

    def restart(self, y) -> None:
        """Go on from the state ``y`` at the current time (a problem replaced its state between steps, e.g.
        bisected panels): forget everything computed from the old state. The fixed steppers carry nothing
        over (their stage variables are re-encoded from a new array); others override this."""
        self.y = y


class FixedStepper(Stepper):
    """RK4 or SSP-RK3 with the fixed-step rules of the module docstring.

    Parameters
    ----------
    method : {"rk4", "ssprk3"}
    h : float or callable
        The step (or a function returning the next one, e.g. a CFL step).
    subdivide : bool
        Cut [t, t_bound] into the fewest equal steps <= h instead of shortening the last one.
    stages : Stages, optional
        Run the stages in these variables (module docstring).
    """

    def __init__(self, f, t, y, t_bound, method: str = "rk4", h=None, subdivide: bool = False,
                 stages: Stages | None = None, timed: bool = False):
        super().__init__(f, t, y, t_bound, timed)
        self.method, self._scheme, self._stages = method, FIXED[method], stages
        if stages is not None and stages.decay is not None:
            lawson = INTEGRATING_FACTOR[method]
            decay = stages.decay
            self._scheme = lambda f, z, h: lawson(f, z, h, decay)
        self._h = h
        self._equal = equal_steps(self.t_bound - self.t, h) if subdivide and self.t < self.t_bound else None
        self._taken = 0
        self._z = self._z_of = None  # the stage variables of the state y the last step made

    def _step_impl(self):
        if self._equal is not None:
            nsteps, h = self._equal
            last = self._taken == nsteps - 1
        else:
            h = self._h() if callable(self._h) else self._h
            last = self.t + h >= self.t_bound * (1 - 1e-14) - 1e-300
            if last:
                h = self.t_bound - self.t
        self._taken += 1
        t0 = self.t
        if self._stages is None:
            y = self._scheme(lambda v, tau: self._f(v, t0 + tau), self.y, h)
        else:
            z = self._z if self._z_of is self.y else self._stages.encode(self.y)
            z_new = self._scheme(lambda v, tau: self._rate_z(v, t0 + tau), z, h)
            y = self.y + self._stages.decode(z_new - z)
            self._z, self._z_of = z_new, y
        return (self.t_bound if last else self.t + h), y, h, None

    def _rate_z(self, z, t):
        self.nfev += 1
        return self._stages.rate(z, t) if self.timed else self._stages.rate(z)


class LawsonStepper(Stepper):
    r"""The Lawson (integrating-factor) form of Dormand–Prince 5(4) for z' = Λz + f(z), Λ = diag(λ) <= 0, on the
    stage variables of :class:`Stages` (module docstring), with scipy RK45's step control.

    Stage i at t + c_i h: U_i = E(c_i) z + h Σ_{j<i} a_ij E(c_i − c_j) N_j, N_i = f(U_i), E(c) = e^{chΛ}; the step
    z_new = E(1) z + h Σ b_j E(1 − c_j) N_j and its error estimate h Σ e_j E(1 − c_j) N_j (c_7 = 1: the FSAL stage).
    The abscissae increase, so no factor grows. The error is measured in z (the coefficients), scaled by
    atol + rtol·max(|z|, |z_new|) as RK45 scales y; the steps grow and shrink as scipy's RK45.
    """

    adaptive = True
    _SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0

    def __init__(self, f, t, y, t_bound, stages: Stages, rtol: float = 1e-10, atol: float = 1e-12,
                 max_step: float = np.inf, timed: bool = False):
        super().__init__(f, t, y, t_bound, timed)
        tab = si.RK45
        self._A, self._B, self._C, self._E = tab.A, tab.B, tab.C, tab.E
        self._stages, self.rtol, self.atol, self.max_step = stages, rtol, atol, max_step
        self._z = stages.encode(y)
        self._n0 = None
        self.h_abs = None

    def _N(self, z, t=None):
        self.nfev += 1
        t = self.t if t is None else t
        return self._stages.rate(z, t) if self.timed else self._stages.rate(z)

    def restart(self, y):
        self.y, self._z, self._n0 = y, self._stages.encode(y), None

    @staticmethod
    def _rms(x):
        return float(np.linalg.norm(x) / np.sqrt(x.size))

    def _first_step(self, z, n0):
        """Hairer's initial step (as scipy's select_initial_step, order 4) on the nonlinear part."""
        scale = self.atol + np.abs(z) * self.rtol
        d0, d1 = self._rms(z / scale), self._rms(n0 / scale)
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h0 = min(h0, self.t_bound - self.t)
        d2 = self._rms((self._N(z + h0 * n0, self.t + h0) - n0) / scale) / h0
        h1 = max(1e-6, h0 * 1e-3) if max(d1, d2) <= 1e-15 else (0.01 / max(d1, d2)) ** 0.2
        return min(100 * h0, h1, self.t_bound - self.t)

    def _step_impl(self):
        t, z, decay = self.t, self._z, self._stages.decay
        if self._n0 is None:
            self._n0 = self._N(z)
        if self.h_abs is None:
            self.h_abs = self._first_step(z, self._n0)
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        h_abs = min(max(self.h_abs, min_step), self.max_step)
        A, B, C, Ecoef = self._A, self._B, self._C, self._E
        rejected = False
        while True:
            if h_abs < min_step:
                return t, self.y, 0.0, f"the step size underflowed at t = {t:.6g}"
            h = min(h_abs, self.t_bound - t)
            c = np.append(C, 1.0)
            N = [self._n0]
            for i in range(1, C.size):
                U = np.exp(c[i] * h * decay) * z
                for j in range(i):
                    if A[i, j] != 0.0:
                        U = U + (h * A[i, j]) * (np.exp((c[i] - c[j]) * h * decay) * N[j])
                N.append(self._N(U, t + c[i] * h))
            z_new = np.exp(h * decay) * z
            for j in range(B.size):
                z_new = z_new + (h * B[j]) * (np.exp((1.0 - c[j]) * h * decay) * N[j])
            N.append(self._N(z_new, t + h))
            err = sum((h * Ecoef[j]) * (np.exp((1.0 - c[j]) * h * decay) * N[j]) for j in range(Ecoef.size))
            scale = self.atol + self.rtol * np.maximum(np.abs(z), np.abs(z_new))
            norm = self._rms(np.abs(err) / scale)
            if not np.isfinite(norm):
                return t, self.y, 0.0, f"the rate is not finite in the step from t = {t:.6g}"
            if norm < 1.0:
                factor = self._MAX_FACTOR if norm == 0 else min(self._MAX_FACTOR, self._SAFETY * norm ** -0.2)
                self.h_abs = h_abs * (min(1.0, factor) if rejected else factor)
                break
            h_abs *= max(self._MIN_FACTOR, self._SAFETY * norm ** -0.2)
            rejected = True
        y_new = self.y + self._stages.decode(z_new - z)
        self._z, self._n0 = z_new, N[-1]
        t_new = self.t_bound if h == self.t_bound - t else t + h
        return t_new, y_new, h, None


class AdaptiveStepper(Stepper):
    """scipy's embedded pairs (RK45, DOP853) step by step, on the flattened state.

    ``max_step`` may be changed between steps (a CFL cap); ``dense_output()``
    interpolates the last step.
    """

    adaptive = True

    def __init__(self, f, t, y, t_bound, method: str = "rk45", rtol: float = 1e-10, atol: float = 1e-12,
                 max_step: float = np.inf, timed: bool = False):
        super().__init__(f, t, y, t_bound, timed)
        self.method = method
        self._shape = np.shape(y)
        self._solver = ADAPTIVE[method](lambda _t, v: self._f(v.reshape(self._shape), _t).ravel(), t,
                                        np.asarray(y).ravel(), t_bound, max_step=max_step, rtol=rtol, atol=atol)

    @property
    def max_step(self) -> float:
        return self._solver.max_step

    @max_step.setter
    def max_step(self, value: float) -> None:
        self._solver.max_step = value

    def _step_impl(self):
        message = self._solver.step()
        if self._solver.status == "failed":
            return self.t, self.y, 0.0, message
        return self._solver.t, self._solver.y.reshape(self._shape), self._solver.t - self.t, None

    def dense_output(self):
        """The interpolant of the last step, t ↦ y(t) (shaped)."""
        dense = self._solver.dense_output()
        return lambda t: dense(t).reshape(self._shape)


class RecordingStepper(Stepper):
    r"""Dormand–Prince 8(5,3) on scipy's tableau, whose right-hand side also returns a record of each stage.

    ``f(y) -> (dy/dt, record)``. One step evaluates the 12 stages and f at the new state (first
    same as last: it is the next step's first stage), estimates the error as scipy's DOP853 does,

    .. math::

        \mathrm{err} = h\,\frac{\|e_5\|^2}{\sqrt{(\|e_5\|^2 + 0.01\|e_3\|^2)\,N}},
        \qquad e_k = \frac{\sum_j E_{k,j} K_j}{\mathrm{atol} + \mathrm{rtol}\max(|y|, |y_{new}|)},

    and retries with h·max(0.2, 0.9 err^{-1/8}) until err < 1; the next step is
    h·min(10, 0.9 err^{-1/8}). A step shortened to land on ``t_bound`` does not shrink the
    step proposed after it (:attr:`h`, which the next stepper of the run may start from).
    On :meth:`accept`, ``on_accept(h, records)`` receives the step and the records of its
    stages (shape ``(12,) + record shape``), in the order of scipy's ``DOP853.A``.

    Parameters
    ----------
    f : callable
        ``f(y) -> (rate, record)``; records are arrays of one shape and dtype.
    first_step : float
        The first step tried.
    fsal : tuple, optional
        ``(rate, record)`` at ``y`` from an earlier stepper of the same run (saves one evaluation).
    on_accept : callable, optional
    """

    adaptive = True
    stages = si.DOP853.B.size  # stages per step, each with its record (the last one is the next step's first)
    _SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0

    def __init__(self, f, t, y, t_bound, *, rtol: float = 1e-12, atol: float = 1e-12, first_step: float,
                 fsal=None, on_accept=None):
        super().__init__(f, t, y, t_bound)
        tableau = si.DOP853
        self._A, self._B, self._E3, self._E5 = tableau.A, tableau.B, tableau.E3, tableau.E5
        self.rtol, self.atol, self.h = rtol, atol, float(first_step)
        self.fsal, self._on_accept, self._pending = fsal, on_accept, None
        self.max_step = np.inf  # the integrator's cap (a CFL bound); none by default

    def _fr(self, y):
        self.nfev += 1
        return self.f(y)

    def restart(self, y):
        self.y, self.fsal = y, None

    def _step_impl(self):
        y, t = self.y, self.t
        if self.fsal is None:
            self.fsal = self._fr(y)
        ns = self._B.size
        t_next = self.t_bound
        while True:
            h = min(self.h, t_next - t, self.max_step)
            K = np.empty((ns + 1,) + y.shape)
            K[0] = self.fsal[0]
            records = [self.fsal[1]]
            for i in range(1, ns):
                K[i], rec = self._fr(y + h * _combine(self._A[i, :i], K[:i]))
                records.append(rec)
            y_new = y + h * _combine(self._B, K[:ns])
            K[ns], rec_new = self._fr(y_new)
            scale = self.atol + self.rtol * np.maximum(np.abs(y), np.abs(y_new))
            e5 = np.sum((_combine(self._E5, K) / scale) ** 2)
            e3 = np.sum((_combine(self._E3, K) / scale) ** 2)
            err = 0.0 if e5 == 0 and e3 == 0 else h * e5 / np.sqrt((e5 + 0.01 * e3) * y.size)
            if not np.isfinite(err):
                return t, y, 0.0, f"the rate is not finite in the step from t = {t:.6g}"
            if err < 1.0:
                break
            self.h = h * max(self._MIN_FACTOR, self._SAFETY * err ** (-1.0 / 8.0))
            if self.h < 1e-14 * max(1.0, abs(t)):
                return t, y, 0.0, f"the step size underflowed at t = {t:.6g}"
        landed = h == t_next - t
        grown = h * (self._MAX_FACTOR if err == 0 else min(self._MAX_FACTOR, self._SAFETY * err ** (-1.0 / 8.0)))
        self.h = max(self.h, grown) if landed else grown
        self.fsal = (K[ns], rec_new)
        self._pending = (h, np.stack(records))
        return (t_next if landed else t + h), y_new, h, None

    def accept(self):
        if self._on_accept is not None and self._pending is not None:
            self._on_accept(*self._pending)
        self._pending = None


def _combine(c, K):
    """Σ_j c_j K_j over the nonzero c_j, in order: a Runge–Kutta stage or an error estimate (elementwise NumPy, no
    BLAS product, whose threads would compete with the compiled field sums' for the cores)."""
    out = np.zeros(K.shape[1:])
    for cj, Kj in zip(c, K):
        if cj != 0.0:
            out += cj * Kj
    return out


FIXED = {"rk4": _rk4, "ssprk3": _ssprk3}  # on f(y, τ)
ADAPTIVE = {"rk45": si.RK45, "dop853": si.DOP853}
STEPPERS = {**{name: FixedStepper for name in FIXED}, **{name: AdaptiveStepper for name in ADAPTIVE}}
METHODS = tuple(STEPPERS)


def make_stepper(method: str, f, t, y, t_bound, **options) -> Stepper:
    """The stepper of ``method`` (:data:`STEPPERS`) at (t, y) bound for ``t_bound``."""
    return STEPPERS[method](f, t, y, t_bound, method=method, **options)
