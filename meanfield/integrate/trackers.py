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
time), :class:`OutputTracker` (the states at the output times),
:class:`FiniteTracker` (non-finite states are rejected), :class:`InterruptTracker`
(SIGTERM ends the integration as Ctrl-C does, so what was computed is kept). The trackers of
densities — the resolution monitor, the histories of mass and energy, the
outflow account — are in :mod:`meanfield.solve`, where the grid is known.
"""

from __future__ import annotations

import enum
import signal
import threading

import numpy as np

from .. import interrupts

__all__ = ["Status", "Tracker", "ProgressTracker", "OutputTracker", "FiniteTracker", "InterruptTracker"]


class Status(enum.Enum):
    """How an integration ended.

    SUCCESS: the end of the interval was reached; EVENT: a terminal event stopped it
    (:class:`EventTracker`); RESOLUTION_LOST: the representation could no longer resolve
    the solution to its stated accuracy; FAILED: the integrator failed (a non-finite rate,
    an adaptive step that underflowed); INTERRUPTED: Ctrl-C or SIGTERM.
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


class ProgressTracker(Tracker):
    """A tqdm bar over simulated time (off unless ``enabled``), closed at the end whatever happens.

    With ``keep_open`` one bar serves several integrations in a row (the representations of a chain): it counts
    simulated time across them and is closed by :meth:`close`."""

    def __init__(self, total: float, enabled: bool = True, keep_open: bool = False):
        self.total, self.enabled, self.keep_open = float(total), bool(enabled), bool(keep_open)
        self.bar = None

    def initialize(self, t, y):
        from tqdm.auto import tqdm

        if self.bar is None:
            self.bar = tqdm(total=self.total, disable=not self.enabled, unit="t", leave=False,
                            bar_format="{l_bar}{bar}| t = {n:.4g}/{total:.4g} [{elapsed}<{remaining}]")

    def handle(self, t, y, h):
        self.bar.update(h)

    def finalize(self, t, y, status):
        if not self.keep_open:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


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

    Within :func:`meanfield.interrupts.deferred` (the command line) the signals
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
