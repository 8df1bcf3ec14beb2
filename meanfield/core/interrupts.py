"""Interrupts that arrive at safe points: SIGINT and SIGTERM deferred to the next :func:`check`.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be
when Ctrl-C arrives. Inside compiled code (a numba kernel, an HDF5 write) that
is a bad place: numba's dispatcher then returns a result *with an exception
set* (``SystemError: CPUDispatcher(...) returned a result with an exception
set``), and an exception in the middle of a write can leave half a file.

Within :func:`deferred` the two signals only *record* that they arrived; the
long loops of the library (every accepted step of the integrator, every chunk
of particle statistics, every distance, every round of ~0.1 s of a compiled
sum: :func:`meanfield.kernels.threads.run_tasks`, where :func:`armed`) call
:func:`check`, which raises ``KeyboardInterrupt`` there, between chunks, where
the caller keeps what was computed. A second signal while the first is still pending raises at once
(a user who presses Ctrl-C twice wants out).

Outside :func:`deferred` (the library used from a script or a notebook)
:func:`check` does nothing and Ctrl-C behaves as Python's default.

Signal handlers are process-wide state; they can only be installed from the
main thread, and :func:`deferred` restores the previous handlers on exit.
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["deferred", "check", "pending", "clear", "armed"]

#: the signal that arrived while deferred (None: none pending), the nesting depth, whether the handlers are
#: installed; module state because signals are process state
_state = {"pending": None, "depth": 0, "installed": False}


def _record(signum, frame):
    if _state["pending"] is not None:  # a second signal before the first was honoured: out at once
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name} (second)")
    _state["pending"] = signum


@contextlib.contextmanager
def deferred(signals=(signal.SIGINT, signal.SIGTERM), pending=()):
    """Within: the ``signals`` set a flag instead of raising; :func:`check` raises ``KeyboardInterrupt``.

    Nested uses share the flag; only the outermost installs and restores the
    handlers. From a thread other than the main one nothing is installed.
    A signal still pending when the outermost block ends is raised then.
    ``pending`` is a list of signals that arrived before, read once the
    handlers are in place (the console script records those that arrive while
    the library is imported, and may still append to it until then).
    """
    install = threading.current_thread() is threading.main_thread() and _state["depth"] == 0
    previous = {}
    if install:
        _state["pending"] = None
        for s in signals:
            previous[s] = signal.signal(s, _record)
        if pending:
            _state["pending"] = pending[0]
        _state["installed"] = True
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if install:
            _state["installed"] = False
            for s, h in previous.items():
                signal.signal(s, h)
    if install and _state["pending"] is not None:
        signum, _state["pending"] = _state["pending"], None
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def armed() -> bool:
    """Whether the handlers of :func:`deferred` are installed: a signal then only sets the flag, and :func:`check`
    is what honours it. Long compiled sums then run in rounds with a :func:`check` between them
    (:func:`meanfield.kernels.threads.run_tasks`), so that no signal waits for a whole n² sum."""
    return _state["installed"]


def pending() -> bool:
    """Whether a deferred signal waits to be honoured."""
    return _state["pending"] is not None


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a deferred signal arrived (the flag stays set until :func:`clear`).

    The flag stays set so that every enclosing loop stops too: the integrator
    ends its run, the study skips the work that was still to come.
    """
    signum = _state["pending"]
    if signum is not None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def clear() -> None:
    """Forget a pending signal (the caller has honoured it)."""
    _state["pending"] = None
