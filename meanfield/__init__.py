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

Layout (one subpackage per layer, top imports bottom; docs/DESIGN.md, whose list is the ``layers`` import
contract of pyproject.toml, checked by the tests):

    cli · study                          the command line; study files, runs, sweeps, figures
    plotting                             the figures' public entry points
    solvers/                             solve, depth (discrete layers), frequencies, cylinder, zonal_cylinder,
                                         transitions (sweeps and branches through solve)
    representations/ · lagrangian/       grid, panels, nodes; the chain; the Lagrangian measure
    integrate/                           the integrator, steppers, trackers and the resolution monitor
    analysis/                            exact (closed forms), gaussian (closures in R^d), stationary (states, branches)
    density · laws                       the Density and the Frame protocol; initial laws
    kernels/ · models/ · domains/        compiled sums and strategies; attention kinds and variants; the domains
    core/                                checks, numerics, interrupts, io (leaves)

The modules' earlier paths (``meanfield.exact``, ``meanfield.stationary``, ``meanfield.checks``, …: ``meanfield.MOVED``)
stay importable as aliases of their new homes. Nothing here imports the study layer, ``particles`` or ``validation``.
"""

import sys
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from . import domains, laws
from .analysis import exact, gaussian
from .solvers import frequencies
from .density import Density, Frame
from .domains import CircleGrid, EuclideanGrid, SequenceGrid, SphereGrid
from .core.io import load
from .models import MultiHeadAttention, SelfAttention
from .integrate.monitor import ResolutionError, ResolutionMonitor
from .solvers.solve import Solution, Status, solve
from .solvers.cylinder import solve_radial
from .solvers.zonal_cylinder import solve_zonal_radial

#: The root modules of earlier releases and where they now live (issue 47, item 7): ``import meanfield.exact`` and
#: ``from meanfield.stationary import branch`` keep working, as aliases in ``sys.modules`` of the new modules. Read as
#: ``meanfield.MOVED`` (the module's ``__getattr__``), kept out of ``dir(meanfield)`` with the import helpers.
_MOVED = {
    "checks": "core.checks", "numerics": "core.numerics", "interrupts": "core.interrupts", "io": "core.io",
    "exact": "analysis.exact", "gaussian": "analysis.gaussian", "stationary": "analysis.stationary",
    "solve": "solvers.solve", "depth": "solvers.depth", "frequencies": "solvers.frequencies",
    "cylinder": "solvers.cylinder", "zonal_cylinder": "solvers.zonal_cylinder", "transitions": "solvers.transitions",
    "monitor": "integrate.monitor", "strategies": "kernels.strategies",
}
for _old, _new in _MOVED.items():
    _module = import_module(f"{__name__}.{_new}")
    sys.modules.setdefault(f"{__name__}.{_old}", _module)
    if _old not in globals():  # ``meanfield.solve`` stays the function
        globals()[_old] = _module
del _old, _new, _module

try:
    __version__ = version("meanfield")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"
del sys, import_module, PackageNotFoundError, version  # import helpers, not the package's names (dir(meanfield))


def __getattr__(name):
    """``meanfield.MOVED``: the map of the earlier root modules to their new homes (a copy)."""
    if name == "MOVED":
        return dict(_MOVED)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
