"""One driver for every time integration: steppers from the table, trackers around them.

:class:`Integrator` advances a :class:`Problem` through a list of output times.
It owns the bookkeeping that ``solve`` and ``particles.simulate`` used to write
each for itself: the step loop, landing on output times, counting evaluations
and accepted steps, rejecting a candidate step (a tracker's ``check``) and
restarting from the state the problem gives back (e.g. on a refined grid),
calling the trackers, and ending cleanly on a :class:`StopIntegration` or a
``KeyboardInterrupt`` (the trackers are finalized with the status, then the
exception propagates).

Two ways to serve output times (both exact at the outputs that matter):

- *landing* (default): each output interval is integrated by its own stepper
  bound for the output time, so the state there is a computed step (the
  fixed steppers shorten or subdivide their last steps; the adaptive ones stop
  at ``t_bound``); needed where the state may change shape between outputs;
- *dense* (``dense=True``, adaptive methods only): one stepper over the whole
  span and the outputs from its dense interpolant, as ``solve_ivp`` does.
"""

from __future__ import annotations

import numpy as np

from .steppers import (
    ADAPTIVE, FIXED, METHODS, AdaptiveStepper, FixedStepper, LawsonStepper, Stepper, integrating_factor_refusal,
)
from .trackers import Status, Tracker

__all__ = ["Problem", "Integrator", "StopIntegration"]


class StopIntegration(Exception):
    """Raised by a problem to end the integration at (t, y), the last accepted state, with a status and reason."""

    def __init__(self, t: float, y, reason: str, status: Status = Status.RESOLUTION_LOST, hint: str | None = None):
        super().__init__(reason)
        self.t, self.y, self.reason, self.status, self.hint = float(t), y, reason, status, hint


class Problem:
    """What the integrator asks of the equation it advances (defaults: no stability cap, no retraction).

    Subclasses implement :meth:`rate` and may override the others. A problem whose rate depends on time
    (``time_dependent``) has ``rate(y, t)`` (and stages whose ``rate(z, t)`` does), and ``breakpoints(t0, t1)``: the
    times inside (t0, t1) where the rate jumps (layer boundaries), at which every step ends exactly.
    """

    time_dependent = False

    def rate(self, y):
        """dy/dt at y (``rate(y, t)`` for a time-dependent problem)."""
        raise NotImplementedError

    def breakpoints(self, t0: float, t1: float):
        """The times inside (t0, t1) where the rate jumps (none by default)."""
        return ()

    def at_time(self, t: float) -> None:
        """A stretch of steps starts at t (at the start, after an output time or a breakpoint): a time-dependent
        problem takes the model of that time (a schedule's layer) before its stages are asked for."""

    def retract(self, y):
        """The state after a step, mapped back where it lives (identity by default)."""
        return y

    def probe(self, y) -> None:
        """Measure what :meth:`max_step` needs at y (before the first step after a start or restart)."""

    def begin_step(self) -> None:
        """A step is about to evaluate :meth:`rate`: forget what earlier steps measured."""

    def max_step(self) -> float:
        """The stability cap of the next step from what was measured (before the CFL factor); inf: none."""
        return np.inf

    def stages(self):
        """:class:`.steppers.Stages` for the fixed steps' stages, or None (default: the stages run on y)."""
        return None

    def adapt(self, t: float, y):
        """Before every step: a replacement of the accepted state ``y`` at ``t`` where the representation must
        change (e.g. panels bisected where the flow map steepened), or None to go on with ``y``; may raise
        :class:`StopIntegration`. The stepper then restarts from the replacement and the trackers are reset."""
        return None

    def reject(self, t: float, y, reason: str):
        """A candidate step from (t, y) was rejected: the state to redo it from, or raise :class:`StopIntegration`."""
        raise StopIntegration(t, y, reason)

    def fail(self, t: float, y, message: str):
        """The adaptive stepper failed after (t, y): raise."""
        raise RuntimeError(f"the adaptive integrator failed at t = {t:.6g}: {message}")


class Integrator:
    """Advance a problem through output times.

    Parameters
    ----------
    problem : Problem
    method : {"rk4", "ssprk3", "rk45", "dop853"}
    dt : float, optional
        Fixed step (or largest step with ``subdivide``) of "rk4"/"ssprk3";
        default ``cfl × problem.max_step()`` before every step.
    cfl : float
        Safety factor of the stability cap (fixed steps; the adaptive methods' ``max_step``).
    subdivide : bool
        Fixed steps: cut each output interval into the fewest equal steps <= dt
        (instead of steps of dt with the last one shortened).
    dense : bool
        Adaptive methods: one stepper over the span, outputs interpolated.
    rtol, atol : float
        Tolerances of the adaptive methods.
    trackers : sequence of Tracker
    stepper : callable, optional
        ``stepper(f, t, y, t_bound) -> Stepper`` replacing the method's (e.g. a compiled one).

    Attributes
    ----------
    nfev, nsteps : int
        Right-hand-side evaluations and accepted steps.
    """

    def __init__(self, problem: Problem, method: str = "rk4", *, dt: float | None = None, cfl: float = 1.0,
                 subdivide: bool = False, dense: bool = False, rtol: float = 1e-10, atol: float = 1e-12,
                 trackers=(), stepper=None):
        if method not in METHODS:
            raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
        self.problem, self.method, self.dt, self.cfl = problem, method, dt, cfl
        self.subdivide, self.dense, self.rtol, self.atol = subdivide, dense, rtol, atol
        self.trackers: list[Tracker] = list(trackers)
        self._custom = stepper
        self.nfev = self.nsteps = 0
        self._nfev_done = 0

    # ----------------------------------------------------------------- steppers
    def _rate(self, y, t=None):
        return self.problem.rate(y, t) if self.problem.time_dependent else self.problem.rate(y)

    def _next_h(self):
        h = self.dt if self.dt is not None else self.cfl * self.problem.max_step()
        self.problem.begin_step()
        return h

    def check(self) -> None:
        """Refuse, before any work, a method that cannot advance the problem: an adaptive method without an
        integrating-factor form where the problem has a diagonal linear part that the steps integrate exactly
        (``Stages.decay``: the noise's DΔ on grids; :func:`~.steppers.integrating_factor_refusal`). :meth:`run` calls
        it first; nothing here evaluates the problem's rate.

        Raises
        ------
        ValueError
            Naming the method and the ones that apply.
        """
        if self._custom is not None or self.method in FIXED:
            return
        stages = self.problem.stages()
        refusal = None if stages is None or stages.decay is None else integrating_factor_refusal(self.method)
        if refusal is not None:
            raise ValueError(f"the problem's linear part (Stages.decay) is integrated exactly by an integrating factor: "
                             f"{refusal}.")

    def _stepper(self, t, y, t_bound) -> Stepper:
        if self._custom is not None:
            return self._custom(self._rate, t, y, t_bound)
        stages, timed = self.problem.stages(), self.problem.time_dependent
        if self.method in FIXED:
            h = self.dt if self.subdivide else self._next_h
            return FixedStepper(self._rate, t, y, t_bound, method=self.method, h=h, subdivide=self.subdivide,
                                stages=stages, timed=timed)
        self.problem.probe(y)
        if stages is not None and stages.decay is not None:  # a method with that form (check)
            return LawsonStepper(self._rate, t, y, t_bound, stages, rtol=self.rtol, atol=self.atol,
                                 max_step=self.cfl * self.problem.max_step(), timed=timed)
        return AdaptiveStepper(self._rate, t, y, t_bound, method=self.method, rtol=self.rtol, atol=self.atol,
                               max_step=self.cfl * self.problem.max_step(), timed=timed)

    def _retire(self, stepper: Stepper) -> None:
        self._nfev_done += stepper.nfev
        self.nfev = self._nfev_done

    # ----------------------------------------------------------------- trackers
    def _check(self, t, y) -> str | None:
        for tr in self.trackers:
            reason = tr.check(t, y)
            if reason is not None:
                return reason
        return None

    def _accept(self, t, y, h, substeps: int = 1) -> None:
        self.nsteps += substeps
        for tr in self.trackers:
            tr.handle(t, y, h)

    def _restart(self, t, y, reason):
        y = self.problem.reject(t, y, reason)
        for tr in self.trackers:
            tr.reset(t, y)
        if self.method in FIXED:
            self.problem.probe(y)
        return y

    # ----------------------------------------------------------------- run
    def run(self, t0: float, y0, t_eval, t_end: float | None = None):
        """Integrate from (t0, y0) through ``t_eval`` (outputs, increasing, >= t0) to ``t_end``; returns (t, y).

        Outputs go to the trackers' ``output``; the trackers are finalized with the status however it ends
        (FAILED, then the exception, where a rate or a tracker raises).
        """
        self.check()
        t_eval = np.asarray(t_eval, dtype=float)
        t_end = float(t_eval[-1]) if t_end is None else float(t_end)
        t, y = float(t0), y0
        for tr in self.trackers:
            tr.initialize(t, y)
        try:
            if self.dense:
                t, y = self._run_dense(t, y, t_eval)
            else:
                self.problem.probe(y)
                for t_out in t_eval:
                    if t_out > t:
                        t, y = self._advance_through(t, y, t_out)
                    for tr in self.trackers:
                        tr.output(t_out, y)
                if t < t_end:  # the outputs may stop short of the end
                    t, y = self._advance_through(t, y, t_end)
        except StopIntegration as stop:
            self._finalize(stop.t, stop.y, stop.status)
            raise
        except KeyboardInterrupt:
            self._finalize(t, y, Status.INTERRUPTED)
            raise
        except Exception:  # an error in a rate or a tracker: the trackers still give back what they hold (the
            self._finalize(t, y, Status.FAILED)  # SIGTERM handler, a progress bar), then the error propagates
            raise
        self._finalize(t, y, Status.SUCCESS)
        return t, y

    def _finalize(self, t, y, status):
        for tr in self.trackers:
            tr.finalize(t, y, status)

    def _advance_through(self, t, y, t_out):
        """From (t, y) to t_out, ending a step exactly at every breakpoint of the problem on the way."""
        for b in self.problem.breakpoints(t, t_out):
            t, y = self._advance(t, y, float(b))
        return self._advance(t, y, t_out)

    def _advance(self, t, y, t_out):
        """From (t, y) to the output time t_out, step by step; returns (t_out, y)."""
        self.problem.at_time(t)
        stepper = self._stepper(t, y, t_out)
        try:
            while stepper.status == "running":
                replaced = self.problem.adapt(stepper.t, stepper.y)
                if replaced is not None:
                    stepper.restart(replaced)
                    for tr in self.trackers:
                        tr.reset(stepper.t, replaced)
                t_prev, y_prev = stepper.t, stepper.y
                if stepper.adaptive:
                    y_prev = np.array(y_prev, copy=True)
                    self.problem.begin_step()
                h = stepper.step()
                if stepper.status == "failed":
                    self.problem.fail(t_prev, y_prev, stepper.message)
                try:
                    y_new = self.problem.retract(stepper.y)
                except FloatingPointError as err:  # no point to retract to (normalise's ZeroVectorError: a stage
                    y_new, reason = None, str(err)  # at the origin): rejected as a non-finite state is, not a crash
                else:
                    reason = self._check(stepper.t, y_new)
                if reason is not None:
                    y = self._restart(t_prev, y_prev, reason)
                    old, stepper = stepper, self._stepper(t_prev, y, t_out)
                    self._retire(old)
                    continue
                stepper.y = y_new
                stepper.accept()
                self._accept(stepper.t, y_new, h, stepper.substeps)
                if stepper.adaptive:
                    stepper.max_step = self.cfl * self.problem.max_step()
        finally:
            self._retire(stepper)
        return t_out, (np.array(stepper.y, copy=True) if stepper.adaptive else stepper.y)

    def _run_dense(self, t, y, t_eval):
        """One adaptive stepper over [t_eval[0], t_eval[-1]], outputs from its dense interpolant."""
        if self.method not in ADAPTIVE:
            raise ValueError(f"dense outputs need an adaptive method, got {self.method!r}.")
        if len(self.problem.breakpoints(t, t_eval[-1])):
            raise ValueError("dense outputs interpolate one stepper over the span: the problem's rate jumps inside it "
                             "(layer boundaries); land on outputs instead (dense=False)")
        stepper = AdaptiveStepper(self._rate, t, y, t_eval[-1], method=self.method, rtol=self.rtol, atol=self.atol,
                                  timed=self.problem.time_dependent)
        for tr in self.trackers:
            tr.output(t_eval[0], y)
        k = 1
        try:
            while k < t_eval.size:
                t_old = stepper.t
                h = stepper.step()
                if stepper.status == "failed":
                    self.problem.fail(t_old, stepper.y, stepper.message)
                self._accept(stepper.t, stepper.y, h)
                if t_eval[k] <= stepper.t:
                    dense = stepper.dense_output()
                    while k < t_eval.size and t_eval[k] <= stepper.t:
                        y_k = self.problem.retract(dense(t_eval[k]))
                        reason = self._check(t_eval[k], y_k)
                        if reason is not None:
                            self.problem.reject(t_eval[k], y_k, reason)
                        for tr in self.trackers:
                            tr.output(t_eval[k], y_k)
                        k += 1
        finally:
            self._retire(stepper)
        return stepper.t, stepper.y
