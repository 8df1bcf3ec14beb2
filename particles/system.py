r"""The finite-n systems: particles moved by the attention field (GLPR §1–2, MATH.md §1).

For particles x_1..x_n on S^{d-1} (or in R^d) with weights w_i (default 1/n),

    ẋ_i = X[μ^n](x_i),   μ^n = Σ_j w_j δ_{x_j},

with X from :mod:`meanfield.models` (SA, USA, any Q, K, V, multi-head; the R^d
variants), the same field the density solver uses, summed by one of the
strategies of :mod:`meanfield.kernels.strategies`.

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

Normalisation (docs/MATH.md §10; :mod:`meanfield.models.normalization`, read from the model's
``Transformer(..., normalization=...)`` and nowhere else): post-LN is the model above. pre-, peri- and Mix-LN tokens
are points x = rθ of R^d \ {0} (any non-zero vectors to start; the domain R^d, nothing retracted but Mix-LN's
post-LN stretch, which keeps unit vectors), nGPT's unit vectors; each moves by its
:meth:`~meanfield.models.Normalization.velocity` of the heads' average A at the directions θ = x/|x|, summed by
the model's own sums (``quadrature``) or the compiled ones (``pairwise``, :func:`meanfield.kernels.average`) — never
by the post-LN paths (the spectral sums and the fused RK4 compute P_θA: refused for them). Noise: nGPT's directions
diffuse on S^{d-1} (as post-LN's); pre- and peri-LN's residual stream x diffuses in R^d,
dx = v(x) dt + √(2D) dB with B a Brownian motion of R^d (the radius diffuses with it); Mix-LN, whose tokens change
space at t_0, refuses noise. Hardmax attention (β = ∞, :class:`meanfield.models.Hardmax`) runs on the model's own
sums.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np

from meanfield.core import checks
from meanfield.core.tokens import is_sparse
from meanfield import kernels
from meanfield.kernels import strategies
from meanfield.density import Frame
from meanfield.domains import EUCLIDEAN, SPHERE, Measure, for_manifold, unit_sphere
from meanfield.integrate import (
    FiniteTracker, Integrator, InterruptTracker, OutputTracker, Problem, ProgressTracker, Stepper, equal_steps,
    step_count,
)
from meanfield.integrate.steppers import rk4
from meanfield.integrate.trackers import LONG_RUN_STEPS, RunEstimate, time_steps, warn_long_run
from meanfield.models import as_model, at_context, heads
from meanfield.models.bounds import rate_scale_over
from meanfield.models.common_noise import CommonNoise
from meanfield.models.normalization import POST, average, density_refusal, normalization_of, norms_of

from . import span
from .common_noise import CommonNoiseStepper
from .fused import rk4_small_systems
from .sampling import sample
from .snapshot import Snapshot

__all__ = ["simulate", "velocity", "Trajectory", "rescaled", "run_estimate"]

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
        Integrator and field strategy (:mod:`meanfield.kernels.strategies`).
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
    normalization : Normalization
        Where the tokens were normalised (docs/MATH.md §10): post-LN for every model but a Transformer given
        another; pre-, peri- and Mix-LN tokens are x = rθ (``radius``, ``direction``).
    common_noise : CommonNoise or None
        The common noise that drove the run (:mod:`meanfield.models.common_noise`), None where there was none
        (or every Σ_k was 0).
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
    normalization: object = POST
    common_noise: object = None

    @property
    def radius(self) -> np.ndarray:
        """r = |x| of every token at every output, shape x.shape[:-1] (1 for unit vectors)."""
        return np.linalg.norm(self.x, axis=-1)

    @property
    def direction(self) -> np.ndarray:
        """θ = x/|x|, the tokens' directions on S^{d-1} (the positions themselves for unit vectors)."""
        return self.x / self.radius[..., None]

    def frame(self, k: int = -1, *batch) -> Snapshot:
        """The particles at output ``k`` (time ``t[k]``; default the last) and batch index ``batch`` as a frame
        (:class:`particles.Snapshot`, a :class:`meanfield.density.Frame` as a solution's densities are) — the one
        way to read a state of the trajectory."""
        times = self.t[self.t.size - self.x.shape[0]:]  # the outputs x holds (the last alone with ``observe``)
        if self.x[(k,) + batch].ndim != 2:
            raise ValueError(f"`batch`: the trajectory holds a batch of shape {self.x.shape[1:-2]}; a frame is one "
                             f"measure: pass a batch index, frame(k, i), got {batch!r}.")
        return Snapshot(self.x[(k,) + batch], self.weights[batch], self.domain, t=times[k])

    def measure(self, k: int, *batch) -> Measure:
        """The empirical measure at output ``k`` (and batch index ``batch``), carrying its domain: that of
        ``frame(k, *batch)``, and without a batch index the batch of measures (a Measure's points may be batched; a
        frame is one measure)."""
        return Measure(self.x[(k,) + batch], self.weights[batch], self.domain)


def domain_of(model, d: int):
    """Where the particles of ``model`` live: R^d (R^d models; pre-, peri- and Mix-LN tokens x = rθ), [0, 1] ×
    S^{d-2} (causal attention: rows (s, x)), the circle (d = 2) or S^{d-1}."""
    return EUCLIDEAN if normalization_of(model).radial else for_manifold(model.manifold, d)


def _start_domain(carried, model, d: int):
    """Where particles started from a frame of points on ``carried`` live: that domain where the model moves its points
    in R^d (a registered domain other than the manifold's first, e.g. a loop ℝ/Lℤ whose points are the circle's), else
    :func:`domain_of` — tokens x = rθ of the radial variants live in R^d whatever their snapshot carries."""
    if normalization_of(model).radial or not (carried.moved_by(model) and carried.has_dim(d)):
        return domain_of(model, d)
    return carried.of_dim(d)


class ParticleProblem(Problem):
    """ẏ = X[μ^n](y) for the particles, retracted onto their domain after each step (unless ``retract=False``:
    a compiled stepper that retracts by itself); ``unit_before`` = t_0: onto the sphere in the stretches that start
    before t_0 too (Mix-LN's post-LN layers)."""

    def __init__(self, velocity, domain, retract: bool = True, model=None, unit_before: float | None = None):
        self.velocity, self.domain, self._retract, self.model = velocity, domain, retract, model
        self.time_dependent = bool(getattr(model, "time_dependent", False))
        self._layer_time = None
        self.unit_before = unit_before

    def rate(self, y, t=None):
        return self.velocity(y, t, self._layer_time) if self.time_dependent else self.velocity(y)

    def at_time(self, t, layer_time=None):
        """A stretch of steps starts at t: its stages take the layer of t (a step ending at a layer boundary stays
        in its own layer)."""
        self._layer_time = t

    def breakpoints(self, t0, t1):
        return self.model.breakpoints(t0, t1) if self.time_dependent else ()

    def retract(self, y):
        if self.unit_before is not None and self._layer_time is not None and self._layer_time < self.unit_before:
            return SPHERE.retract(y)
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
    common_noise=None,
) -> Trajectory:
    r"""Simulate n particles ẋ_i = X[μ^n](x_i) on the sphere or in R^d.

    Parameters
    ----------
    model : SelfAttention, MultiHeadAttention, Hardmax, Transformer, or an R^d model (Softmax, L2, ..., Masked)
        A Transformer's ``normalization`` (docs/MATH.md §10; module docstring) sets how its tokens move: post-LN
        (default) ẋ = P_x A, pre-LN ẋ = A, peri-LN ẋ = A/|A|, nGPT ẋ = αP_x A/|A|, Mix-LN post-LN before its t_0 and
        pre-LN after, A the heads' average at the directions θ = x/|x|. Hardmax attention (β = ∞, MATH.md §11) on
        its own sums.
    x0 : array_like, shape (n, d) or (batch, n, d), tuple, or a frame of points
        Initial positions: unit vectors on the sphere (checked to 1e-8, then
        normalised exactly), any finite points for R^d models (no
        projection), any non-zero vectors x = rθ for pre-, peri- and Mix-LN (r = 0 refused; a Mix-LN run started
        before t_0 normalises them: post-LN's stream holds unit vectors, ``Trajectory.x[0]`` is then x0/|x0|),
        rows (s, x) for causal attention (a position s in [0, 1] and a unit vector x:
        :func:`particles.with_positions` puts tokens in their array order); a batch axis runs independent
        realisations together. A tuple
        ``(density, n)`` or ``(density, n, batch)`` draws iid initial points
        from a :class:`meanfield.Density` with ``rng``. A frame of points (a :class:`particles.Snapshot`, e.g.
        ``Trajectory.frame(k)``, or a Lagrangian measure) starts at its points with its weights (unless ``weights``
        is given), on its own domain where the model moves that domain's points in R^d (a registered domain that is
        not the manifold's first, such as a loop ℝ/Lℤ over the circle's points), else on the model's.
    t_eval : array_like, shape (T,)
        Increasing output times; ``t_eval[0]`` is the initial time.
    method : {"rk4", "rk45", "dop853"}
        Fixed-step classical RK4, or scipy's adaptive embedded pairs.
    dt : float, optional
        Largest RK4 step: each output interval is cut into the fewest equal
        steps not exceeding it. Default 0.05 / rate_scale(model) on spheres
        (see :func:`meanfield.models.rate_scale`; for time-dependent weights the largest over the layers of the run,
        :func:`meanfield.models.bounds.rate_scale_over`), 0.01 in R^d; for the normalisations other than post-LN
        divided further by the direction's speed-up at the start, max(1, 1/min r) (pre), that over min |A| (peri),
        α/min |A| (nGPT) — where radii or |A| shrink later, give ``dt`` or use an adaptive method.
    rng : int, Generator or None
        Seed for drawing ``x0`` from a density, then for the Brownian increments of a noisy model (required
        there: seeds are explicit).
    progress : bool or None
        A tqdm progress bar over simulated time. Default None: on where standard error is a terminal
        (``sys.stderr.isatty()``); elsewhere (pipes, batch jobs' logs, tests) a progress line after 30 s and every
        60 s after it (:class:`~meanfield.integrate.ProgressTracker`; the fused path is seen at the output times),
        none within :func:`meanfield.core.checks.quiet`. False: nothing.
    rtol, atol : float
        Tolerances of the adaptive methods.
    weights : array_like, shape (n,) or x0.shape[:-1], optional
        Particle weights (default 1/n each), e.g. a Gauss–Hermite rule; the
        empirical measure is Σ w_i δ_{x_i}.
    strategy : {"auto", "quadrature", "pairwise", "spectral", "fused"}
        Field strategy (:mod:`meanfield.kernels.strategies`, which resolves "auto"): the model's own sum
        ``model.field`` (the reference); the fused pairwise kernel (on spheres,
        and compiled rows for the R^d models, Sinkhorn's potentials
        included); (Q = qI, K = kI,
        V = cI on the circle and S²) the O(nL) and O(nL²) spectral sums, with
        a certified truncation bound (``field_error_bound``); or, for RK4 with one
        head, "fused": whole step sequences of each realisation in compiled
        code. "auto" picks spectral above the measured crossover with the pairwise sums
        (``SPECTRAL_CROSSOVER`` of :mod:`meanfield.domains.circle` and :mod:`meanfield.domains.sphere`), where
        their a-priori error bound at the particles is within ``POINT_SUMS_TOLERANCE`` (1e-9 relative to |c|; given
        ``weights`` count as Σ|w|/min|w| particles there):
        on the circle from max(192, 9 (L + 1)) particles (L = ``circle_degree(β)``: 225 at β = 4), on S² from
        max(2048, 19 (L + 1)) (L = ``sphere_degree(β)``: 2048 at β = 4); fused for batches of at most 64
        particles, pairwise otherwise on spheres and for every R^d model (every R^d model has
        compiled sums). The normalisations other than post-LN take the pairwise or quadrature sums of their average
        (spectral and fused compute post-LN's P_θA: refused), hardmax attention its own sums (quadrature).
    precision : {"double", "single"}
        "single" takes the field's exponentials in float32, its scores and sums in float64 (the pairwise kernel on
        spheres; "auto" then means "pairwise"): 1.1-1.2x faster than double at n = 4096, d = 2, 3 (under load),
        with the field's error up to :data:`meanfield.kernels.pairwise.SINGLE_PRECISION_ERROR` (1e-6 of max |X|
        for points in general position; 1.1e-7 measured) instead of round-off. Positions and time stepping stay
        float64.
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
    common_noise : CommonNoise, optional
        A random linear layer shared by every token (MATH.md §13, :mod:`meanfield.models.common_noise`): the
        Stratonovich term Σ_k P_x(Σ_k x) ∘ dW^k with the matrices and the seeded path of the object, by the split
        scheme of :mod:`particles.common_noise` (the maps x ↦ e^A x/|e^A x| on the path's grid, the drift's RK4
        steps between them). Tokens on S¹ and S^(d-1), post-LN or nGPT, constant weights, method "rk4"; the output
        times on the path's grid; a batch shares the one path. Every Σ_k = 0: today's run, bit for bit.

    Returns
    -------
    Trajectory

    Warns
    -----
    LongRunWarning
        Before a run of more than :data:`~meanfield.integrate.trackers.LONG_RUN_STEPS` RK4 steps: their number, h
        and why it is that small (the model's rate scale), the run time measured on its first steps
        (:func:`run_estimate`), and what to do.
    """
    plan = _plan(model, x0, t_eval, method, dt, rng, rtol=rtol, atol=atol, strategy=strategy, weights=weights,
                 precision=precision, reduce_span=reduce_span, span_coordinates=span_coordinates, observe=observe,
                 common_noise=common_noise)
    steps = plan.steps()
    if steps is not None and steps > LONG_RUN_STEPS:  # say so before minutes of silence, with the time measured
        warn_long_run(plan.estimate(steps), "particles.simulate", model, stacklevel=2)
    t_eval, B = plan.t_eval, plan.B
    frames = None
    if observe is None:  # the frames in one array of the run's outputs (one copy each; not a list, then np.stack)
        frames = _Frames(len(t_eval)) if B is None or span_coordinates else None
        outputs = OutputTracker() if frames is None else frames
    else:  # the observed state in the coordinates asked for: the span's, or lifted to R^d output by output
        lifted = observe if B is None or span_coordinates else (lambda y: observe(span.lift([y], B)[0]))
        outputs = _Observer(lifted)
    bar = ProgressTracker(t_eval[-1] - t_eval[0], enabled=checks.progress(progress),
                          lines="particles.simulate" if checks.progress_lines(progress) else None)
    integrator = plan.integrator([FiniteTracker(), outputs, bar, InterruptTracker()])
    integrator.run(t_eval[0], plan.x, t_eval)
    return Trajectory(
        t=t_eval.copy(),
        x=(np.stack(outputs.states) if frames is None else frames.frames()) if B is None or span_coordinates else
        span.lift(outputs.states, B, first=plan.given if observe is None else None),
        observed=None if observe is None else np.stack(outputs.values),
        nfev=integrator.nfev,
        nsteps=integrator.nsteps,
        method=method,
        strategy=plan.path,
        field_error_bound=plan.state["bound"],
        domain=plan.domain,
        weights=plan.w,
        noise=plan.noise,
        reduced_to=None if B is None else plan.n,
        basis=B if B is not None and span_coordinates else None,
        normalization=plan.norm,
        common_noise=plan.common,
    )


def run_estimate(model, x0, t_eval, method: str = "rk4", dt: float | None = None, rng=None, *,
                 strategy: str = "auto", weights=None, precision: str = "double", reduce_span: bool = True,
                 timing: bool = True, budget: float = 0.25, common_noise=None) -> RunEstimate:
    """What :func:`simulate` with these arguments will take, before it starts: its number of RK4 steps, the step h
    and why it is that (the `dt` given, or the default step of the model's rate scale), and, with ``timing``, the
    seconds a step takes, measured on the run's own first steps (:func:`meanfield.integrate.trackers.time_steps`:
    about 2·``budget`` seconds, plus two steps, on a copy of the state; the noise's increments from a copy of the
    generator). The adaptive methods choose their steps as they go: ``steps`` None, nothing timed.

    Parameters are those of :func:`simulate` (checked as it checks them); ``meanfield check`` asks it for each
    [particles] n of a study. :func:`simulate` itself warns (:class:`~meanfield.integrate.trackers.LongRunWarning`)
    from the same estimate where the steps exceed :data:`~meanfield.integrate.trackers.LONG_RUN_STEPS`.

    Returns
    -------
    RunEstimate
    """
    plan = _plan(model, x0, t_eval, method, dt, rng, rtol=1e-10, atol=1e-12, strategy=strategy, weights=weights,
                 precision=precision, reduce_span=reduce_span, span_coordinates=False, observe=None,
                 common_noise=common_noise)
    steps = plan.steps()
    if steps is None:
        return RunEstimate(method, None, None, f"adaptive {method!r}")
    return plan.estimate(steps, budget) if timing else RunEstimate(method, steps, plan.h, plan.why)


@dataclass
class _Plan:
    """A particle run, every argument checked and every choice made (:func:`_plan`), before any step: what
    :func:`simulate` runs and :func:`run_estimate` measures."""

    model: object
    norm: object
    domain: object
    method: str
    t_eval: np.ndarray
    x: np.ndarray
    given: np.ndarray
    B: np.ndarray | None
    w: np.ndarray
    n: int
    path: str
    h: float | None
    why: str
    noise: float
    rng: object
    state: dict
    rate: object
    rtol: float
    atol: float
    common: object = None

    def integrator(self, trackers, rng=None) -> Integrator:
        """The run's integrator with ``trackers`` (the noise's increments from ``rng``, default the run's own)."""
        rng = self.rng if rng is None else rng
        model, h, domain, noise = self.model, self.h, self.domain, self.noise
        problem = ParticleProblem(self.rate, domain, retract=self.path != "fused", model=model,
                                  unit_before=self.norm.unit_until)
        stepper = (lambda f, t, y, t_bound: FusedStepper(model, h, f, t, y, t_bound)) if self.path == "fused" else None
        if noise:
            stepper = lambda f, t, y, t_bound: SplittingStepper(f, t, y, t_bound, h, noise, domain, rng)  # noqa: E731
        if self.common is not None:
            common = self.common
            stepper = lambda f, t, y, t_bound: CommonNoiseStepper(f, t, y, t_bound, h, common, domain,  # noqa: E731
                                                                  noise, rng)
        # one adaptive stepper over the run with dense outputs, unless the rate jumps inside it (layers, Mix-LN's t_0):
        # then the steps land on the outputs and the jumps
        t_eval = self.t_eval
        jumps = bool(model.time_dependent) and len(model.breakpoints(t_eval[0], t_eval[-1])) > 0
        return Integrator(problem, self.method, dt=h, subdivide=True, dense=self.method != "rk4" and not jumps,
                          rtol=self.rtol, atol=self.atol, trackers=trackers, stepper=stepper)

    def steps(self) -> int | None:
        """The RK4 steps of the run: each stretch between output times (and the model's layer boundaries, where the
        steps land too) cut into the fewest equal steps <= h (:func:`~meanfield.integrate.equal_steps`); None for
        the adaptive methods."""
        if self.method != "rk4":
            return None
        if self.common is not None:  # one step per step of the common path (each cut into RK4 steps <= h)
            path = self.common.path
            return int(path.index(self.t_eval[-1]) - path.index(self.t_eval[0]))
        t = self.t_eval
        inner = self.model.breakpoints(t[0], t[-1]) if self.model.time_dependent else ()
        return step_count(np.concatenate([t, np.asarray(inner, dtype=float)]), self.h)

    def estimate(self, steps: int, budget: float = 0.25) -> RunEstimate:
        """:class:`RunEstimate` of ``steps`` steps, a step timed on the run's first steps (a copy of its state and of
        its generator: the run itself is unchanged, its field bound included)."""
        t0, bound = float(self.t_eval[0]), self.state["bound"]
        h = self.h if self.common is None else self.common.path.dt  # a common noise steps on its path's grid

        def run(k):
            rng = copy.deepcopy(self.rng) if self.noise else None
            self.integrator([], rng).run(t0, np.array(self.x, copy=True), np.array([t0, t0 + k * h]))

        try:
            with warnings.catch_warnings():  # what the first steps warn of, the run itself says
                warnings.simplefilter("ignore")
                seconds = time_steps(run, budget, most=steps)
        finally:
            self.state["bound"] = bound
        return RunEstimate(self.method, steps, h, self.why if self.common is None else
                           f"the common path's step {h:g} (each cut into RK4 steps <= {self.h:g}: {self.why})", seconds)


def _plan(model, x0, t_eval, method, dt, rng, *, rtol, atol, strategy, weights, precision, reduce_span,
          span_coordinates, observe, common_noise=None) -> _Plan:
    """Every check and choice of :func:`simulate` (its arguments of the same names), in its order, before any
    step."""
    model = as_model(model)  # a feed-forward block alone: a Transformer without attention
    heads(model)  # TypeError for anything but an attention model (or a Transformer)
    norm = normalization_of(model)  # where the tokens are normalised: the model's, read here once
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    noise = float(model.noise)
    if noise and rng is None:
        raise ValueError(f"`model` has noise = {noise:g}: give `rng` (a seed or a numpy Generator) for its Brownian "
                         "increments, so the run can be repeated.")
    if noise and method != "rk4":
        raise ValueError(f"noisy particles are advanced by the splitting scheme with fixed steps: method 'rk4', got "
                         f"{method!r}.")
    why = norm.noise_refusal() if noise else None
    if why is not None:  # Mix-LN's tokens change space at t_0
        raise ValueError(f"`model` has noise = {noise:g}: {why}.")
    rng = checks.generator(rng) if noise else rng
    common = _common_noise(common_noise, model, method)
    if strategy not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}, got {strategy!r}.")
    t_eval = checks.output_times(t_eval)
    start = x0 if isinstance(x0, Frame) and x0.grid is None else None  # a frame of points: its domain, its weights
    if start is not None:
        x0, given_weights = start.as_measure()
        if weights is None and not np.all(given_weights == 1.0 / given_weights.size):  # 1/n each: the default's paths
            weights = given_weights
    x = initial_points(x0, rng, domain_of(model, 3), norm.radial)  # R^d, tokens x = rθ, rows (s, x), unit vectors
    n, d = x.shape[-2], x.shape[-1]
    model = at_context(model, n)  # β_n = γ log n, ... for these n tokens (MATH.md §13): read here, once
    checks.matrices_act_on(model.dim, d, "the particles live in")
    first = model.at(t_eval[0])  # a callable's first value (its later ones must keep its size: Head.at)
    checks.matrices_act_on(first.dim, d, "the particles live in", at=t_eval[0])
    domain = domain_of(model, d) if start is None else _start_domain(start.domain, model, d)
    if common is not None:
        refused = common.refusal(domain, d)
        if refused is not None:
            raise ValueError(f"`common_noise`: {refused}.")
        common.path.index(t_eval, "t_eval")
    if norm.unit_until is not None and t_eval[0] < norm.unit_until:  # Mix-LN from its post-LN stretch: unit vectors
        x = SPHERE.retract(x)
    if dt is not None:
        if method != "rk4":
            raise ValueError(f"`dt` fixes the RK4 step; method {method!r} chooses its own.")
        dt = checks.positive(dt, "dt")
    rtol, atol = checks.positive(rtol, "rtol"), checks.positive(atol, "atol")

    if precision not in ("double", "single"):
        raise ValueError(f"`precision` must be 'double' or 'single', got {precision!r}.")
    if not isinstance(reduce_span, (bool, np.bool_)):
        raise TypeError(f"`reduce_span` must be a bool, got {reduce_span!r}.")
    if not isinstance(span_coordinates, (bool, np.bool_)):
        raise TypeError(f"`span_coordinates` must be a bool, got {span_coordinates!r}.")
    if observe is not None and not callable(observe):
        raise TypeError(f"`observe` must be a function of the state at an output, got {type(observe).__name__}.")
    if precision == "single":
        if kernels.single_precision_refusal(model) is not None or strategy not in ("auto", "pairwise"):
            raise ValueError(f"single precision runs the pairwise kernel on spheres; got strategy {strategy!r} for "
                             f"{model!r} in d = {d}.")
        strategy = "pairwise"
    w = checks.particle_weights(weights, x.shape[:-1])
    offered = particle_strategies(model, domain, n, d, method=method, batched=x.ndim == 3,
                                  weighted=weights is not None, noisy=noise > 0 or common is not None, weights=weights)
    path = strategies.resolve(strategy, offered, "particles")
    state = {"bound": 0.0}
    h, why = None, f"adaptive {method!r}"
    if method == "rk4":
        if dt is not None:
            h, why = dt, "the `dt` given"
        elif not norm.heads_field:
            scale, speedup = _speed_scale(model, t_eval), _variant_scale(first, x, w)
            h = 0.05 / max(scale * speedup, 1e-300)
            why = (f"the default step 0.05 / (rate scale × speed-up): the model's rate scale over the run is "
                   f"{scale:.3g} (meanfield.models.rate_scale: it grows with β) and normalization {norm.name!r} "
                   f"speeds the directions up by {speedup:.3g} at the start")
        else:
            scales = []

            def scale():
                scales.append(_speed_scale(model, t_eval))
                return scales[-1]

            h = domain.particle_step(scale)
            why = (f"the default step {h * scales[0]:.3g} / rate scale: the model's rate scale over the run is "
                   f"{scales[0]:.3g} (meanfield.models.rate_scale: it grows with β)" if scales else
                   f"the default step of particles on {domain!r}")
        if not h > 0:
            raise ValueError(f"no default step for {model!r}: its rate scale overflows (USA with a huge β); pass `dt`.")

    given, B = x, None
    if (reduce_span and domain.unit_vectors and path in ("fused", "pairwise", "quadrature")
            and span.refusal(model, n, d, method=method, noisy=noise > 0 or common is not None) is None):
        B = span.basis(x)  # (..., d, n): the run is in the coordinates x B, mapped back by Bᵀ at the end
        x, model = x @ B, span.in_dimension(model, n)

    rate = _velocity(model, domain, path, w, precision, state)
    return _Plan(model, norm, domain, method, t_eval, x, given, B, w, n, path, h, why, noise, rng, state, rate, rtol,
                 atol, common)


def _common_noise(common_noise, model, method):
    """The run's common noise (:mod:`meanfield.models.common_noise`), checked: None where there is none or every
    Σ_k = 0 (today's run); refused with a method other than "rk4" and with time-dependent weights."""
    if common_noise is None:
        return None
    if not isinstance(common_noise, CommonNoise):
        raise TypeError(f"`common_noise` must be a meanfield.models.common_noise.CommonNoise, got "
                        f"{type(common_noise).__name__}.")
    if common_noise.is_zero:
        return None
    if method != "rk4":
        raise ValueError(f"`common_noise`: tokens under a common noise are advanced by the split scheme on the path's "
                         f"grid with fixed steps: method 'rk4', got {method!r}.")
    if model.time_dependent:
        raise ValueError("`common_noise` with time-dependent weights is not implemented (the layer boundaries would "
                         "have to fall on the path's grid); give constant weights.")
    return common_noise


#: why the post-LN-only strategies refuse the other normalisations and hardmax attention
POST_ONLY = ("the {name} path computes post-LN's field P_θA of softmax attention (finite β); {what} moves its tokens "
             "by the average itself (strategies 'pairwise' and 'quadrature')")


def particle_strategies(model, domain, n: int, d: int, *, method: str, batched: bool, weighted: bool,
                        noisy: bool = False, weights=None) -> dict[str, str | None]:
    """The field strategies for the particles of ``model`` (name → None where it applies, else why not; best first).

    Post-LN attention with a finite β: :func:`meanfield.kernels.strategies.for_particles`. The other normalisations
    (docs/MATH.md §10) sum the heads' average A at the directions θ: the same list for their attention on the sphere
    of the directions, with the spectral sums and the fused RK4 — which compute P_θA — refused; hardmax attention
    (MATH.md §11) has its own sums only ("quadrature")."""
    if density_refusal(model) is None:
        return strategies.for_particles(model, domain, n, d, method=method, batched=batched, weighted=weighted,
                                        noisy=noisy, weights=weights)
    att = model.attention if model.has_blocks else model
    norm = normalization_of(model)
    what = f"{att!r}" if norm.heads_field else f"normalization {norm!r}"
    refused = {name: POST_ONLY.format(name=name, what=what) for name in ("spectral", "fused")}
    if not all(h.exp_kernel for h in heads(att)):  # hardmax: no compiled sums (a non-post variant: SA heads)
        return {"quadrature": None, "pairwise": f"no compiled sums for {att!r} (the compiled sums are softmax "
                "attention's)", **refused}
    sphere = unit_sphere(d)  # where the directions θ live, whose sums these are
    offered = strategies.for_particles(att, sphere, n, d, method=method, batched=batched, weighted=weighted,
                                       noisy=noisy, weights=weights)
    return {name: (refused[name] if name in refused else why) for name, why in offered.items()}


def _velocity(dynamics, domain, path: str, w, precision: str, state: dict):
    """The particles' rate y ↦ ẏ (t and the step's start ``layer_time`` for a time-dependent model): the model's
    velocity at the state y, by the resolved strategy ``path`` (:func:`velocity` states it)."""
    n, radial = w.shape[-1], normalization_of(dynamics).radial

    def rate(y, t=None, layer_time=None):
        # a time-dependent model's of the stage's time, in the layer of the step's start
        model = dynamics.at(t, layer_time) if t is not None else dynamics
        if not model.has_blocks:
            return attention_velocity(model, y)
        if radial or not model.normalization.heads_field:  # x = rθ moved by the normalisation's velocity of A(θ)
            return normalized_velocity(model, y)
        a = model.weights[0]  # a X_att + b Σ X_ff (the drift, at the retracted points on spheres)
        out = model.drift(domain.retract(y))
        return out + a * attention_velocity(model.attention, y) if model.attention is not None and a else out

    def normalized_velocity(model, y):
        r = np.linalg.norm(y, axis=-1, keepdims=True)
        if np.any(r == 0.0):
            raise FloatingPointError(f"a token reached the origin (r = 0) under normalization {model.normalization!r}: "
                                     "its direction is undefined; reduce `dt` or use an adaptive method.")
        theta = y / r
        A = kernels.average(model.attention, theta, w, theta, precision) if path == "pairwise" else \
            average(model.attention, theta, w, theta)
        return model.normalization.velocity(y, A)

    def attention_velocity(model, y):
        if path == "quadrature":
            y = domain.retract(y)  # F(y) = X(y/|y|) on spheres: the 0-homogeneous extension (y itself in R^d)
            return model.field(y, w, y)
        if path == "pairwise":
            y = domain.retract(y)
            return kernels.pairwise_field(model, y, w, y, precision)
        zonal, d = model.zonal, y.shape[-1]
        sums = domain.point_sums(d)
        if not sums.directions:  # else the sums take the directions y/|y| themselves: no retracted copy per stage
            y = domain.retract(y)
        spectral_field = sums.field
        flat = y.reshape(-1, n, d)
        out = []
        for b in range(flat.shape[0]):
            points = flat[b]  # one object as points and queries: the sums see they are the same without comparing
            v, bound = spectral_field(points, w.reshape(-1, n)[b], points, zonal.beta, model.normalized, zonal.c)
            out.append(v)
            state["bound"] = max(state["bound"], float(np.max(bound)))
        # one system: its field as it is (no copy of n × d into a batch array)
        return (out[0] if len(out) == 1 else np.stack(out)).reshape(y.shape)

    return rate


def velocity(model, x, t: float = 0.0, weights=None, strategy: str = "auto", precision: str = "double") -> np.ndarray:
    r"""The tokens' velocity ẋ_i at time t, as :func:`simulate` integrates it (its right-hand side).

    Post-LN (and any model that is not a normalised Transformer): X[μ^n](x_i), tangent to the sphere, or Γ in R^d.
    A Transformer's ``normalization`` (docs/MATH.md §10): the average A_i = Σ_j softmax_j(β⟨Qθ_i, Kθ_j⟩)Vθ_j at the
    directions θ = x/|x|, then pre-LN ẋ = A, peri-LN A/|A|, nGPT α P_θ A/|A|, Mix-LN post's or pre's by t.

    Parameters
    ----------
    model, weights, strategy, precision
        As for :func:`simulate` (the strategy resolved for these tokens; "fused" steps whole sequences and has no
        rate of its own: refused here).
    x : array_like, shape (n, d) or (batch, n, d)
        The tokens: unit vectors, non-zero vectors x = rθ (pre-, peri-, Mix-LN), points of R^d.
    t : float
        The time (time-dependent weights, Mix-LN's variant).

    Returns
    -------
    ndarray, shape of ``x``
    """
    model = as_model(model)
    heads(model)
    x = initial_points(x, None, domain_of(model, 3), normalization_of(model).radial)
    n, d = x.shape[-2], x.shape[-1]
    model = at_context(model, n)  # β_n for these n tokens (MATH.md §13)
    checks.matrices_act_on(model.dim, d, "the particles live in")
    if precision not in ("double", "single"):
        raise ValueError(f"`precision` must be 'double' or 'single', got {precision!r}.")
    domain = domain_of(model, d)
    w = checks.particle_weights(weights, x.shape[:-1])
    offered = particle_strategies(model, domain, n, d, method="rk4", batched=x.ndim == 3,
                                  weighted=weights is not None, weights=weights)
    offered["fused"] = "the fused path steps whole RK4 sequences in compiled code: it has no rate of its own"
    if strategy == "auto" and precision == "single":
        strategy = "pairwise"
    path = strategies.resolve(strategy, offered, "particles")
    rate = _velocity(model, domain, path, w, precision, {"bound": 0.0})
    t = checks.real(t, "t")
    return rate(x, t, t) if model.time_dependent else rate(x)


def _variant_scale(model, x, w) -> float:
    r"""The factor by which a normalisation's rates exceed the heads' at the start (docs/MATH.md §10): the
    variant's ``step_scale`` — θ̇ = P_θA/r (pre), P_θA/(r|A|) (peri), αP_θA/|A| (nGPT), so 1/min r,
    1/(min r · min|A|), α/min|A| (at least 1 for the radii: the default step is set at t_0, and the adaptive
    methods follow radii and |A| as they change)."""
    r = np.linalg.norm(x, axis=-1)
    inv_r = max(1.0, 1.0 / float(np.min(r)))

    def smallest_length():
        theta = x / r[..., None]
        return max(float(np.min(np.linalg.norm(average(model.attention, theta, w, theta), axis=-1))), 1e-300)

    return model.normalization.step_scale(inv_r, smallest_length)


class _Frames(OutputTracker):
    """The states at the output times written into one array (time first) as they come: one copy of each, where
    a list of copies then ``np.stack`` made two (a million particles: 16 MB a frame)."""

    def __init__(self, count: int):
        super().__init__()
        self.count, self._x = int(count), None

    def output(self, t, y):
        if self._x is None:
            self._x = np.empty((self.count,) + np.shape(y), dtype=np.result_type(y))
        self._x[len(self.times)] = y
        self.times.append(float(t))

    def frames(self) -> np.ndarray:
        """The frames written (all of them after a complete run)."""
        k = len(self.times)
        if self._x is None:
            return np.stack([])  # no output: numpy's error, as before
        return self._x if k == self.count else self._x[:k].copy()


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


def initial_points(x0, rng, domain, radial: bool = False):
    """``x0`` read as the tokens of ``domain`` (``Domain.check_particles``: rows (s, x) for causal attention, points
    of R^d, unit vectors on spheres — any d where ``domain`` is None —, normalised exactly), or a (density, n[,
    batch]) tuple sampled with ``rng``; non-zero points where ``radial`` (pre-, peri-, Mix-LN tokens x = rθ, r > 0)."""
    if isinstance(x0, tuple) and len(x0) in (2, 3) and isinstance(x0[0], Frame) and x0[0].grid is not None:
        return sample(x0[0], x0[1], rng=rng, batch=x0[2] if len(x0) == 3 else None)
    if is_sparse(x0):
        raise ValueError(f"`x0` is a sparse {x0.shape[0]}×{x0.shape[1]} array: the particles carry every token as a "
                         "dense row; sparse tokens (keys) go through one layer at a few of them, "
                         "meanfield.solvers.depth.layer_map(model, x, weights, h, at=[...]).")
    x = (SPHERE if domain is None else domain).check_particles(x0, "x0")
    if radial:
        if not SPHERE.has_dim(x.shape[-1]):  # where the directions θ = x/|x| live: the circle or S^(d-1)
            raise ValueError(f"tokens x = rθ need θ on S^(d-1), d >= 2; `x0` has shape {x.shape}.")
        norms_of(x)  # ValueError naming a token of radius 0
    return x


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
