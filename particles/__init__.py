"""particles: the finite-n systems whose mean-field limit ``meanfield`` solves.

simulate, Trajectory   particles on the sphere moved by a ``meanfield.models`` field
kernels                fused pairwise sums (numba) and the circle spectral path
sampling               uniform, orthogonal and density-distributed initial points
clusters               clustering statistics of GLPR §6.3
"""

from . import clusters, kernels, sampling
from .sampling import orthogonal, sample, uniform_sphere
from .system import Trajectory, rescaled, simulate

__all__ = ["simulate", "Trajectory", "rescaled", "kernels", "sampling", "clusters", "uniform_sphere", "orthogonal", "sample"]
