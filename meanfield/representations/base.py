r"""What every representation shares: the protocol, its settings, the part of a run it returns, the solution.

A *representation* is a way to hold the solution μ_t of ∂_t μ + div(μ X[μ]) = 0 that is advanced as a
:class:`~meanfield.integrate.Problem` on the one :class:`~meanfield.integrate.Integrator`: a grid density
(:mod:`.grid`), adaptive Lagrangian panels or fixed Lagrangian nodes (:mod:`.lagrangian`). Each states what
it can of its accuracy and stops (``StopIntegration``) where it can no longer keep it; :func:`.chain.run_chain`
then hands its last state over to the next representation of the chain, and gathers the parts into one
:class:`Solution`.

Users' trackers and events see *frames* (:class:`meanfield.density.Frame`): the solution at a time as a
:class:`~meanfield.Density` (grid) or a :class:`~meanfield.lagrangian.LagrangianMeasure` (panels, nodes), whatever
representation holds it; :meth:`Solution.frame` reads the one at an output.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..core import checks
from ..integrate import InterruptTracker, ProgressTracker, Status, StopIntegration, Tracker
from ..integrate.monitor import IntegrationError, ResolutionError, ResolutionMonitor

__all__ = ["Representation", "Settings", "Part", "Handover", "Solution", "Hooks", "Event", "own_domain_refusal",
           "Ending", "run_to_end"]


@dataclass(frozen=True)
class Settings:
    """The options of :func:`meanfield.solve`, checked once; each representation reads those it takes
    (``Representation.options``). ``method`` and ``dt`` belong to the chain's first representation."""

    method: str | None = None
    dt: float | None = None
    cfl: float | None = None
    refine: bool | None = None
    max_n: int | None = None
    rtol: float = 1e-10
    atol: float = 1e-12
    monitor: ResolutionMonitor = field(default_factory=ResolutionMonitor)
    strategy: str = "auto"
    lagrangian_tol: float | None = None
    max_points: int | None = None
    common_noise: object = None  # a CommonNoise (meanfield.models.common_noise): the "common-noise" representation
    given: frozenset = frozenset()  # the options the caller gave: a representation chooses its own default for the rest


@dataclass(frozen=True)
class Handover:
    """One hand-over of a chain: at ``t`` the representation ``source`` stopped for ``reason`` and ``target`` went on
    from its last state; ``accuracy`` is what ``target`` can state about its own error."""

    t: float
    source: str
    target: str
    reason: str
    accuracy: str


@dataclass
class Part:
    """What one representation computed in a chain (its frames at the output times ``times``, histories, how it
    ended).

    ``last`` is the state at ``t_reached`` (a frame), handed to the next representation or kept as the final frame
    where the chain ends there."""

    name: str
    times: list
    frames: list
    status: Status
    message: str
    t_reached: float
    last: object
    method: str
    strategy: str
    nfev: int = 0
    nsteps: int = 0
    t_steps: list = field(default_factory=list)
    mass_steps: list = field(default_factory=list)
    energy_steps: list = field(default_factory=list)
    refinements: list = field(default_factory=list)
    hint: str | None = None
    outflow: float = 0.0
    diagnostics: dict = field(default_factory=dict)


class Event:
    """A function g(t, frame) whose sign changes mark an event (``solve(events=...)``, as in ``solve_ivp``).

    Wraps any callable; attributes ``terminal`` (stop the run at the first occurrence: status EVENT) and
    ``direction`` (> 0: only rising crossings, < 0: only falling, 0: both) are read from the callable where it has
    them (scipy's convention), else the arguments.
    """

    def __init__(self, g, terminal: bool = False, direction: float = 0.0):
        if not callable(g):
            raise TypeError(f"`events` must hold callables g(t, frame), got {g!r}.")
        self.g = g
        self.terminal = bool(getattr(g, "terminal", terminal))
        self.direction = float(getattr(g, "direction", direction))
        self.name = getattr(g, "__name__", repr(g))


class _FrameTrackers(Tracker):
    """The users' trackers and events of one part: each accepted step and output time as a frame.

    Events are located between accepted steps: at a sign change of g between steps (t_a, t_b) the event time is
    the secant root t_a + (t_b − t_a) g_a/(g_a − g_b); a terminal one ends the run after the step (its state is the
    last frame)."""

    def __init__(self, hooks: "Hooks", frame):
        self.hooks, self.frame = hooks, frame

    def initialize(self, t, y):
        h = self.hooks
        if not h.started:
            f = self.frame(t, y)
            for tr in h.hooks("initialize"):
                tr(t, f)
            h.g = [float(e.g(t, f)) for e in h.events]
            h.t_g, h.started = t, True

    def handle(self, t, y, h_step):
        h = self.hooks
        if not (h.trackers or h.events):
            return
        f = self.frame(t, y)
        for tr in h.hooks("handle"):
            tr(t, f, h_step)
        stop = None
        for k, e in enumerate(h.events):
            g_new = float(e.g(t, f))
            g_old = h.g[k]
            crossed = (g_old < 0 <= g_new and e.direction >= 0) or (g_old > 0 >= g_new and e.direction <= 0)
            if crossed and g_old != g_new:
                t_event = h.t_g + (t - h.t_g) * g_old / (g_old - g_new)
                h.t_events[k].append(t_event)
                if e.terminal and stop is None:
                    stop = f"the terminal event {e.name} occurred at t ≈ {t_event:.6g}"
            h.g[k] = g_new
        h.t_g = t
        if stop is not None:
            raise StopIntegration(t, y, stop, status=Status.EVENT)

    def output(self, t, y):
        hooks = self.hooks.hooks("output")
        if hooks:
            f = self.frame(t, y)
            for tr in hooks:
                tr(t, f)


class Hooks:
    """What the parts of one chain share: the users' trackers and events, one progress bar over physical time."""

    def __init__(self, trackers=(), events=(), progress: bool | None = False, total: float = 1.0):
        self.trackers = list(trackers)
        for tr in self.trackers:
            if not any(callable(getattr(tr, hook, None)) for hook in ("initialize", "handle", "output", "finalize")):
                raise TypeError(f"`trackers` must hold objects with tracker hooks (initialize, handle, output, "
                                f"finalize; see meanfield.integrate.Tracker), got {tr!r}.")
        self.events = [e if isinstance(e, Event) else Event(e) for e in events]
        self.t_events = [[] for _ in self.events]
        self.g, self.t_g, self.started = [], None, False
        # None: on where standard error is a terminal (meanfield.core.checks.progress)
        self.progress = ProgressTracker(total, enabled=checks.progress(progress), keep_open=True)

    def hooks(self, name: str) -> list:
        """The users' trackers' bound ``name`` hooks, where they have one."""
        return [getattr(tr, name) for tr in self.trackers if callable(getattr(tr, name, None))]

    def for_part(self, frame) -> list[Tracker]:
        """The trackers a part's integrator runs besides its own: the users' (on frames ``frame(t, y)``), the bar,
        the SIGTERM handler."""
        return [_FrameTrackers(self, frame), self.progress, InterruptTracker()]

    def finish(self, t, last, status) -> None:
        for finalize in self.hooks("finalize"):
            finalize(t, last, status)
        self.progress.close()


class Representation(abc.ABC):
    """A representation of the solution on the integrator (module docstring).

    Attributes
    ----------
    name : str
        "grid", "panels" or "nodes"; the product domains' "cylinder", "zonal-cylinder", "frequencies", "rotations"
        (registered from their modules, :func:`meanfield.representations.chain.register`).
    domain_words : str
        The domain it advances, in words (its refusals name it).
    options : frozenset of str
        The :func:`meanfield.solve` keywords it reads.
    accuracy : str
        What it can state of its error, for the hand-over record.
    """

    name: str
    options: frozenset
    accuracy: str

    @abc.abstractmethod
    def refusal(self, model, domain, start=None) -> str | None:
        """None if it advances ``model`` on ``domain`` (from ``start``, where given), else why not."""

    def check(self, settings: Settings, model, start, t0: float, first: bool) -> None:
        """Refuse, before any work, settings it cannot honour for ``model`` from ``start`` at ``t0`` (nothing by
        default): everything its :meth:`run` would refuse before its integrator's first step (``first``: it starts the
        chain, so ``settings.method``/``dt`` are its own)."""

    @abc.abstractmethod
    def run(self, model, start, t0: float, t1: float, t_eval, settings: Settings, hooks: Hooks,
            first: bool) -> Part:
        """Advance from ``start`` (a frame at ``t0``) through the outputs ``t_eval`` to ``t1`` (``first``: it starts
        the chain, so ``settings.method``/``dt`` are its own)."""


@dataclass(frozen=True)
class Solution:
    """Result of :func:`meanfield.solve`, whatever representations made it. Time is the first axis of every history.

    Attributes
    ----------
    t : ndarray, shape (k,)
        The times of the frames: the output times reached, and where the run stopped early (a lost resolution,
        a failure or a terminal event), the time it stopped.
    frames : tuple
        The frames (:class:`meanfield.density.Frame`, each carrying its time ``t[k]``): a :class:`~meanfield.Density`
        (grid; grids may differ after refinement) or a :class:`~meanfield.lagrangian.LagrangianMeasure` (panels,
        nodes) at each time. Read the state at output k as ``frame(k)``; ``densities`` is the same tuple under its
        older name.
    mass : ndarray, shape (k,)
        The mass of each frame.
    energy : ndarray, shape (k,) or None
        E_β of each frame (½|∫x dμ|² at β = 0) for zonal models, else None (also None past β ≈ 709 where E_β
        overflows; monotonicity is still monitored on e^{-β}E_β).
    t_steps, mass_steps, energy_steps : ndarray
        The same at every accepted step of the grid (energy_steps None as above).
    refinements : tuple of (t, n_old, n_new)
        Grid refinements performed.
    nfev, nsteps : int
        Right-hand-side evaluations and accepted steps, all representations together.
    status : Status
        SUCCESS, EVENT, RESOLUTION_LOST (the last representation of the chain could not go on at its stated
        accuracy), FAILED or INTERRUPTED.
    message : str
        How the run ended, with every hand-over.
    method, strategy : str
        The time integrator and the field strategy (:mod:`meanfield.kernels.strategies`) of the first representation.
    representation : tuple of str
        The representation that made each frame: "grid", "panels" or "nodes" (on the product domains "cylinder",
        "zonal-cylinder", "frequencies" or "rotations", their only one).
    handovers : tuple of Handover
        Each hand-over: time, from, to, why, and what the new representation can state of its accuracy.
    t_events : tuple of ndarray
        The times of each event of ``events`` (secant roots between accepted steps).
    t_reached : float
        The time the solution reached (``t_span[1]`` on success).
    t_span : (float, float)
        The interval asked for.
    hint : str or None
        What to do where the run stopped early.
    outflow : float
        The mass that left the domain (a box in R^d, whose finite volumes let it out through the edges; 0 on the
        circle and S², which conserve it). Only an outflow above the monitor's ``outflow_tol`` (relative, default
        1e-6) is also warned about (``RuntimeWarning``).
    diagnostics : dict
        What a representation measured of its own run, by name (the last part's where several report one): the
        cylinder's and the zonal cylinder's ``mass_drift``, ``min_step`` and, where mass reached their walls,
        ``edge`` = (side, mass) (:mod:`meanfield.representations.radial`); the frequencies' ``max_tail``,
        ``omega_error`` and ``handovers`` (the product domains' representations, registered from
        :mod:`meanfield.solvers.cylinder`, :mod:`meanfield.solvers.zonal_cylinder` and :mod:`meanfield.solvers.frequencies`).
    """

    t: np.ndarray
    frames: tuple
    mass: np.ndarray
    energy: np.ndarray | None
    t_steps: np.ndarray
    mass_steps: np.ndarray
    energy_steps: np.ndarray | None
    refinements: tuple
    nfev: int
    nsteps: int
    status: Status
    message: str
    method: str
    strategy: str
    representation: tuple = ()
    handovers: tuple = ()
    t_events: tuple = ()
    t_reached: float = float("nan")
    t_span: tuple = (float("nan"), float("nan"))
    hint: str | None = None
    outflow: float = 0.0
    diagnostics: dict = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.status is Status.SUCCESS

    def __repr__(self) -> str:
        """A short summary (a few hundred characters, whatever the run's length): status, message, the time span and
        the frames, the representations, the scalar diagnostics; the arrays by dtype and shape only (they are the
        attributes: ``sol.t``, ``sol.mass``, ``sol.frames``)."""
        def number(v):  # a scalar as a number; anything else (a tuple, None, complex) as its own repr
            try:
                return f"{float(v):.6g}" if np.ndim(v) == 0 and np.isrealobj(v) else repr(v)
            except (TypeError, ValueError):
                return repr(v)

        def array(name):
            a = getattr(self, name)
            return None if a is None else f"{name} {np.asarray(a).dtype} {np.shape(a)}"

        counts: dict = {}
        for r in self.representation:
            counts[r] = counts.get(r, 0) + 1
        message = self.message if len(self.message) <= 300 else self.message[:299] + "…"
        rows = [("status", self.status.name), ("message", repr(message)),
                ("t", f"[{number(self.t_span[0])}, {number(self.t_span[1])}], reached {number(self.t_reached)}; "
                      f"{len(self.t)} frames"),
                ("representation", ", ".join(f"{k} ({v} frames)" for k, v in counts.items()) or "none"),
                ("method", f"{self.method!r}, strategy {self.strategy!r}; {self.nsteps} steps, {self.nfev} "
                           "evaluations")]
        if len(self.mass):
            rows.append(("mass", f"{float(self.mass[0]):.12g} -> {float(self.mass[-1]):.12g}"
                                  + (f", outflow {number(self.outflow)}" if self.outflow else "")))
        if self.energy is not None and len(self.energy):
            rows.append(("energy", f"{number(self.energy[0])} -> {number(self.energy[-1])}"))
        if self.refinements:
            rows.append(("refinements", f"{len(self.refinements)}, to n = {self.refinements[-1][2]} at t = "
                                        f"{number(self.refinements[-1][0])}"))
        if self.handovers:
            rows.append(("handovers", "; ".join(f"{h.source} -> {h.target} at t = {number(h.t)}"
                                                for h in self.handovers)))
        if any(len(te) for te in self.t_events):
            rows.append(("events", ", ".join(str(len(te)) for te in self.t_events)))
        if self.diagnostics:
            rows.append(("diagnostics", ", ".join(f"{k} {number(v)}" for k, v in self.diagnostics.items())))
        if self.hint:
            rows.append(("hint", repr(self.hint if len(self.hint) <= 300 else self.hint[:299] + "…")))
        rows.append(("arrays", ", ".join(a for a in map(array, ("t", "mass", "energy", "t_steps", "mass_steps",
                                                                  "energy_steps")) if a is not None)))
        width = max(len(k) for k, _ in rows)
        return "Solution(\n" + "\n".join(f"  {k:>{width}}: {v}" for k, v in rows) + "\n)"

    def frame(self, k: int = -1):
        """The solution at output ``k`` (time ``t[k]``; default the last) as a frame (:class:`meanfield.density.Frame`:
        ``domain``, ``t``, ``as_measure()``, ``mass()``, ``energy(beta)``, ``mean()``, ``plot()``, and ``grid`` /
        ``lagrangian`` for what it can do besides) — the one way to read a state of the solution.

        Raises
        ------
        IndexError
            For ``k`` outside the ``len(t)`` frames.
        """
        n = len(self.frames)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not -n <= k < n:
            raise IndexError(f"`k` must be an output index in [-{n}, {n}) (the solution has {n} frames), got {k!r}.")
        return self.frames[int(k)]

    @property
    def densities(self) -> tuple:
        """The frames (:attr:`frames`) under their older name: the same tuple, Lagrangian frames included."""
        return self.frames

    @property
    def handover(self) -> float | None:
        """When a Lagrangian representation took over: the first hand-over from the grid, the start time where the
        chain started Lagrangian, None where the grid held the whole run."""
        if self.frames and self.frames[0].lagrangian:  # the chain started Lagrangian (a frame says what it is)
            return float(self.t_span[0])
        return self.handovers[0].t if self.handovers else None

    def raise_for_status(self) -> "Solution":
        """This solution where the run reached its end (or a terminal event); else raise
        :class:`~meanfield.integrate.monitor.ResolutionError` (resolution lost) or :class:`~meanfield.integrate.monitor.IntegrationError`
        (failed), each carrying it. Interrupted runs raise in :func:`meanfield.solve` already."""
        if self.status is Status.RESOLUTION_LOST:
            raise ResolutionError(self.t_reached, self.message, self, hint=self.hint)
        if self.status is Status.FAILED:
            raise IntegrationError(self.t_reached, self.message, self)
        return self


def own_domain_refusal(rep, domain) -> str | None:
    """Why ``rep`` — the one representation of a product domain (:mod:`meanfield.domains.products`), naming it as
    ``domain.representation`` — does not advance densities on ``domain``, or None."""
    if getattr(domain, "representation", None) != rep.name:
        return f"it advances densities on the {rep.domain_words} only, not on the {getattr(domain, 'name', domain)}"
    return None


class Ending(NamedTuple):
    """How a representation's integration ended (:func:`run_to_end`): what its :class:`Part` states."""

    status: Status
    message: str
    hint: str | None
    t: float
    y: object


def run_to_end(integrator, t0: float, y0, t_eval, t1: float, done: str, last_output) -> Ending:
    """Run ``integrator`` from (t0, y0) through the outputs ``t_eval`` to t1, and say how it ended: SUCCESS with the
    words ``done`` and the final state; a ``StopIntegration``'s status, reason, hint, time and state; or INTERRUPTED
    (Ctrl-C) at ``last_output()``, the last (t, y) output the representation holds, or None for the start."""
    try:
        t, y = integrator.run(t0, y0, t_eval, t1)
        return Ending(Status.SUCCESS, done, None, t, y)
    except StopIntegration as stop:
        return Ending(stop.status, stop.reason, stop.hint, stop.t, stop.y)
    except KeyboardInterrupt:
        t, y = last_output() or (t0, y0)
        return Ending(Status.INTERRUPTED, "interrupted (Ctrl-C)", None, t, y)
