r"""The Lagrangian measure: the continuity equation solved by characteristics, through collapse.

A second representation of the solution of ∂_t μ + div(μ X[μ]) = 0 that never loses
resolution (docs/MATH.md §6): points with fixed weights move with the field of the
measure they carry and the log-density is carried exactly along them.

=========================  ==========================================================
:class:`LagrangianMeasure` one frame: points, weights, log ρ at the points, ρ anywhere
:func:`start`              the Lagrangian measure of a grid density (nodes, ρ_j w_j)
:func:`start_gaussian`     the Lagrangian measure of a Gaussian in R^d (Gauss–Hermite nodes)
:func:`transport`          advance it with fixed nodes (``solve(..., representation="nodes")`` is the front)
:func:`transport_panels`   adaptive Gauss panels (circle, S²): nodes inserted where the map steepens
                           (``solve(..., representation="panels")``)
:func:`clusters`           the clusters of a frame; :func:`cluster_history` over a solution (a
                           :class:`ClusterHistory`: a summary repr, ``to_dataframe()``, ``to_dataset()``,
                           ``states()``)
:mod:`.metastability`      the cluster count and angles predicted from the initial data on S¹
                           (:func:`predicted_clusters`), the metastable states, merges and lifetimes of a
                           run (:func:`metastable_states`)
=========================  ==========================================================
"""

from .clusters import Cluster, ClusterHistory, cluster_history, clusters
from .measure import LagrangianMeasure, PointFrame, excess_energy
from .metastability import ClusterPrediction, MetastableStates, metastable_states, predicted_clusters
from .panels import PanelProblem, PanelTransport, panels_refusal, transport_panels
from .transport import LagrangianProblem, Transport, start, start_gaussian, transport

__all__ = ["LagrangianMeasure", "PointFrame", "excess_energy", "LagrangianProblem", "PanelProblem", "Transport", "start", "start_gaussian",
           "transport", "transport_panels", "panels_refusal", "PanelTransport", "clusters", "cluster_history",
           "Cluster", "ClusterHistory", "predicted_clusters", "ClusterPrediction", "metastable_states",
           "MetastableStates"]
