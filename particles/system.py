r"""The finite-n systems: particles moved by the attention field (GLPR §1–2, MATH.md §1).

For particles x_1..x_n on S^{d-1} (or in R^d) with weights w_i (default 1/n),

    ẋ_i = X[μ^n](x_i),   μ^n = Σ_j w_j δ_{x_j},

with X from :mod:`meanfield.models` (SA, USA, any Q, K, V, multi-head; the R^d
variants), the same field the density solver uses, summed by one of the
strategies of :mod:`meanfield.strategies`.

Time stepping (:class:`meanfield.integrate.Integrator`) keeps the particles on
the sphere: the field is extended to R^d \ {0} as F(y) = X(y/|y|), which is
tangent to the sphere through y, so |y| is an exact invariant of ẏ = F(y) and
evaluating F at a stage point is the same as evaluating X at its retraction
y/|y|. Classical RK4 applied to ẏ = F(y) is fourth order, changes |y| by
O(h^5) per step, and the retraction after each step (the domain's
``retract``) keeps |x_i| = 1 to round-off without lowering the order. The
adaptive methods ("rk45", "dop853") integrate the same extended ODE with scipy
and retract their (dense) outputs. Everything that differs between the circle,
S^{d-1} and R^d comes from the domain of the points (:mod:`meanfield.domains`).

With noise (``model.noise`` = D > 0, docs/MATH.md §7) the particles follow
dX_i = X[μ^n](X_i) dt + √(2D) dB_i, B_i independent Brownian motions on the
manifold, by Strang splitting (:class:`SplittingStepper`): half a drift step (RK4,
retracted), the Brownian step of the domain over time D·h
(``Domain.brownian_step``: exact in R^d and on the circle; on S^{d-1}, d >= 3, a geodesic step with the heat
kernel's first two zonal moments, weak order 2), half a drift step; the half steps
between two noise steps merge into one RK4 step, so a step costs one RK4 step and
one Brownian draw. Weak order 2 (measured in the tests). The increments are drawn
from ``rng`` in Python, so the results do not depend on the thread count.

Zonal models (Q = qI, K = kI, V = cI, one head, no noise) with more dimensions than
particles, d > n, are integrated by RK4 in the span of the initial tokens
(:mod:`particles.span`): the field is a combination of the tokens, so they never
leave it, and the coordinates in an orthonormal basis of it follow the same
equations in R^n — the same trajectory to round-off, d/n times fewer coordinates
(GLPR §6 in d = 128 with n = 32). ``reduce_span=False`` integrates in R^d.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meanfield import checks, kernels, strategies
from meanfield.density import Density
from meanfield.domains import CIRCLE, EUCLIDEAN, SEQUENCE, SPHERE, Measure
from meanfield.domains.sphere.geometry import check_on_sphere
from meanfield.integrate import (FiniteTracker, Integrator, InterruptTracker, OutputTracker, Problem, ProgressTracker,
                                 Stepper, equal_steps)
from meanfield.integrate.steppers import rk4
from meanfield.kernels.pairwise import UNROLL_MAX
from meanfield.models import Transformer, as_model, attention_of, heads
from meanfield.models.bounds import rate_scale_over

from . import span
from .fused import rk4_small_systems
from .sampling import sample

__all__ = ["simulate", "Trajectory", "rescaled"]

METHODS = ("rk4", "rk45", "dop853")
STRATEGIES = ("auto", "quadrature", "pairwise", "spectral", "fused")


@dataclass(frozen=True)
class Trajectory:
    """Particle positions over time.

    Attributes
    ----------
    t : ndarray, shape (T,)
    x : ndarray, shape (T, [batch,] n, d)
        Positions (unit vectors to round-off on spheres). Where the run was reduced to the span
        (``reduced_to``) and batched, a time-first view of memory laid out system by system:
        ``np.moveaxis(x, 0, 1)`` is contiguous.
    nfev, nsteps : int
        Field evaluations and steps (accepted steps for adaptive methods).
    method, strategy : str
        Integrator and field strategy (:mod:`meanfield.strategies`).
    field_error_bound : float
        Largest bound on the truncation error of the spectral field over the
        run (0.0 for the pairwise and quadrature paths, exact up to round-off).
    noise : float
        The noise strength D of the model (0: deterministic).
    domain : Domain
        Where the particles live (:mod:`meanfield.domains`).
    weights : ndarray, shape x.shape[1:-1]
        The particle weights (1/n by default).
    reduced_to : int or None
        r < d where the system was integrated in an r-dimensional orthonormal basis of its initial tokens' span
        (:mod:`particles.span`; ``x`` is mapped back to R^d), None where it was integrated in R^d.
    basis : ndarray, shape ([batch,] d, r), or None
        Where ``simulate(..., span_coordinates=True)`` kept the run in the span: ``x`` holds the coordinates
        (shape (T, [batch,] n, r)), an isometric copy of the positions (every inner product, pair fraction and E_β
        theirs), and the positions are ``x @ swapaxes(basis, -1, -2)``. None otherwise.
    observed : ndarray or None
        ``observe``'s value at every output time, stacked (time first), where ``simulate`` was given one: then
        ``x`` holds the last output alone (shape (1, [batch,] n, d)) — no history kept.
    """

    t: np.ndarray
    x: np.ndarray
    nfev: int
    nsteps: int
    method: str
    strategy: str
    field_error_bound: float
    domain: object = None
    weights: np.ndarray | None = None
    noise: float = 0.0
    reduced_to: int | None = None
    basis: np.ndarray | None = None
    observed: np.ndarray | None = None

    def measure(self, k: int, *batch) -> Measure:
        """The empirical measure at output ``k`` (and batch index ``batch``), carrying its domain."""
        return Measure(self.x[(k,) + batch], self.weights[batch], self.domain)


def domain_of(model, d: int):
    """Where the particles of ``model`` live: R^d, [0, 1] × S^{d-2} (causal attention: rows (s, x)), the circle
    (d = 2) or S^{d-1}."""
    for domain in (EUCLIDEAN, SEQUENCE):
        if model.manifold == domain.manifold:
            return domain
    return CIRCLE if d == 2 else SPHERE


class ParticleProblem(Problem):
    """ẏ = X[μ^n](y) for the particles, retracted onto their domain after each step (unless ``retract=False``:
    a compiled stepper that retracts by itself)."""

    def __init__(self, velocity, domain, retract: bool = True, model=None):
        self.velocity, self.domain, self._retract, self.model = velocity, domain, retract, model
        self.time_dependent = bool(getattr(model, "time_dependent", False))
        self._layer_time = None

    def rate(self, y, t=None):
        return self.velocity(y, t, self._layer_time) if self.time_dependent else self.velocity(y)

    def at_time(self, t, layer_time=None):
        """A stretch of steps starts at t: its stages take the layer of t (a step ending at a layer boundary stays
        in its own layer)."""
        self._layer_time = t

    def breakpoints(self, t0, t1):
        return self.model.breakpoints(t0, t1) if self.time_dependent else ()

    def retract(self, y):
        return self.domain.retract(y) if self._retract else y

    def reject(self, t, y, reason):
        raise FloatingPointError(f"particle positions became non-finite in the step from t = {t:.6g}; reduce `dt`.")


class SplittingStepper(Stepper):
    """An output interval of Strang-split steps of dX = F(X) dt + √(2D) dB (module docstring), in the fewest equal
    steps <= h: drift(h/2), then per step Brownian(D·h) and drift(h) — drift(h/2) after the last."""

    def __init__(self, f, t, y, t_bound, h: float, noise: float, domain, rng):
        super().__init__(f, t, y, t_bound)
        self.count, self._h = equal_steps(self.t_bound - self.t, h) if self.t < self.t_bound else (0, h)
        self.noise, self.domain, self.rng, self._taken = noise, domain, rng, 0

    def _drift(self, y, start, h):
        """One retracted RK4 step of the drift from time ``start``."""
        return self.domain.retract(rk4(lambda v, tau: self._f(v, start + tau), y, h, timed=True))

    def _step_impl(self):
        h, y, t = self._h, self.y, self.t
        if self._taken == 0:
            y = self._drift(y, t, 0.5 * h)
        y = self.domain.brownian_step(y, self.noise * h, self.rng)
        self._taken += 1
        last = self._taken == self.count
        return (self.t_bound if last else t + h), self._drift(y, t + 0.5 * h, 0.5 * h if last else h), h, None


class FusedStepper(Stepper):
    """A whole output interval of RK4 steps for a batch of small systems, in compiled code (``fused``)."""

    def __init__(self, model, h: float, f, t, y, t_bound):
        super().__init__(f, t, y, t_bound)
        self.model = model
        self.substeps, self._h = equal_steps(self.t_bound - self.t, h) if self.t < self.t_bound else (0, h)

    def _step_impl(self):
        batch = self.y if self.y.ndim == 3 else self.y[None]
        out = rk4_small_systems(self.model, batch, self._h, self.substeps)
        self.nfev += 4 * self.substeps
        return self.t_bound, (out if self.y.ndim == 3 else out[0]), self.t_bound - self.t, None


def simulate(
    model,
    x0,
    t_eval,
    method: str = "rk4",
    dt: float | None = None,
    rng=None,
    progress: bool | None = None,
    *,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    strategy: str = "auto",
    weights=None,
    precision: str = "double",
    reduce_span: bool = True,
    span_coordinates: bool = False,
    observe=None,
) -> Trajectory:
    r"""Simulate n particles ẋ_i = X[μ^n](x_i) on the sphere or in R^d.

    Parameters
    ----------
    model : SelfAttention, MultiHeadAttention, or an R^d model (Softmax, L2, Sinkhorn, Sigmoid, Masked)
    x0 : array_like, shape (n, d) or (batch, n, d), or tuple
        Initial positions: unit vectors on the sphere (checked to 1e-8, then
        normalised exactly), any finite points for R^d models (no
        projection), rows (s, x) for causal attention (a position s in [0, 1] and a unit vector x:
        :func:`particles.with_positions` puts tokens in their array order); a batch axis runs independent
        realisations together. A tuple
        ``(density, n)`` or ``(density, n, batch)`` draws iid initial points
        from a :class:`meanfield.Density` with ``rng``.
    t_eval : array_like, shape (T,)
        Increasing output times; ``t_eval[0]`` is the initial time.
    method : {"rk4", "rk45", "dop853"}
        Fixed-step classical RK4, or scipy's adaptive embedded pairs.
    dt : float, optional
        Largest RK4 step: each output interval is cut into the fewest equal
        steps not exceeding it. Default 0.05 / rate_scale(model) on spheres
        (see :func:`meanfield.models.rate_scale`; for time-dependent weights the largest over the layers of the run,
        :func:`meanfield.models.bounds.rate_scale_over`), 0.01 in R^d.
    rng : int, Generator or None
        Seed for drawing ``x0`` from a density, then for the Brownian increments of a noisy model (required
        there: seeds are explicit).
    progress : bool or None
        A tqdm progress bar over simulated time. Default None: on where standard error is a terminal
        (``sys.stderr.isatty()``), off in pipes, logs and tests.
    rtol, atol : float
        Tolerances of the adaptive methods.
    weights : array_like, shape (n,) or x0.shape[:-1], optional
        Particle weights (default 1/n each), e.g. a Gauss–Hermite rule; the
        empirical measure is Σ w_i δ_{x_i}.
    strategy : {"auto", "quadrature", "pairwise", "spectral", "fused"}
        Field strategy (:mod:`meanfield.strategies`, which resolves "auto"): the model's own sum
        ``model.field`` (the reference); the fused pairwise kernel (on spheres,
        and compiled rows for the R^d models, Sinkhorn's potentials
        included); (Q = qI, K = kI,
        V = cI on the circle and S²) the O(nL) and O(nL²) spectral sums, with
        a certified truncation bound (``field_error_bound``); or, for RK4 with one
        head, "fused": whole step sequences of each realisation in compiled
        code. "auto" picks spectral on the circle from 1024 particles and on
        S² from 6 (L + 1)² particles (``Domain.point_sums``; L = ``sphere_degree(β)``: 26 at β = 4,
        so n >= 4374), fused for batches of at most 64 particles, pairwise
        otherwise on spheres and for every R^d model (every R^d model has
        compiled sums).
    precision : {"double", "single"}
        "single" sums the field in float32 (the pairwise kernel on spheres,
        d <= 8; "auto" then means "pairwise"): about 2.8× faster at n = 4096,
        d = 3, with the field's relative error up to
        :data:`meanfield.kernels.pairwise.SINGLE_PRECISION_ERROR` (1e-5; 3.4e-6
        measured) instead of round-off. Positions and time stepping stay float64.
    reduce_span : bool, default True
        For a zonal SelfAttention (Q = qI, K = kI, V = cI; constant weights, no noise) with n < d particles and
        RK4 on the fused, pairwise or quadrature path: integrate the coordinates of the tokens in an orthonormal
        basis of their initial span, B (d × n) from the QR factorisation of x0ᵀ, and return x = c Bᵀ
        (:mod:`particles.span`: the tokens never leave that span, and RK4 commutes with the isometry, so this is
        the direct integration up to round-off; ``Trajectory.reduced_to`` says n). False integrates in R^d.
    span_coordinates : bool, default False
        Where the run is reduced to the span: return the coordinates themselves, not mapped back to R^d
        (``Trajectory.basis`` holds B): the statistics of inner products (pair fractions, E_β, cluster counts)
        are the same, and writing the history in R^d — 200 outputs × 1024 systems × 32 tokens × 128 components,
        6.7 GB — costs as much as the integration (a phase diagram in d = 128). Ignored where nothing is reduced.
    observe : callable, optional
        A function of the state at an output (the positions, shape ([batch,] n, d); the span coordinates, shape
        ([batch,] n, r), where the run is reduced and ``span_coordinates`` is True) whose values the trajectory keeps
        (``Trajectory.observed``) instead of the history: e.g. ``lambda x: clusters.pair_fraction(x, 1e-3)``.
        ``Trajectory.x`` then holds the last output only.

    Returns
    -------
    Trajectory
    """
    model = as_model(model)  # a feed-forward block alone: a Transformer without attention
    heads(model)  # TypeError for anything but an attention model (or a Transformer)
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    noise = float(model.noise)
    if noise and rng is None:
        raise ValueError(f"`model` has noise = {noise:g}: give `rng` (a seed or a numpy Generator) for its Brownian "
                         "increments, so the run can be repeated.")
    if noise and method != "rk4":
        raise ValueError(f"noisy particles are advanced by the splitting scheme with fixed steps: method 'rk4', got "
                         f"{method!r}.")
    rng = np.random.default_rng(rng) if noise else rng
    if strategy not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}, got {strategy!r}.")
    t_eval = checks.output_times(t_eval)
    x = initial_points(x0, rng, domain_of(model, 3))  # how x0 is read: R^d, rows (s, x), or unit vectors
    n, d = x.shape[-2], x.shape[-1]
    if model.dim is not None and model.dim != d:
        raise ValueError(f"the model's matrices are {model.dim}×{model.dim} but the particles live in R^{d}.")
    first = model.at(t_eval[0])  # a callable's first value (its later ones must keep its size: Head.at)
    if first.dim is not None and first.dim != d:
        raise ValueError(f"the model's time-dependent matrices are {first.dim}×{first.dim} at t = {t_eval[0]:g} but "
                         f"the particles live in R^{d}.")
    domain = domain_of(model, d)
    if dt is not None:
        if method != "rk4":
            raise ValueError(f"`dt` fixes the RK4 step; method {method!r} chooses its own.")
        dt = checks.positive(dt, "dt")
    rtol, atol = checks.positive(rtol, "rtol"), checks.positive(atol, "atol")

    zonal = getattr(attention_of(model), "zonal", None)
    if precision not in ("double", "single"):
        raise ValueError(f"`precision` must be 'double' or 'single', got {precision!r}.")
    if not isinstance(reduce_span, (bool, np.bool_)):
        raise TypeError(f"`reduce_span` must be a bool, got {reduce_span!r}.")
    if not isinstance(span_coordinates, (bool, np.bool_)):
        raise TypeError(f"`span_coordinates` must be a bool, got {span_coordinates!r}.")
    if observe is not None and not callable(observe):
        raise TypeError(f"`observe` must be a function of the state at an output, got {type(observe).__name__}.")
    if precision == "single":
        if domain is EUCLIDEAN or strategy not in ("auto", "pairwise") or d > UNROLL_MAX:
            raise ValueError(f"single precision runs the pairwise kernel on spheres (d <= {UNROLL_MAX}); got "
                             f"strategy {strategy!r} for {model!r} in d = {d}.")
        strategy = "pairwise"
    offered = strategies.for_particles(model, domain, n, d, method=method, batched=x.ndim == 3,
                                       weighted=weights is not None, noisy=noise > 0)
    path = strategies.resolve(strategy, offered, "particles")
    if weights is None:
        w = np.full(x.shape[:-1], 1.0 / n)
    else:
        w = np.broadcast_to(np.asarray(weights, dtype=float), x.shape[:-1]).copy()
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("`weights` must be finite and non-negative.")
    state = {"bound": 0.0}
    h = None
    if method == "rk4":
        h = dt if dt is not None else (0.01 if domain is EUCLIDEAN else 0.05 / max(_speed_scale(model, t_eval), 1e-300))
        if not h > 0:
            raise ValueError(f"no default step for {model!r}: its rate scale overflows (USA with a huge β); pass `dt`.")

    given, B = x, None
    if (reduce_span and domain is SPHERE and path in ("fused", "pairwise", "quadrature")
            and span.refusal(model, n, d, method=method, noisy=noise > 0) is None):
        B = span.basis(x)  # (..., d, n): the run is in the coordinates x B, mapped back by Bᵀ at the end
        x, model = x @ B, span.in_dimension(model, n)

    dynamics = model

    def velocity(y, t=None, layer_time=None):
        # a time-dependent model's of the stage's time, in the layer of the step's start
        model = dynamics.at(t, layer_time) if t is not None else dynamics
        if not isinstance(model, Transformer):
            return attention_velocity(model, y)
        a = model.weights[0]  # a X_att + b Σ X_ff (the drift, at the retracted points on spheres)
        out = model.drift(y if domain is EUCLIDEAN else domain.retract(y))
        return out + a * attention_velocity(model.attention, y) if model.attention is not None and a else out

    def attention_velocity(model, y):
        if domain is EUCLIDEAN:
            return kernels.euclidean_field(model, y, w, y) if path == "pairwise" else model.field(y, w, y)
        y = domain.retract(y)  # F(y) = X(y/|y|): the 0-homogeneous extension
        if path == "quadrature":
            return model.field(y, w, y)
        if path == "pairwise":
            return kernels.field(model, y, w, y, precision)
        spectral_field = domain.point_sums(d).field
        flat = y.reshape(-1, n, d)
        out = np.empty_like(flat)
        for b in range(flat.shape[0]):
            out[b], bound = spectral_field(flat[b], w.reshape(-1, n)[b], flat[b], zonal.beta, model.normalized,
                                           zonal.c)
            state["bound"] = max(state["bound"], float(np.max(bound)))
        return out.reshape(y.shape)

    if observe is None:
        outputs = OutputTracker()
    else:  # the observed state in the coordinates asked for: the span's, or lifted to R^d output by output
        lifted = observe if B is None or span_coordinates else (lambda y: observe(span.lift([y], B)[0]))
        outputs = _Observer(lifted)
    trackers = [FiniteTracker(), outputs, ProgressTracker(t_eval[-1] - t_eval[0], enabled=checks.progress(progress)),
                InterruptTracker()]
    problem = ParticleProblem(velocity, domain, retract=path != "fused", model=model)
    stepper = (lambda f, t, y, t_bound: FusedStepper(model, h, f, t, y, t_bound)) if path == "fused" else None
    if noise:
        stepper = lambda f, t, y, t_bound: SplittingStepper(f, t, y, t_bound, h, noise, domain, rng)  # noqa: E731
    integrator = Integrator(problem, method, dt=h, subdivide=True, dense=method != "rk4", rtol=rtol, atol=atol,
                            trackers=trackers, stepper=stepper)
    integrator.run(t_eval[0], x, t_eval)
    return Trajectory(
        t=t_eval.copy(),
        x=np.stack(outputs.states) if B is None or span_coordinates else
        span.lift(outputs.states, B, first=given if observe is None else None),
        observed=None if observe is None else np.stack(outputs.values),
        nfev=integrator.nfev,
        nsteps=integrator.nsteps,
        method=method,
        strategy=path,
        field_error_bound=state["bound"],
        domain=domain,
        weights=w,
        noise=noise,
        reduced_to=None if B is None else n,
        basis=B if B is not None and span_coordinates else None,
    )


class _Observer(OutputTracker):
    """``observe`` of the state at each output time (``values``), and the last state alone (``states``)."""

    def __init__(self, observe):
        super().__init__()
        self.observe, self.values = observe, []

    def output(self, t, y):
        self.times.append(float(t))
        self.values.append(np.asarray(self.observe(y)))
        self.states = [np.array(y, copy=True)]


def _speed_scale(model, t_eval) -> float:
    """The largest rate scale over the run [t_eval[0], t_eval[-1]] (:func:`meanfield.models.bounds.rate_scale_over`:
    over a schedule's layers); its ValueError (a callable weight) names `dt`, the way out."""
    try:
        return rate_scale_over(model, t_eval[0], t_eval[-1])
    except ValueError as exc:
        raise ValueError(f"`dt`: {exc}") from None


def initial_points(x0, rng, domain):
    if isinstance(x0, tuple) and len(x0) in (2, 3) and isinstance(x0[0], Density):
        return sample(x0[0], x0[1], rng=rng, batch=x0[2] if len(x0) == 3 else None)
    if domain is SEQUENCE:
        x = SEQUENCE.check_points(x0, "x0")
        if x.ndim not in (2, 3) or x.shape[-2] < 1:
            raise ValueError(f"`x0` must have shape (n, 1 + d) or (batch, n, 1 + d) and hold particles, got {x.shape}.")
        return SEQUENCE.retract(x)
    if domain is EUCLIDEAN:
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
    return SPHERE.retract(x)


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
