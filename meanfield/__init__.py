"""meanfield: densities advanced by the mean-field equation of self-attention.

The continuity equation ∂_t μ + div(μ X[μ]) = 0 with the self-attention field
X[μ] of Geshkovski, Letrouit, Polyanskiy & Rigollet (MATH.md §2) on the circle
and on S², and the R^d variants of Castin, Ablin, Carrillo & Peyré (§5),
solved as a density on a grid, with a resolution monitor that never returns
an unresolved solution.

Public objects
--------------
SelfAttention, MultiHeadAttention   the models on the sphere (``field``, ``energy``)
models.Softmax, L2, Sinkhorn, ...   the R^d attention variants of CACP (``field``)
CircleGrid                          n equispaced nodes on S¹ (FFT)
SphereGrid                          Gauss–Legendre grid on S² (spherical harmonics)
EuclideanGrid                       a box in R^d, d = 1, 2 (finite volumes)
SequenceGrid                        [0, 1] × S¹: positions × angles, for causal attention (``causal=True``)
Density                             a density on a grid (it carries its domain)
Frame                               a measure on a domain at a time: a Density, a LagrangianMeasure, a particle snapshot
solve, Solution                     time integration over representations (grid, panels, nodes) and its result
solve_radial                        pre-/peri-LN densities on S¹ × (0, ∞), direction × radius (``meanfield.cylinder``)
solve_zonal_radial                  the same on the zonal S^{d-1} × (0, ∞), any d (``meanfield.zonal_cylinder``)
frequencies                         natural frequencies on S¹: laws, the density on S¹ × R_ω (``frequencies.solve``)
stationary                          noisy zonal models: stationary states, critical noise, the branch
ResolutionError, ResolutionMonitor  what happens when a grid stops resolving
domains                             the domain layer (CIRCLE, SPHERE, EUCLIDEAN, SEQUENCE)
kernels                             compiled sums of the attention kernel (fast strategies)
exact                               closed-form solutions (oracles)
laws                                initial laws: von Mises–Fisher mixtures (density, exact samples)
gaussian                            exact Gaussian closures in R^d
load                                a results file of ``meanfield run`` / ``sweep`` (xarray)
study                               study files, runs and sweeps (``import meanfield.study``)

Layers: docs/DESIGN.md, whose list is the ``layers`` import contract of pyproject.toml (checked by
the tests). Nothing here imports the study layer, ``particles`` or ``validation``.
"""

from importlib.metadata import PackageNotFoundError, version

from . import domains, exact, frequencies, gaussian, laws
from .density import Density, Frame
from .domains import CircleGrid, EuclideanGrid, SequenceGrid, SphereGrid
from .io import load
from .models import MultiHeadAttention, SelfAttention
from .monitor import ResolutionError, ResolutionMonitor
from .solve import Solution, Status, solve
from .cylinder import solve_radial
from .zonal_cylinder import solve_zonal_radial

try:
    __version__ = version("meanfield")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

__all__ = [
    "SelfAttention",
    "MultiHeadAttention",
    "CircleGrid",
    "SphereGrid",
    "EuclideanGrid",
    "SequenceGrid",
    "Density",
    "Frame",
    "solve",
    "solve_radial",
    "solve_zonal_radial",
    "Solution",
    "Status",
    "ResolutionError",
    "ResolutionMonitor",
    "domains",
    "exact",
    "frequencies",
    "gaussian",
    "laws",
    "load",
    "__version__",
]
