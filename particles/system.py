r"""The finite-n systems: particles moved by the attention field (GLPR §1–2, MATH.md §1).

For particles x_1..x_n on S^{d-1} with weights 1/n,

    ẋ_i = X[μ^n](x_i),   μ^n = (1/n) Σ_j δ_{x_j},

with X from :mod:`meanfield.models` (SA, USA, any Q, K, V, multi-head), the
same field the density solver uses.

Time stepping keeps the particles on the sphere: the field is extended to
R^d \ {0} as F(y) = X(y/|y|), which is tangent to the sphere through y, so
|y| is an exact invariant of ẏ = F(y) and evaluating F at a stage point is
the same as evaluating X at its retraction y/|y|. Classical RK4 applied to
ẏ = F(y) is fourth order, changes |y| by O(h^5) per step, and the final
projection on the sphere keeps |x_i| = 1 to round-off without lowering the
order. The adaptive methods ("rk45", "dop853") integrate the same extended
ODE with scipy and project the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import DOP853, RK45
from tqdm.auto import tqdm

from meanfield.density import Density
from meanfield.geometry import check_on_sphere
from meanfield.models import EUCLIDEAN_MODELS, MultiHeadAttention, SelfAttention, rate_scale

from . import kernels
from .sampling import sample

__all__ = ["simulate", "Trajectory", "rescaled"]

METHODS = ("rk4", "rk45", "dop853")
PATHS = ("auto", "pairwise", "spectral", "fused")
#: 'auto' uses the circle spectral path from this many particles on
SPECTRAL_FROM = 1024
#: 'auto' runs batches of at most this many particles per system fully compiled (RK4, one head)
FUSED_UP_TO = 64


@dataclass(frozen=True)
class Trajectory:
    """Particle positions over time.

    Attributes
    ----------
    t : ndarray, shape (T,)
    x : ndarray, shape (T, [batch,] n, d)
        Unit vectors (|x| = 1 to round-off).
    nfev, nsteps : int
        Field evaluations and steps (accepted steps for adaptive methods).
    method, path : str
        Integrator and field strategy ("pairwise" or "spectral").
    field_error_bound : float
        Largest bound on the truncation error of the spectral field over the
        run (0.0 for the pairwise path, exact up to round-off).
    """

    t: np.ndarray
    x: np.ndarray
    nfev: int
    nsteps: int
    method: str
    path: str
    field_error_bound: float


def _initial(x0, rng, sphere=True):
    if isinstance(x0, tuple) and len(x0) in (2, 3) and isinstance(x0[0], Density):
        return sample(x0[0], x0[1], rng=rng, batch=x0[2] if len(x0) == 3 else None)
    if not sphere:
        x = np.array(x0, dtype=float)
        if x.ndim not in (2, 3) or x.shape[-2] < 1:
            raise ValueError(f"`x0` must have shape (n, d) or (batch, n, d), got {x.shape}.")
        if not np.all(np.isfinite(x)):
            raise ValueError("`x0` contains non-finite values (NaN or inf).")
        return x
    x = check_on_sphere(x0, "x0")
    if x.ndim not in (2, 3):
        raise ValueError(f"`x0` must have shape (n, d) or (batch, n, d), got {x.shape}.")
    if x.shape[-2] < 1:
        raise ValueError("`x0` holds no particles.")
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _check_t_eval(t_eval):
    t = np.asarray(t_eval, dtype=float)
    if t.ndim != 1 or t.size < 2:
        raise ValueError(f"`t_eval` must be 1-dimensional with at least 2 times (start and end), got shape {t.shape}.")
    if not np.all(np.isfinite(t)):
        raise ValueError("`t_eval` contains non-finite values.")
    if np.any(np.diff(t) <= 0):
        raise ValueError("`t_eval` must be strictly increasing.")
    return t


def simulate(
    model,
    x0,
    t_eval,
    method: str = "rk4",
    dt: float | None = None,
    rng=None,
    progress: bool = False,
    *,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    path: str = "auto",
    weights=None,
) -> Trajectory:
    r"""Simulate n particles ẋ_i = X[μ^n](x_i) on the sphere.

    Parameters
    ----------
    model : SelfAttention, MultiHeadAttention, or an R^d model (Softmax, L2, Sinkhorn, Sigmoid, Masked)
    x0 : array_like, shape (n, d) or (batch, n, d), or tuple
        Initial positions: unit vectors on the sphere (checked to 1e-8, then
        normalised exactly), any finite points for R^d models (no
        projection); a batch axis runs independent realisations together. A tuple
        ``(density, n)`` or ``(density, n, batch)`` draws iid initial points
        from a :class:`meanfield.Density` with ``rng``.
    t_eval : array_like, shape (T,)
        Increasing output times; ``t_eval[0]`` is the initial time.
    method : {"rk4", "rk45", "dop853"}
        Fixed-step classical RK4, or scipy's adaptive embedded pairs.
    dt : float, optional
        Largest RK4 step: each output interval is cut into the fewest equal
        steps not exceeding it. Default 0.05 / rate_scale(model) (see
        :func:`meanfield.models.rate_scale`).
    rng : int, Generator or None
        Seed for drawing ``x0`` from a density.
    progress : bool
        tqdm progress bar.
    rtol, atol : float
        Tolerances of the adaptive methods.
    weights : array_like, shape (n,) or x0.shape[:-1], optional
        Particle weights (default 1/n each), e.g. a Gauss–Hermite rule; the
        empirical measure is Σ w_i δ_{x_i}.
    path : {"auto", "pairwise", "spectral", "fused"}
        Field strategy: the fused pairwise kernel; (Q = qI, K = kI, V = cI on
        the circle) the O(nL) spectral sum; or, for RK4 with one head,
        "fused": whole step sequences of each realisation in compiled code
        (:func:`particles.kernels.rk4_small_systems`), the fast way to run
        many small systems. "auto" picks spectral on the circle from 1024
        particles, fused for batches of at most 64 particles, else pairwise.

    Returns
    -------
    Trajectory
    """
    if not isinstance(model, (SelfAttention, MultiHeadAttention, *EUCLIDEAN_MODELS)):
        raise TypeError(f"`model` must be an attention model from meanfield.models, got {type(model).__name__}.")
    sphere = model.domain == "sphere"
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    if path not in PATHS:
        raise ValueError(f"`path` must be one of {PATHS}, got {path!r}.")
    t_eval = _check_t_eval(t_eval)
    x = _initial(x0, rng, sphere)
    n, d = x.shape[-2], x.shape[-1]
    if model.dim is not None and model.dim != d:
        raise ValueError(f"the model's matrices are {model.dim}×{model.dim} but the particles live in R^{d}.")
    if dt is not None:
        if method != "rk4":
            raise ValueError(f"`dt` fixes the RK4 step; method {method!r} chooses its own.")
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"`dt` must be a positive finite number, got {dt!r}.")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"`{name}` must be positive, got {v!r}.")

    zonal = model.zonal
    if not sphere and path not in ("auto", "pairwise"):
        raise ValueError(f"R^d models use the pairwise path (model.field); got path {path!r}.")
    use_spectral = path == "spectral" or (path == "auto" and d == 2 and zonal is not None and n >= SPECTRAL_FROM)
    if use_spectral and (d != 2 or zonal is None):
        raise ValueError(f"the spectral path needs the circle (d = 2) and Q = qI, K = kI, V = cI; got d = {d}, {model!r}.")
    single_head = isinstance(model, SelfAttention)
    auto_fused = (path == "auto" and sphere and weights is None and not use_spectral and method == "rk4"
                  and single_head and x.ndim == 3 and n <= FUSED_UP_TO)
    use_fused = path == "fused" or auto_fused
    if use_fused and (method != "rk4" or not single_head or weights is not None):
        raise ValueError(
            "the fused path runs RK4 for a single SelfAttention head with equal weights; got "
            f"method {method!r}, {model!r}, weights {'given' if weights is not None else 'equal'}."
        )
    if weights is None:
        w = np.full(x.shape[:-1], 1.0 / n)
    else:
        w = np.broadcast_to(np.asarray(weights, dtype=float), x.shape[:-1]).copy()
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("`weights` must be finite and non-negative.")
    state = {"nfev": 0, "bound": 0.0}

    def velocity(y):
        state["nfev"] += 1
        if not sphere:
            return model.field(y, w, y)
        y = y / np.linalg.norm(y, axis=-1, keepdims=True)
        if not use_spectral:
            return kernels.field(model, y, w, y)
        flat = y.reshape(-1, n, 2)
        out = np.empty_like(flat)
        for b in range(flat.shape[0]):
            out[b], bound = kernels.circle_spectral_field(flat[b], w.reshape(-1, n)[b], flat[b], zonal[0], model.normalized, zonal[1])
            state["bound"] = max(state["bound"], float(np.max(bound)))
        return out.reshape(y.shape)

    bar = tqdm(total=float(t_eval[-1] - t_eval[0]), disable=not progress, unit="t", leave=False)
    try:
        if method == "rk4":
            h = dt if dt is not None else (0.05 / max(rate_scale(model), 1e-300) if sphere else 0.01)
            if not h > 0:
                raise ValueError(
                    f"no default step for {model!r}: its rate scale overflows (USA with a huge β); pass `dt`."
                )
            if use_fused:
                xs, nsteps = _rk4_fused(model, x, t_eval, h, bar)
                state["nfev"] = 4 * nsteps
            else:
                xs, nsteps = _rk4(velocity, x, t_eval, h, bar, sphere)
        else:
            xs, nsteps = _adaptive(velocity, x, t_eval, method, rtol, atol, bar, sphere)
    finally:
        bar.close()
    return Trajectory(
        t=t_eval.copy(),
        x=xs,
        nfev=state["nfev"],
        nsteps=nsteps,
        method=method,
        path="spectral" if use_spectral else ("fused" if use_fused else "pairwise"),
        field_error_bound=state["bound"],
    )


def _normalise(y):
    return y / np.linalg.norm(y, axis=-1, keepdims=True)


def _check_finite(y, t):
    if not np.all(np.isfinite(y)):
        raise FloatingPointError(f"particle positions became non-finite at t = {t:.6g}; reduce `dt`.")


def _steps(interval, h):
    """The fewest equal steps of size <= h covering ``interval``."""
    nsteps = max(1, int(np.ceil(interval / h * (1.0 - 1e-12))))
    return nsteps, interval / nsteps


def _rk4(f, x, t_eval, h, bar, sphere=True):
    out = np.empty((t_eval.size,) + x.shape)
    out[0] = x
    total = 0
    for k in range(1, t_eval.size):
        nsteps, step = _steps(t_eval[k] - t_eval[k - 1], h)
        for s in range(nsteps):
            k1 = f(x)
            k2 = f(x + 0.5 * step * k1)
            k3 = f(x + 0.5 * step * k2)
            k4 = f(x + step * k3)
            x = x + (step / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            x = _normalise(x) if sphere else x
            _check_finite(x, t_eval[k - 1] + (s + 1) * step)
            bar.update(step)
        total += nsteps
        out[k] = x
    return out, total


def _rk4_fused(model, x, t_eval, h, bar):
    batch = x if x.ndim == 3 else x[None]
    out = np.empty((t_eval.size,) + batch.shape)
    out[0] = batch
    total = 0
    for k in range(1, t_eval.size):
        nsteps, step = _steps(t_eval[k] - t_eval[k - 1], h)
        batch = kernels.rk4_small_systems(model, batch, step, nsteps)
        _check_finite(batch, t_eval[k])
        out[k] = batch
        total += nsteps
        bar.update(t_eval[k] - t_eval[k - 1])
    return (out if x.ndim == 3 else out[:, 0]), total


def _adaptive(f, x, t_eval, method, rtol, atol, bar, sphere=True):
    """scipy's embedded pair step by step; outputs from its dense output, projected."""
    shape = x.shape
    solver_cls = {"rk45": RK45, "dop853": DOP853}[method]
    solver = solver_cls(lambda t, y: f(y.reshape(shape)).ravel(), t_eval[0], x.ravel(), t_eval[-1], rtol=rtol, atol=atol)
    out = np.empty((t_eval.size,) + shape)
    out[0] = x
    k, nsteps = 1, 0
    while k < t_eval.size:
        t_old = solver.t
        message = solver.step()
        if solver.status == "failed":
            raise RuntimeError(f"the adaptive integrator failed at t = {t_old:.6g}: {message}")
        nsteps += 1
        bar.update(solver.t - t_old)
        if k < t_eval.size and t_eval[k] <= solver.t:
            dense = solver.dense_output()
            while k < t_eval.size and t_eval[k] <= solver.t:
                out[k] = dense(t_eval[k]).reshape(shape)
                out[k] = _normalise(out[k]) if sphere else out[k]
                _check_finite(out[k], t_eval[k])
                k += 1
    return out, nsteps


def rescaled(t, x, V) -> np.ndarray:
    r"""The rescaled frame z(t) = e^{−tV} x(t) (GLPR §9.2), where the clustering geometry shows.

    Parameters
    ----------
    t : array_like, shape (T,)
    x : array_like, shape (T, ..., n, d)
        Positions over time (a Trajectory's ``x``).
    V : array_like, shape (d, d)
    """
    from scipy.linalg import expm

    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    V = np.asarray(V, dtype=float)
    if x.shape[0] != t.size or V.shape != (x.shape[-1], x.shape[-1]):
        raise ValueError(f"need x of shape (len(t), ..., n, d) and V of shape (d, d); got {x.shape} and {V.shape}.")
    return np.stack([xk @ expm(-tk * V).T for tk, xk in zip(t, x)])
