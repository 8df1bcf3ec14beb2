"""Trackers: everything an integration does besides stepping (py-pde's trackers are the model).

The :class:`~meanfield.integrate.Integrator` calls, for each tracker in order,

- ``initialize(t, y)`` once at the start;
- ``check(t, y)`` on every candidate step, before it is accepted: a reason
  (a string) rejects the step, and the problem decides what follows (refine
  and redo it, or stop);
- ``handle(t, y, h)`` after every accepted step of size h;
- ``reset(t, y)`` when the state was replaced (a refined grid);
- ``output(t, y)`` at every output time;
- ``finalize(t, y, status)`` once at the end, whatever ended it
  (:class:`Status`: success, resolution lost, interrupted).

Generic trackers live here: :class:`ProgressTracker` (a tqdm bar over simulated
time, or periodic progress lines where standard error is no terminal), :class:`OutputTracker` (the states at the
output times),
:class:`FiniteTracker` (non-finite states are rejected), :class:`InterruptTracker`
(SIGTERM ends the integration as Ctrl-C does, so what was computed is kept). The trackers of
densities — the resolution monitor, the histories of mass and energy, the
outflow account — are in :mod:`meanfield.solve`, where the grid is known.

Long runs: :class:`RunEstimate` is what a fixed-step run will take before it starts (its number of steps, the
step and why it is that small, the seconds a step takes, measured by :func:`time_steps` on the run's own first
steps); :func:`warn_long_run` issues a :class:`LongRunWarning` from it where the steps exceed
:data:`LONG_RUN_STEPS` (``particles.simulate``, ``meanfield.solve`` with a fixed ``dt``), and ``meanfield check``
prints it.
"""

from __future__ import annotations

import enum
import logging
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..core import interrupts

__all__ = ["Status", "Tracker", "ProgressTracker", "OutputTracker", "FiniteTracker", "InterruptTracker",
           "PROGRESS_FIRST", "PROGRESS_EVERY", "PROGRESS_LOGGER", "progress_line", "progress_while", "duration",
           "LONG_RUN_STEPS",
           "LongRunWarning", "RunEstimate", "time_steps", "warn_long_run"]


class Status(enum.Enum):
    """How an integration ended.

    SUCCESS: the end of the interval was reached; EVENT: a terminal event stopped it
    (an event of ``solve(..., events=...)``, :class:`meanfield.representations.base.Event`); RESOLUTION_LOST: the representation could no longer resolve
    the solution to its stated accuracy; FAILED: the integrator failed (a non-finite rate,
    an adaptive step that underflowed) or the solution left its domain (more than the monitor's ``outflow_stop`` of
    the mass through a box's boundary); INTERRUPTED: Ctrl-C or SIGTERM.
    """

    SUCCESS = "success"
    EVENT = "event"
    RESOLUTION_LOST = "resolution lost"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class Tracker:
    """Base class: every hook does nothing (see the module docstring for when each is called)."""

    def initialize(self, t: float, y) -> None:
        pass

    def check(self, t: float, y) -> str | None:
        return None

    def handle(self, t: float, y, h: float) -> None:
        pass

    def reset(self, t: float, y) -> None:
        pass

    def output(self, t: float, y) -> None:
        pass

    def finalize(self, t: float, y, status: Status) -> None:
        pass


#: Seconds from the start of a run to its first progress line where standard error is no terminal, and between
#: the lines after it: runs shorter than PROGRESS_FIRST print nothing, long batch jobs show in their logs that they
#: are alive and when they should end. Read when a :class:`ProgressTracker` is made (a test may lower them).
PROGRESS_FIRST = 30.0
PROGRESS_EVERY = 60.0

#: The logger of the progress lines (a child of "meanfield", whose level the command line sets).
PROGRESS_LOGGER = "meanfield.progress"


def progress_line(message: str) -> None:
    """Write one progress line: an INFO record of the logger :data:`PROGRESS_LOGGER` where logging has a handler
    for it, else ``meanfield: <message>`` on standard error.

    Why both: an application that configured logging (a batch script's ``logging.basicConfig``, the ``meanfield``
    command line, which sets the "meanfield" logger to INFO, WARNING with --quiet) gets the lines in its own format
    and destination, with its timestamps, and can silence them by level
    (``logging.getLogger("meanfield.progress").setLevel(logging.WARNING)``); a library never configures logging
    itself, and where nothing is configured Python's last-resort handler drops INFO records, so the lines would be
    lost exactly in the plain batch job they are for: there they go to standard error, which is the job's log."""
    logger = logging.getLogger(PROGRESS_LOGGER)
    if logger.hasHandlers():
        logger.info(message)
    else:
        print(f"meanfield: {message}", file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    """A length of time in words a log reader takes in at a glance: 35 µs, 1.4 ms, 4.2 s, 45 s, 4.5 min, 2.3 h,
    3.1 days."""
    s = float(seconds)
    if not np.isfinite(s):
        return "unknown"

    def num(v):
        return f"{v:.2g}" if v < 10 else f"{v:.0f}"

    for unit, size, below in (("µs", 1e-6, 1e-3), ("ms", 1e-3, 1.0), ("s", 1.0, 120.0), ("min", 60.0, 7200.0),
                              ("h", 3600.0, 172800.0)):
        if s < below:
            return f"{num(s / size)} {unit}"
    return f"{num(s / 86400.0)} days"


class progress_while:
    """Progress lines while one long call runs that has no steps to count (an optimal transport, a quantisation):
    the lines of :class:`ProgressTracker` for a run without simulated time. Where ``enabled``
    (``meanfield.core.checks.progress_lines``: "auto" progress, standard error no terminal, not within ``quiet()``),
    a timer thread writes ``<what>: still running, 30 s elapsed`` (:func:`progress_line`) :data:`PROGRESS_FIRST`
    seconds after entering, then every :data:`PROGRESS_EVERY` seconds, and where it wrote any, one more line on
    exit says how long the call took; a call shorter than :data:`PROGRESS_FIRST` writes none. A context manager:

    >>> with progress_while("validation.distance: W1 of 500 × 4000 atoms", enabled=False):
    ...     pass
    """

    def __init__(self, what: str, enabled: bool = True, *, first: float | None = None, every: float | None = None):
        self.what, self.enabled = what, bool(enabled)
        self.first = PROGRESS_FIRST if first is None else float(first)
        self.every = PROGRESS_EVERY if every is None else float(every)
        self._stop, self._thread, self._written, self._start = threading.Event(), None, 0, None

    def _beat(self) -> None:
        wait = self.first
        while not self._stop.wait(wait):
            progress_line(f"{self.what}: still running, {duration(time.monotonic() - self._start)} elapsed")
            self._written += 1
            wait = self.every

    def __enter__(self):
        self._start = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._beat, name="meanfield-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind, exc, tb):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        if self._written:
            how = "done" if kind is None else f"stopped ({kind.__name__})"
            progress_line(f"{self.what}: {how} after {duration(time.monotonic() - self._start)}")
        return False


class ProgressTracker(Tracker):
    """A tqdm bar over simulated time (off unless ``enabled``), closed at the end whatever happens; or, where the bar
    is off and ``lines`` names the run, periodic progress lines (:func:`progress_line`) for logs.

    With ``keep_open`` one bar serves several integrations in a row (the representations of a chain): it counts
    simulated time across them and is closed by :meth:`close`.

    Lines (``meanfield.core.checks.progress_lines`` says where: "auto" progress with standard error no terminal, not
    within ``quiet()``): the first ``first`` seconds after the start (default :data:`PROGRESS_FIRST`), then every
    ``every`` seconds (:data:`PROGRESS_EVERY`), checked after each accepted step (one clock read), e.g.
    ``solve: t = 12.5 of 100 (12 %), 1.0 min elapsed, about 7.0 min left`` — the time left extrapolated from the
    simulated time per second so far. Where a line was written, one more says how the run ended; a run shorter than
    ``first`` writes none. A compiled stepper that advances a whole output interval in one call (the particles'
    fused RK4) is seen at the output times only."""

    def __init__(self, total: float, enabled: bool = True, keep_open: bool = False, *, lines: str | None = None,
                 first: float | None = None, every: float | None = None):
        self.total, self.enabled, self.keep_open = float(total), bool(enabled), bool(keep_open)
        self.lines = lines
        self.first = PROGRESS_FIRST if first is None else float(first)
        self.every = PROGRESS_EVERY if every is None else float(every)
        self.bar = None
        self._start = self._next = self._t0 = self._t = None
        self._written, self._status = 0, None

    def initialize(self, t, y):
        from tqdm.auto import tqdm

        if self.bar is None:
            self.bar = tqdm(total=self.total, disable=not self.enabled, unit="t", leave=False,
                            bar_format="{l_bar}{bar}| t = {n:.4g}/{total:.4g} [{elapsed}<{remaining}]")
        if self._start is None:
            self._start, self._t0, self._t = time.monotonic(), float(t), float(t)
            self._next = self._start + self.first

    def handle(self, t, y, h):
        self.bar.update(h)
        if self.lines is not None and not self.enabled:
            self._t = float(t)
            now = time.monotonic()
            if now >= self._next:
                self._line(now)
                self._next = now + self.every

    def _line(self, now: float) -> None:
        elapsed = now - self._start
        done = (self._t - self._t0) / self.total if self.total > 0 else 1.0
        left = f", about {duration(elapsed * (1.0 - done) / done)} left" if 0.0 < done < 1.0 else ""
        progress_line(f"{self.lines}: t = {self._t:.4g} of {self._t0 + self.total:.4g} ({100.0 * done:.0f} %), "
                      f"{duration(elapsed)} elapsed{left}")
        self._written += 1

    def finalize(self, t, y, status):
        # the time reached: an interrupted integration reports its last output time, the steps went on after it
        self._t = float(t) if self._t is None else max(self._t, float(t))
        self._status = status
        if not self.keep_open:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self._written and self._start is not None:  # the log says how the run it reported on ended
            status = "ended" if self._status is None else self._status.value
            progress_line(f"{self.lines}: {status} at t = {self._t:.4g} after "
                          f"{duration(time.monotonic() - self._start)}")
            self._written = 0


class OutputTracker(Tracker):
    """The states at the output times: ``times`` and ``states`` (copies), in order."""

    def __init__(self):
        self.times, self.states = [], []

    def output(self, t, y):
        self.times.append(float(t))
        self.states.append(np.array(y, copy=True))


class FiniteTracker(Tracker):
    """Rejects a step whose state has a non-finite entry."""

    def check(self, t, y):
        return None if np.all(np.isfinite(y)) else "the state became non-finite"


class InterruptTracker(Tracker):
    """SIGTERM raises ``KeyboardInterrupt`` while the integration runs: it ends as Ctrl-C does.

    Within :func:`meanfield.core.interrupts.deferred` (the command line) the signals
    only set a flag; this tracker honours it after every accepted step, so the
    interrupt never lands inside a compiled kernel.

    The integrator then finalizes every tracker with ``Status.INTERRUPTED`` and
    the caller keeps what was computed (``solve`` raises ``Interrupted`` carrying
    the partial solution). Installed only from the main thread and only over the
    default handler (an application's own handler is left alone); the previous
    handler is restored at the end.
    """

    def __init__(self):
        self._previous = None

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def initialize(self, t, y):
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._previous = signal.signal(signal.SIGTERM, self._raise)

    def handle(self, t, y, h):
        interrupts.check()

    def finalize(self, t, y, status):
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None


# --------------------------------------------------------------------------------------------- long runs
#: Fixed steps beyond which ``particles.simulate`` and ``meanfield.solve`` warn before they start
#: (:class:`LongRunWarning`): at a millisecond a step, minutes of silence.
LONG_RUN_STEPS = 10**5


class LongRunWarning(UserWarning):
    """A fixed-step run of more than :data:`LONG_RUN_STEPS` steps is about to start: the message says how many, the
    step and why it is that small, the run time measured on its first steps, and what to do. A UserWarning (the
    run is what was asked for); ``warnings.simplefilter("ignore", LongRunWarning)`` silences it."""


@dataclass(frozen=True)
class RunEstimate:
    """What a run will take, known before it starts.

    Attributes
    ----------
    method : str
        The integrator ("rk4", ...).
    steps : int or None
        The number of steps where the step is fixed and known (a given ``dt``, a particle system's default step);
        None where the run chooses its steps as it goes (adaptive methods, a CFL step that follows the density).
    h : float or None
        The (largest) step, where fixed.
    why : str
        Why the step is what it is, in words ("the `dt` given", "the default step 0.05 / rate scale, ...").
    step_seconds : float or None
        Wall-clock seconds of one step, measured on the run's own first steps (:func:`time_steps`); None where not
        measured.
    """

    method: str
    steps: int | None
    h: float | None
    why: str
    step_seconds: float | None = None

    @property
    def seconds(self) -> float | None:
        """The run time, steps × step_seconds (None where either is unknown)."""
        if self.steps is None or self.step_seconds is None:
            return None
        return self.steps * self.step_seconds

    def summary(self) -> str:
        """One line: "200000 rk4 steps of h = 5e-06 (<why>): about 4.6 min (1.4 ms a step, measured)"."""
        cost = "" if self.step_seconds is None else f"{duration(self.step_seconds)} a step, measured"
        if self.steps is None:
            head = f"{self.method} steps chosen as the run goes ({self.why})"
            return head + (f": {cost} at the start" if cost else "")
        head = f"{self.steps} {self.method} steps of h = {self.h:.3g} ({self.why})"
        return head + (f": about {duration(self.seconds)} ({cost})" if cost else "")


def time_steps(run, budget: float = 0.25, most: int = 64) -> float:
    """Wall-clock seconds of one step, measured: ``run(k)`` runs the first k steps of the run (a throwaway copy of
    its state) and may return the number of steps it took (None: k). One untimed run of one step first
    (compilation, caches, plans: which the run itself would pay once), then one step timed, then, where that took
    less than ``budget`` seconds, k more steps with k·(one step) about the budget (k <= ``most``: 64, or the run's
    own count, so the timing never steps past the run's end): the difference of the two removes what a run costs
    besides its steps (building the problem, the first and last outputs). About 2·budget plus two steps in all."""

    def timed(k):
        start = time.perf_counter()
        taken = run(k)
        return time.perf_counter() - start, max(1, k if taken is None else int(taken))

    run(1)
    one, n_one = timed(1)
    if one >= budget or most < 2:
        return one / n_one
    k = int(min(most, 64, max(2, budget / max(one, 1e-9))))
    many, n_many = timed(k)
    return (many - one) / (n_many - n_one) if many > one and n_many > n_one else many / n_many


def warn_long_run(estimate: RunEstimate, where: str, model=None, stacklevel: int = 2) -> None:
    """Issue the :class:`LongRunWarning` of ``estimate`` for the function ``where`` ("particles.simulate") of
    ``model`` (named in the message, where given); ``stacklevel`` as for ``warnings.warn``, counted from the caller
    of this function."""
    seconds = estimate.seconds
    took = "" if seconds is None else (f", about {duration(seconds)} ({duration(estimate.step_seconds)} a step, "
                                       "measured on the first steps)")
    of = "" if model is None else f" of {' '.join(repr(model).split())}"
    warnings.warn(
        f"{where}{of}: {estimate.steps} {estimate.method} steps of h = {estimate.h:.3g}{took}. The step is "
        f"{estimate.why}. Where the accuracy allows, pass a larger `dt`; fewer output times do not help (the step, "
        "not t_eval, sets the count); progress=True shows a bar (where standard error is no terminal, the default "
        f"writes a progress line after {PROGRESS_FIRST:g} s, then every {PROGRESS_EVERY:g} s).",
        LongRunWarning, stacklevel=stacklevel + 1)
