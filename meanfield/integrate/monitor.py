r"""Resolution monitoring: a grid solution that stops being resolved is never returned.

For β >= 0 the solution concentrates and clusters sharpen exponentially
(MATH.md §2.2). After every step the solver asks :class:`ResolutionMonitor`
whether the new state is still resolved:

- the grid's own check (``grid.resolution``): on the circle and S² the largest
  coefficient in the top 1/16 of the spectrum, relative to the mean (ρ̂_0), must
  stay below ``tail_tol``; finite volumes in R^d ask for a smallest standard
  deviation of at least two cells;
- sign: the nodal values must not fall below ``-neg_tol × mean`` (``Grid.sign_check``; on the zonal sphere the rings'
  negative masses summed not below ``-neg_tol ×`` the total: in high dimension a clustered density spans hundreds of
  decades, and its far rings, of negligible mass, carry the expansion's undershoot);
- energy: for zonal kernels with V = cI, E_β must be non-decreasing (c > 0)
  or non-increasing (c < 0), up to ``energy_rtol`` relative (GLPR Lemma 3.7);
- finiteness;
- outflow (a box in R^d): mass leaving the box is recorded (``Solution.outflow``), warned about past
  ``outflow_tol`` (1e-6) of the initial mass (the box's own tolerance: a density whose boundary cells hold more than
  1e-6 of the mass is refused at the start), and stops the run past ``outflow_stop`` (1e-4: the solution's moments
  are then off by that much, far above the schemes' errors; a plausible-looking wrong answer is never returned);
- the product domains (:mod:`meanfield.domains.products`): on the cylinder S¹ × (0, ∞) and the zonal
  S^{d-1} × (0, ∞) the mass in the guard cells at either end of the radii must stay below ``edge_tol``; for natural
  frequencies the ω-quadrature's free-streaming error times the amplitude below ``omega_tol`` (``np.inf``: not
  checked).

A failed check either refines the grid (zero-padding, exact for band-limited
data) or raises :class:`ResolutionError` with the last time at which the
solution was resolved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ResolutionError", "IntegrationError", "ResolutionMonitor"]


class ResolutionError(RuntimeError):
    """The grid no longer resolves the solution.

    Attributes
    ----------
    t : float
        The last time at which the solution was resolved (the partial
        solution ends there).
    reason : str
        Which check failed, with its value.
    solution : Solution
        What was computed up to ``t`` (``t_eval`` points up to ``t``, the
        step history, and the last resolved state as its final density); for a
        refused initial density, that density as the only frame.
    initial : bool
        Whether the initial density itself was refused (nothing was integrated).
    """

    def __init__(self, t: float, reason: str, solution=None, hint: str | None = None, initial: bool = False):
        self.t = float(t)
        self.reason = reason
        self.solution = solution
        self.initial = bool(initial)
        self.hint = hint
        super().__init__(f"the solution is no longer resolved after t = {self.t:.6g}: {reason}."
                         + ("" if hint is None else f" {hint}"))


class IntegrationError(RuntimeError):
    """The integration failed (a non-finite rate, an adaptive step that underflowed): ``t``, ``reason`` and the
    partial ``solution`` up to ``t``."""

    def __init__(self, t: float, reason: str, solution=None):
        self.t, self.reason, self.solution = float(t), reason, solution
        super().__init__(f"the integration failed after t = {self.t:.6g}: {reason}")


@dataclass(frozen=True)
class ResolutionMonitor:
    """Thresholds of the resolution checks (see the module docstring)."""

    tail_tol: float = 1e-10
    neg_tol: float = 1e-8
    energy_rtol: float = 1e-10
    outflow_tol: float = 1e-6
    #: a box in R^d: the mass that may leave it (relative to the initial mass) before a run stops (``Status.FAILED``,
    #: the message naming the outflow, the time and the fix, a larger box); never below ``outflow_tol`` (a raised
    #: warning threshold accepts that loss); ``np.inf`` never stops
    outflow_stop: float = 1e-4
    #: the cylinder S¹ × (0, ∞) and the zonal S^{d-1} × (0, ∞): the largest mass in the guard cells at either end of
    #: the radii before a run stops
    edge_tol: float = 1e-10
    #: natural frequencies: the largest ω-resolution bound (free-streaming error × amplitude, docs/MATH.md §11);
    #: ``np.inf`` switches the check off
    omega_tol: float = 1e-6

    def __post_init__(self):
        for name in ("tail_tol", "neg_tol", "energy_rtol", "outflow_tol", "edge_tol"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
                raise ValueError(f"`{name}` must be a positive finite number, got {v!r}.")
        stop = self.outflow_stop
        if not (isinstance(stop, (int, float)) and stop > 0 and stop == stop):  # positive, inf allowed, not NaN
            raise ValueError(f"`outflow_stop` must be > 0 (np.inf never stops), got {self.outflow_stop!r}.")
        if not (isinstance(self.omega_tol, (int, float)) and self.omega_tol > 0):
            raise ValueError(f"`omega_tol` must be > 0 (np.inf to switch the ω check off), got {self.omega_tol!r}.")

    def check_state(self, grid, values, spectrum=None) -> str | None:
        """None if ``values`` is resolved on ``grid``, else the reason (``spectrum``: ``grid.spectrum(values)``,
        if known)."""
        if not np.all(np.isfinite(values)):
            return "the density has non-finite values"
        lowest, reference, words = grid.sign_check(values)
        if lowest < -self.neg_tol * reference:
            return f"the density is negative ({words})"
        return grid.resolution(values, self.tail_tol, spectrum=spectrum)

    def check_energy(self, e_old: float, e_new: float, sign: float) -> str | None:
        """None if the energy moved in the direction ``sign`` (up to round-off)."""
        if sign == 0:
            return None
        drop = -sign * (e_new - e_old)
        if drop > self.energy_rtol * max(abs(e_old), abs(e_new)) + 1e-300:
            word = "decreased" if sign > 0 else "increased"
            return (f"the energy (the model's Lyapunov functional, docs/MATH.md §7) {word} from {e_old:.15g} to {e_new:.15g} "
                    "although it is monotone for this model")
        return None
