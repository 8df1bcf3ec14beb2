r"""Time integration of the continuity equation ∂_t μ + div(μ X[μ]) = 0: one function over the representations.

``solve`` follows ``scipy.integrate.solve_ivp``: one function, a table of methods (:mod:`meanfield.integrate`),
a frozen result object with a status. It checks every argument once, asks the model and the initial measure's
domain which chain of representations applies (:mod:`meanfield.representations`: the grid, adaptive Lagrangian
panels, fixed Lagrangian nodes), refuses an argument that no representation of the chain takes, and runs the chain
on the one :class:`~meanfield.integrate.Integrator`: where a representation can no longer resolve the solution
at its stated accuracy, the next goes on from its last state (each hand-over recorded in the
:class:`~meanfield.representations.Solution`). ``prepare`` is that checking and planning alone, which ``solve``
runs first: whatever it accepts reaches the integrator (``meanfield check`` asks it what ``meanfield run`` will).

Methods
-------
"rk4"     classical fourth-order Runge–Kutta, fixed step ``dt`` or, on grids, a CFL step
          (:mod:`meanfield.representations.grid`).
"ssprk3"  the strong-stability-preserving third-order scheme of Shu & Osher.
"rk45", "dop853"
          adaptive embedded pairs from ``scipy.integrate`` (error control by ``rtol``/``atol``), on grids with the
          step also capped by the CFL bound.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..core import checks
from ..density import Frame
from ..integrate import METHODS, Status, step_count
from ..integrate.trackers import LONG_RUN_STEPS, RunEstimate, time_steps, warn_long_run
from ..models import as_model, context_refusal, heads, repulsive
from ..integrate.monitor import ResolutionMonitor
from ..representations import Hooks, Settings, Solution, check_options, plan, run_chain
from ..representations.common_noise import CommonNoiseRepresentation, check_common_noise
from ..kernels.strategies import STRATEGIES

__all__ = ["solve", "prepare", "Prepared", "Solution", "Status", "Interrupted", "run_estimate"]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`solve`; ``solution`` holds the output times reached before it.

    A ``KeyboardInterrupt``, so code that does not catch it stops as usual (Ctrl-C is the user's, not a result).
    """

    def __init__(self, solution):
        super().__init__(solution.message)
        self.solution = solution


def _choice(choices, name):
    def check(v):
        if v not in choices:
            raise ValueError(f"`{name}` must be one of {choices}, got {v!r}.")
        return v
    return check


def _monitor(v):
    if not isinstance(v, ResolutionMonitor):
        raise TypeError(f"`monitor` must be a meanfield.integrate.monitor.ResolutionMonitor, got {type(v).__name__}.")
    return v


#: The representation of densities driven by a common noise.
COMMON_NOISE = CommonNoiseRepresentation.name

#: Each option of :func:`solve` and its one check.
_OPTIONS = {
    "method": _choice(METHODS, "method"), "dt": lambda v: checks.positive(v, "dt"),
    "cfl": lambda v: checks.positive(v, "cfl"), "refine": lambda v: bool(v),
    "max_n": lambda v: checks.count(v, "max_n"), "rtol": lambda v: checks.positive(v, "rtol"),
    "atol": lambda v: checks.positive(v, "atol"), "monitor": _monitor, "strategy": _choice(STRATEGIES, "strategy"),
    "lagrangian_tol": lambda v: checks.positive(v, "lagrangian_tol"),
    "max_points": lambda v: checks.count(v, "max_points"), "common_noise": check_common_noise,
}


def solve(model, mu0, t_span, t_eval=None, method: str | None = None, dt: float | None = None,
          progress: bool | None = None,
          *, representation=None, strategy: str | None = None, refine: bool | None = None, max_n: int | None = None,
          cfl: float | None = None, rtol: float | None = None, atol: float | None = None,
          monitor: ResolutionMonitor | None = None, lagrangian_tol: float | None = None,
          max_points: int | None = None, common_noise=None, trackers=(), events=(),
          raise_on_failure: bool = False) -> Solution:
    r"""Solve the continuity equation ∂_t μ + div(μ X[μ]) = 0 (MATH.md §2, §5).

    Parameters
    ----------
    model : SelfAttention, MultiHeadAttention, or an R^d model (Softmax, L2, ...)
        Defines X[μ] (MATH.md §2, §5).
    mu0 : Density or LagrangianMeasure
        Initial density on a ``CircleGrid``, ``SphereGrid``, ``ZonalGrid`` (zonal densities on S^{d−1}, any d),
        ``SequenceGrid`` ([0, 1] × S¹, causal attention) or ``EuclideanGrid`` (finite volumes; the model must be
        an R^d one), or a Lagrangian measure (e.g. :func:`meanfield.lagrangian.start_gaussian`, or
        :func:`meanfield.lagrangian.start` of a density: its nodes), advanced by fixed nodes. On the product domains
        (:mod:`meanfield.domains.products`), each advanced by its one representation: a density on a
        :class:`~meanfield.solvers.cylinder.CylinderGrid` (pre/peri-LN tokens on S¹ × (0, ∞), the "cylinder"), or a
        :class:`~meanfield.solvers.frequencies.FrequencyDensity` (:func:`~meanfield.solvers.frequencies.frequency_density`: one
        circle density per node of a frequency law, the "frequencies"; ``refine`` there hands a node that collapses
        over to atoms).
    t_span : (float, float)
        Start and end times, t1 > t0 (t0 the measure's own time for a LagrangianMeasure).
    t_eval : array_like, optional
        Increasing output times within ``t_span`` (default: the two ends).
    method : {"rk4", "ssprk3", "rk45", "dop853"}, optional
        The time integrator of the chain's first representation: on grids default "rk4" on the circle and S²,
        "ssprk3" for finite volumes in R^d (positivity preserving); for nodes "dop853" (fixed steps need ``dt``).
        The panels, and representations after a hand-over, use their adaptive default.
    dt : float, optional
        Fixed step of "rk4"/"ssprk3" (the last step before an output time is shortened to land on it). Default on
        grids: the CFL step (:mod:`meanfield.representations.grid`).
    progress : bool or None
        A tqdm progress bar over simulated time, across hand-overs. Default None: on where standard error is a
        terminal (``sys.stderr.isatty()``); elsewhere (pipes, batch jobs' logs) a progress line after 30 s and every
        60 s after it (:class:`~meanfield.integrate.ProgressTracker`; through the "meanfield.progress" logger where
        logging is configured), none within :func:`meanfield.core.checks.quiet`. False: nothing.
    representation : str or sequence of str, optional
        The chain (:mod:`meanfield.representations.chain`): default "auto", grid → panels → nodes where the
        panels apply (zonal models on the circle and S²), the grid alone elsewhere; "grid", "lagrangian"
        (panels → nodes, or nodes), "panels", "nodes", or a sequence of those names.
    strategy : {"auto", "quadrature", "pairwise", "spectral", "separable", "moments"}, optional
        Field strategy (:mod:`meanfield.kernels.strategies`) for each representation that offers it (the others choose
        their own); "auto" (default) picks the fastest that applies.
    refine : bool, optional
        Grid: on loss of resolution double the resolution (n on the circle, lmax on S²) by zero-padding the last
        resolved state (exact) and redo the step, up to ``max_n`` (default True on the circle and S²; finite-volume
        grids are not refined).
    max_n : int, optional
        Grid: the cap of refinement on n (circle, default 16384) or lmax (S², default 256). Refinement doubles the
        resolution, so it reaches the largest n·2^k (lmax·2^k) <= ``max_n``, which need not be ``max_n`` itself:
        from lmax 24, ``max_n=128`` stops at lmax 96 (pass 96, or 192, to say what is reached).
    cfl : float, optional
        Grid: safety factor of the CFL step, default 0.1 for fixed steps (an accuracy choice), 0.8 for the
        adaptive methods (a stability cap), 0.4 for finite volumes (SSP-RK3 keeps ρ >= 0 up to 0.5).
    rtol, atol : float, optional
        Tolerances of the adaptive methods and of the panels' steps (default 1e-10, 1e-12).
    monitor : ResolutionMonitor, optional
        Grid: thresholds of the resolution checks (the cylinder's ``edge_tol``, the frequencies' ``omega_tol``
        too). In a box of R^d (``EuclideanGrid``, which mass may leave through its boundary): ``outflow_tol``
        (default 1e-6 of the initial mass) warns, ``outflow_stop`` (default 1e-4) stops the run with status FAILED,
        the message naming the mass lost and the time, the hint the fix — a larger box (the grid's ``bounds``).
    lagrangian_tol : float, optional
        Panels: the bound on each panel's contribution to the error of the moments (default 1e-14 on the circle,
        1e-10 on S²); they stop rather than let the moments err by more than 1e3 × it.
    max_points : int, optional
        Panels: the most points before they stop (default 2^20 on the circle, 2^16 on S², where panels refine
        without end along the separatrices between forming clusters and the chain goes on with fixed nodes).
    trackers : sequence, optional
        Objects with any of the hooks ``initialize(t, frame)``, ``handle(t, frame, h)`` (every accepted step),
        ``output(t, frame)`` and ``finalize(t, frame, status)``, where ``frame`` is the solution at t as a Density
        or a LagrangianMeasure.
    events : sequence of callables, optional
        ``g(t, frame) -> float`` as in ``scipy.integrate.solve_ivp``: sign changes between accepted steps are
        recorded in ``Solution.t_events`` (secant roots); attributes ``terminal`` (stop there, status EVENT) and
        ``direction`` (or wrap in :class:`meanfield.representations.Event`).
    common_noise : CommonNoise, optional
        A random linear layer shared by every token, Σ_k P_x(Σ_k x) ∘ dW^k on a seeded common path
        (:class:`meanfield.models.common_noise.CommonNoise`, MATH.md §13): one realisation of the stochastic
        continuity equation, by the "common-noise" representation (:mod:`meanfield.representations.common_noise`;
        circle and S² densities, fixed steps, no refinement or hand-over; ``t_span`` and ``t_eval`` on the path's
        grid). Every Σ_k = 0 runs today's chain, bit for bit; ``trackers`` and ``events`` are not taken with it.
    raise_on_failure : bool
        Raise where the run ends early (``Solution.raise_for_status``) instead of returning the solution with
        its status.

    Returns
    -------
    Solution
        With ``status`` SUCCESS, EVENT, RESOLUTION_LOST or FAILED and what was computed up to ``t_reached``;
        FAILED also where more than the monitor's ``outflow_stop`` of the mass has left a box in R^d (the density
        in the box is then no longer the solution: ``Solution.outflow``, ``message`` and ``hint`` say how much,
        when, and to enlarge the box).

    Warns
    -----
    RuntimeWarning
        In a box of R^d, once the mass that left it exceeds the monitor's ``outflow_tol`` (once per run; it points
        at the line that called ``solve``).
    LongRunWarning
        With a fixed ``dt`` whose steps exceed :data:`~meanfield.integrate.trackers.LONG_RUN_STEPS`: the count,
        the step and the run time measured on the first steps (:func:`run_estimate`), before the run starts.

    Raises
    ------
    ResolutionError
        The initial density is not resolved on its grid (bad input); with ``raise_on_failure``, a lost resolution.
    Interrupted
        On Ctrl-C (or SIGTERM, where no handler of the application's is set); its ``solution`` holds the output
        times reached.
    """
    p = prepare(model, mu0, t_span, t_eval, method, dt, representation=representation, strategy=strategy,
                refine=refine, max_n=max_n, cfl=cfl, rtol=rtol, atol=atol, monitor=monitor,
                lagrangian_tol=lagrangian_tol, max_points=max_points, common_noise=common_noise)
    if p.settings.common_noise is not None and (tuple(trackers) or tuple(events)):
        raise ValueError("`trackers` and `events` are not taken with `common_noise` (its steps are the path's and "
                         "the noise maps', outside the integrator that runs them).")
    steps = _fixed_steps(p)
    if steps is not None and steps > LONG_RUN_STEPS:  # say so before minutes of silence, with the time measured
        warn_long_run(run_estimate(p), "solve", p.model, stacklevel=2)
    hooks = Hooks(trackers, events, checks.progress(progress), p.t1 - p.t0)
    if checks.progress_lines(progress):  # "auto" progress where no bar shows: lines in the log (Hooks makes the bar)
        hooks.progress.lines = "solve"
    solution = run_chain(p.chain, p.model, p.mu0, p.t0, p.t1, p.t_eval, p.settings, hooks)
    if solution.status is Status.INTERRUPTED:
        raise Interrupted(solution)
    return solution.raise_for_status() if raise_on_failure else solution


@dataclass(frozen=True)
class Prepared:
    """What :func:`solve` runs, every argument checked (:func:`prepare`).

    Attributes
    ----------
    model : the model as the representations take it (a feed-forward block alone made a Transformer)
    mu0 : Density or LagrangianMeasure
    t0, t1 : float
        The interval.
    t_eval : ndarray
        The output times, checked.
    settings : Settings
        The options given, each checked once.
    chain : list of Representation
        The representations in the order they will run, each checked to apply.
    """

    model: object
    mu0: object
    t0: float
    t1: float
    t_eval: np.ndarray
    settings: Settings
    chain: list

    @property
    def representations(self) -> tuple[str, ...]:
        """The chain's names, e.g. ("grid", "panels", "nodes")."""
        return tuple(r.name for r in self.chain)


def prepare(model, mu0, t_span, t_eval=None, method: str | None = None, dt: float | None = None,
            *, representation=None, strategy: str | None = None, refine: bool | None = None,
            max_n: int | None = None, cfl: float | None = None, rtol: float | None = None, atol: float | None = None,
            monitor: ResolutionMonitor | None = None, lagrangian_tol: float | None = None,
            max_points: int | None = None, common_noise=None) -> Prepared:
    """Everything :func:`solve` asks before any work, and nothing more: the model, the initial measure and its
    domain, the times, each option, the chain of representations (planned, each member checked to apply), the
    options none of them takes, and what the first one cannot honour (e.g. a method without an integrating-factor
    form for the noise). :func:`solve` calls it first; a caller that wants to know whether a run will start without
    starting it (``meanfield check``) calls it too, so the two can never disagree.

    Parameters are those of :func:`solve` of the same names.

    Returns
    -------
    Prepared

    Raises
    ------
    ValueError, TypeError
        Naming the argument and the value, as :func:`solve` would.
    """
    model = as_model(model)  # a feed-forward block alone: a Transformer without attention
    heads(model)  # TypeError for anything but an attention model (or a Transformer)
    why = context_refusal(model)  # β_n = γ log n: a density has no n
    if why is not None:
        raise ValueError(f"`model` {model!r}: {why}.")
    if not isinstance(mu0, Frame) or (mu0.grid is None and not mu0.lagrangian):  # the protocol: a grid or Lagrangian
        raise TypeError(f"`mu0` must be a Density or a LagrangianMeasure, got {type(mu0).__name__}.")
    mu0.domain.check_model(model, mu0)
    if repulsive(model) and mu0.domain.repulsion_refusal is not None:  # β < 0: the circle's grid only
        raise ValueError(f"`model` {model!r} on the {mu0.domain.description}: {mu0.domain.repulsion_refusal}.")
    t0, t1, t_eval = checks.time_span(t_span, t_eval)
    if mu0.lagrangian and t0 != mu0.t:
        raise ValueError(f"`t_span` must start at the measure's time t = {mu0.t:g}, got {t0:g}.")
    options = dict(method=method, dt=dt, cfl=cfl, refine=refine, max_n=max_n, rtol=rtol, atol=atol, monitor=monitor,
                   strategy=strategy, lagrangian_tol=lagrangian_tol, max_points=max_points, common_noise=common_noise)
    given = {k: _OPTIONS[k](v) for k, v in options.items() if v is not None}
    if "common_noise" in given and given["common_noise"].is_zero:  # every Σ_k = 0: today's run, bit for bit
        del given["common_noise"]
    settings = Settings(**given, given=frozenset(given))
    if settings.common_noise is not None:  # the one representation that moves a density by the common path
        if representation not in (None, "auto", "grid", COMMON_NOISE, (COMMON_NOISE,)):
            raise ValueError(f"`representation` {representation!r}: a density driven by `common_noise` is advanced "
                             f"by the {COMMON_NOISE!r} representation alone (pass it, 'grid', 'auto' or None).")
        representation = COMMON_NOISE
    chain = plan(representation, model, mu0, settings.strategy)
    check_options(chain, given, model, mu0)
    chain[0].check(settings, model, mu0, t0, first=True)
    return Prepared(model, mu0, t0, t1, t_eval, settings, chain)


def _fixed_steps(p: Prepared) -> int | None:
    """The steps of the chain's first representation where they are known before the run: a fixed ``dt`` (its
    fixed-step method: "rk4", "ssprk3"), each stretch between output times (and the model's layer boundaries) in
    steps of dt, the last shortened — to the end, where no hand-over comes first; None where the steps follow the
    solution (a CFL step, an adaptive method)."""
    dt = p.settings.dt
    if dt is None:
        return None
    inner = p.model.breakpoints(p.t0, p.t1) if getattr(p.model, "time_dependent", False) else ()
    return step_count(np.concatenate([[p.t0, p.t1], p.t_eval, np.asarray(inner, dtype=float)]), dt)


def run_estimate(prepared: Prepared, timing: bool = True, budget: float = 0.25) -> RunEstimate:
    """What :func:`solve` of ``prepared`` (:func:`prepare`) will take, before it starts: the number of steps where
    the step is fixed and known (a given ``dt``), and, with ``timing``, the seconds a step of the chain's first
    representation takes, measured by running it over its first steps from the initial measure
    (:func:`meanfield.integrate.trackers.time_steps`: about 2·``budget`` seconds, plus two steps; each run a
    throwaway, its warnings silenced). Where the steps follow the solution (the CFL step, the adaptive methods, the
    panels) ``steps`` is None and the time measured is of the first steps, each landed on an output time a
    millionth of the interval apart: a step's cost at the start, not the run's (the count is not known in advance,
    and resolution refinement or a hand-over changes the cost). ``meanfield check`` prints it.

    Returns
    -------
    RunEstimate
    """
    p = prepared
    steps = _fixed_steps(p)
    first = p.chain[0].name
    if steps is None:
        h, why = None, f"the {first}'s step follows the solution"
        gap = (p.t1 - p.t0) * 1e-6  # shorter than the steps the run chooses: a step or so to each output
    else:
        h, why, gap = p.settings.dt, "the `dt` given", p.settings.dt
    method = [p.settings.method or p.mu0.domain.default_method]  # the domain's, where not given (the run's, below)
    if not timing:
        return RunEstimate(method[0], steps, h, why)

    def run(k):
        t_eval = p.t0 + gap * np.arange(k + 1)
        solution = run_chain(p.chain[:1], p.model, p.mu0, p.t0, float(t_eval[-1]), t_eval, p.settings, Hooks())
        if solution.status is Status.INTERRUPTED:
            raise KeyboardInterrupt(solution.message)
        method[0] = solution.method
        return solution.nsteps

    with warnings.catch_warnings():  # what the first steps warn of, the run itself says
        warnings.simplefilter("ignore")
        seconds = time_steps(run, budget, most=64 if steps is None else steps)
    return RunEstimate(method[0], steps, h, why, seconds)
