r"""The Lagrangian measure: the continuity equation solved by characteristics, through collapse.

A second representation of the solution of ∂_t μ + div(μ X[μ]) = 0 that never loses
resolution (docs/MATH.md §6): points with fixed weights move with the field of the
measure they carry and the log-density is carried exactly along them.

=========================  ==========================================================
:class:`LagrangianMeasure` one frame: points, weights, log ρ at the points, ρ anywhere
:func:`start`              the Lagrangian measure of a grid density (nodes, ρ_j w_j)
:func:`start_gaussian`     the Lagrangian measure of a Gaussian in R^d (Gauss–Hermite nodes)
:func:`transport`          advance it with fixed nodes (``solve(..., representation=...)`` is the front)
:func:`transport_panels`   the circle's adaptive Gauss panels: nodes inserted where the map steepens
:func:`transport_density`  from a grid density: panels where they apply, fixed nodes elsewhere
:func:`clusters`           the clusters of a frame; :func:`cluster_history` over a solution
=========================  ==========================================================
"""

from .clusters import Cluster, cluster_history, clusters
from .measure import LagrangianMeasure
from .panels import PanelTransport, transport_panels
from .transport import (LagrangianProblem, Transport, refines, start, start_gaussian, transport,
                        transport_density)

__all__ = ["LagrangianMeasure", "LagrangianProblem", "Transport", "start", "start_gaussian", "transport",
           "transport_density", "refines", "transport_panels", "PanelTransport", "clusters", "cluster_history",
           "Cluster"]
