"""Representations of the solution, each a problem on the one integrator, and their chains (:func:`meanfield.solve`).

==========================  ==============================================================================
:class:`GridRepresentation`  a density on its grid, refined while it can be (:mod:`.grid`)
:class:`PanelsRepresentation`  adaptive Lagrangian panels, zonal models on the circle and S² (:mod:`.lagrangian`)
:class:`NodesRepresentation`  fixed Lagrangian nodes, any model (:mod:`.lagrangian`)
:func:`plan`, :func:`run_chain`  which chain applies, and the run that hands over along it (:mod:`.chain`)
:class:`Solution`            the result, whatever representations made it (:mod:`.base`)
:func:`register`             a representation defined above this layer: the product domains' "cylinder"
                             (:class:`meanfield.solvers.cylinder.CylinderRepresentation`), "zonal-cylinder"
                             (:class:`meanfield.solvers.zonal_cylinder.ZonalCylinderRepresentation`; both subclass
                             :class:`.radial.RadialRepresentation`) and "frequencies"
                             (:class:`meanfield.solvers.frequencies.FrequencyRepresentation`), each its domain's only one
==========================  ==============================================================================
"""

from .base import (
    Ending, Event, Handover, Hooks, Part, Representation, Settings, Solution, own_domain_refusal, run_to_end,
)
from .chain import REPRESENTATIONS, check_options, plan, register, run_chain, solve_product
from .grid import GridProblem, GridRepresentation, HistoryTracker, OutflowTracker, ResolutionTracker
from .lagrangian import NodesRepresentation, PanelsRepresentation
from .common_noise import CommonNoiseRepresentation

__all__ = ["Representation", "GridRepresentation", "PanelsRepresentation", "NodesRepresentation", "REPRESENTATIONS",
           "Settings", "Part", "Handover", "Solution", "Hooks", "Event", "plan", "check_options", "run_chain",
           "GridProblem", "ResolutionTracker", "HistoryTracker", "OutflowTracker", "register", "own_domain_refusal",
           "solve_product", "Ending", "run_to_end", "CommonNoiseRepresentation"]
