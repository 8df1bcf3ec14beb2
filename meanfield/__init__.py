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
Density                             a density on a grid
solve, Solution                     time integration and its result
ResolutionError, ResolutionMonitor  what happens when a grid stops resolving
exact                               closed-form solutions (oracles)
gaussian                            exact Gaussian closures in R^d
study, load                         study files, results files (NetCDF), sweeps
"""

from importlib.metadata import PackageNotFoundError, version as _version

from . import exact, gaussian
from .density import Density
from .grids import CircleGrid, EuclideanGrid, SphereGrid
from .models import MultiHeadAttention, SelfAttention
from .monitor import ResolutionError, ResolutionMonitor
from .solve import Solution, Status, solve


def load(path, lazy: bool = False):
    """Read a results file of ``meanfield run`` / ``meanfield sweep`` as an xarray Dataset.

    See :func:`meanfield.study.load` (xarray is imported on first use).
    """
    from .study.results import load as _load

    return _load(path, lazy=lazy)


try:
    __version__ = _version("meanfield")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

__all__ = [
    "SelfAttention",
    "MultiHeadAttention",
    "CircleGrid",
    "SphereGrid",
    "EuclideanGrid",
    "Density",
    "solve",
    "Solution",
    "Status",
    "ResolutionError",
    "ResolutionMonitor",
    "exact",
    "gaussian",
    "load",
    "__version__",
]
