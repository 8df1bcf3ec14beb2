"""The time-integration layer: a table of steppers, trackers, one driver (``solve``, ``simulate`` and next the
Lagrangian measure use it).

- :mod:`.steppers` — ``rk4``, ``ssprk3`` (fixed steps), ``rk45``, ``dop853`` (scipy's
  embedded pairs), each a :class:`Stepper` whose ``step()`` does the bookkeeping;
- :mod:`.trackers` — progress, outputs, finiteness, interrupts (the density
  trackers are in :mod:`meanfield.solve`), and the :class:`Status` an integration ends with;
- :mod:`.integrator` — :class:`Integrator` and the :class:`Problem` protocol.

May import numpy, scipy and tqdm only.
"""

from .integrator import Integrator, Problem, StopIntegration
from .steppers import (
    ADAPTIVE, FIXED, INTEGRATING_FACTOR, METHODS, STEPPERS, AdaptiveStepper, FixedStepper, LawsonStepper,
    RecordingStepper, Stages, Stepper, equal_steps, integrating_factor_refusal, lawson_rk4, rk4, ssprk3, step_count,
    strang_ssprk3,
)
from .trackers import FiniteTracker, InterruptTracker, OutputTracker, ProgressTracker, Status, Tracker

__all__ = ["Integrator", "Problem", "StopIntegration", "Stages", "Stepper", "FixedStepper", "AdaptiveStepper", "LawsonStepper", "RecordingStepper", "STEPPERS", "INTEGRATING_FACTOR", "integrating_factor_refusal",
           "lawson_rk4",
           "strang_ssprk3",
           "METHODS", "FIXED", "ADAPTIVE", "equal_steps", "step_count", "rk4", "ssprk3", "Tracker", "ProgressTracker",
           "OutputTracker", "FiniteTracker", "InterruptTracker", "Status"]
