"""particles: the finite-n systems whose mean-field limit ``meanfield`` solves.

simulate, Trajectory   particles on S^{d-1} or in R^d moved by a ``meanfield.models`` field; tokens x = rθ of
                       pre-, peri- and Mix-LN, nGPT's (a Transformer's ``normalization``, docs/MATH.md §10)
Snapshot               the particles at one time as a frame (``Trajectory.frame(k)``; meanfield.density.Frame)
velocity               the tokens' velocity, the right-hand side simulate integrates
with_positions         tokens in their array order as rows (s, x), for causal attention
discrete_depth         the same tokens through discrete layers x ↦ N(x + h X[μ](x)) (GLPR §2.1), each
                       normalisation's layer, hardmax attention's AFZ map (MATH.md §10–11)
kuramoto               tokens with natural frequencies on S¹, θ̇_i = ω_i + X[μ](θ_i) (``kuramoto.simulate``); the
                       Lohe model on S^{d-1}, ẋ_i = Ω_i x_i + X[μ](x_i), Ω_i skew (``kuramoto.lohe``)
fused                  batches of small systems advanced by compiled RK4 sequences
sampling               uniform, orthogonal and density-distributed initial points
clusters               clustering statistics of GLPR §6.3
metastability          clusters over time, metastable states and merges of a trajectory, a merging flow for
                       lifetimes e^{cβ} (arXiv 2410.06833)
saddles                critical points of E_β of n weighted points (Newton) and their Hessian's index

The kernel sums the strategies use are in :mod:`meanfield.kernels`; time
stepping is :mod:`meanfield.integrate`. May import ``meanfield``; never
``validation`` or the study layer.
"""

from . import clusters, fused, kuramoto, metastability, saddles, sampling
from .sampling import orthogonal, sample, uniform_sphere
from .depth import discrete_depth
from .snapshot import Snapshot
from .system import Trajectory, rescaled, simulate, velocity
from meanfield.domains.sequence import with_positions

__all__ = ["simulate", "velocity", "discrete_depth", "Trajectory", "rescaled", "fused", "kuramoto", "sampling", "clusters",
           "metastability", "saddles", "uniform_sphere", "orthogonal",
           "sample", "with_positions", "Snapshot"]
