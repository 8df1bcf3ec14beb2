"""The sphere S² (S^{d-1} for particles): geometry, grid, transforms, right-hand sides, energy, sampling, plots.

:data:`SPHERE` is the :class:`~meanfield.domains.base.Domain` everything above
this layer dispatches through. Particles live on S^{d-1} for any d >= 3; densities on S² (d = 3).
"""

from __future__ import annotations

import numpy as np

from ..base import SUPERSCRIPT, Crossover, Domain, PointSums, point_sums_pay_off, register, sphere_of_dim
from ..gegenbauer import ZonalBasis
from ..panels import PanelSupport
from ..zonal import energy_beta, zonal_refusal
from . import (
    energy as _energy, lagrangian, laws as _laws, plotting as _plotting, point_sums as _sums, sampling as _sampling,
)
from .continuity import SphereQuadrature, SphereSpectral, funk_hecke
from .geometry import (
    UnitSphereGeometry, check_on_sphere, geodesic, normalise, on_sphere, project_tangent, retract, spherical,
)
from .grid import SphereGrid
from .moments import SphereMoments, moments_refusal
from .panels import SphereField, SpherePanels
from .transforms import BACKENDS, DuccBackend, PyshtoolsBackend, ShtnsBackend, dealiased_degree, default_backend

#: Particles: ``strategy="auto"`` takes the O(nL²) harmonic sums (``point_sums``) from n >= max(2048, 19 (L + 1))
#: particles, L = sphere_degree(β) (26 at β = 4: from 2048), where their error bound holds (``POINT_SUMS_TOLERANCE``).
#: Measured by ``python benchmarks/bench_cost_curves.py --crossover`` (their field at the n particles against
#: ``kernels.pairwise_field``'s, one thread, timed alternately in one process; 2026-12-02, 2-core Intel Xeon VM
#: (AVX-512)): n* ≈ 819, 1742, 1879, 1989, 2709 at β = 1, 4, 16, 64, 256 (load 1, before the point sums' rewrite
#: for 10⁶ points and the 512-bit pair kernels); after both, n* ≈ 1189, 1789, 1876, 2008, 3058 (load ~7). Below
#: 4096 points and queries the sums run on compiled recurrences, which lose to the pairs for β >= 4; from there
#: ducc0's non-uniform transforms (``point_sums.NONUNIFORM_FROM``) cost 0.3–0.7 of the pairs at n = 2048 for
#: β <= 64, and their O(L² log L) part moves the crossover to ~19 (L + 1) at large β. Re-measure and update this
#: one line when either sum changes speed.
SPECTRAL_CROSSOVER = Crossover(floor=2048, per_degree=19.0)

__all__ = ["SPHERE", "Sphere", "SphereGrid", "SphereSpectral", "SphereQuadrature", "SphereMoments", "funk_hecke",
           "project_tangent", "retract", "normalise", "check_on_sphere", "geodesic", "spherical", "BACKENDS",
           "DuccBackend", "PyshtoolsBackend", "ShtnsBackend", "default_backend"]


class Sphere(UnitSphereGeometry, Domain):
    """The unit sphere S^{d-1} ⊂ R^d, d >= 3 (MATH.md §1–2): densities on S², particles in any d."""

    name = "sphere"
    positions = "sequence"  # the domain of its tokens with positions (causal attention)
    description = "sphere S^(d-1)"
    grid_type = SphereGrid
    projection = "mollweide"
    colorbar_orientation = "horizontal"  # under the Mollweide map
    default_max_n = 256
    quadrature_of_any_field = True  # SphereQuadrature sums ``field`` at the nodes (nGPT's too)
    volume = 4.0 * np.pi
    coordinate_label = "(colatitude, longitude)"
    initial_laws = ("uniform", "uniform-noise", "von-mises-fisher", "poisson")
    grid_parameters = {"lmax": True, "backend": False}
    # 2^16 points: where clusters form the panels refine without end along the separatrices between them
    # (docs/MATH.md §6), reaching 2^16 within seconds of the hand-over; a chain goes on with fixed nodes from there
    panels = PanelSupport(SpherePanels, SphereField, order=12, min_width=0.5 * np.pi * 2.0 ** -42, tol=1e-10,
                          max_points=2 ** 16)

    of_dim = staticmethod(sphere_of_dim)  # the unit spheres are one family: the circle for d = 2

    def check_points(self, x, name):
        x = check_on_sphere(x, name)
        if x.shape[-1] < 3:
            raise ValueError(f"`{name}` must hold points of S^(d-1) with d >= 3 (d = 2 is the circle), got shape "
                             f"{x.shape}.")
        if self.dim is not None and x.shape[-1] != self.dim:
            raise ValueError(f"`{name}` must hold points of S^{self.dim - 1} (unit vectors in R^{self.dim}), got "
                             f"shape {x.shape}.")
        return x

    @staticmethod
    def map_values(density):
        """The density's synthesis on the longitude–latitude grid of its Mollweide map."""
        from .plotting import sphere_map

        return sphere_map(density)[2]

    def contains(self, x, atol=1e-8):
        x = np.asarray(x, dtype=float)
        return x.ndim >= 1 and x.shape[-1] >= 3 and on_sphere(x, atol)

    @staticmethod
    def symbol(d):
        return "S" + str(d - 1).translate(SUPERSCRIPT)

    @staticmethod
    def intrinsic_dimension(d):
        return d - 1

    @staticmethod
    def point_sums(d):
        return _POINT_SUMS if d == 3 else None

    @staticmethod
    def zonal_basis(M):
        """The zonal basis of S² (densities are solved on S²): the Legendre polynomials (normalised) at the
        Gauss–Legendre nodes."""
        return ZonalBasis(3, M)

    @staticmethod
    def symmetry_blocks(grid, orders=(0, 1, 2)):
        """The blocks of a linearisation about an axisymmetric state (:func:`meanfield.analysis.stationary.stability`), in
        the Laplacian's coordinates (the c_lm): one per azimuthal order m in ``orders`` ("m=0", "m=1", ...;
        degrees max(m, 1)..lmax, the cosine parts); the rotations are in "m=1"."""
        L = grid.lmax
        blocks = {}
        for m in orders:
            ls = np.arange(max(m, 1), L + 1)
            es = []
            for l in ls:
                e = np.zeros((2, L + 1, L + 1))
                e[0, l, m] = 1.0
                es.append(e)
            blocks[f"m={m}"] = (es, lambda col, ls=ls, m=m: col[0, ls, m])
        return blocks, "m=1"

    @staticmethod
    def polar_cosine(points, axis=None):
        """⟨x, e⟩ about ``axis`` (default the north pole e_d: the cosine of the colatitude)."""
        x = np.asarray(points, dtype=float)
        if axis is None:
            return np.clip(x[..., -1], -1.0, 1.0)
        e = np.asarray(axis, dtype=float)
        return np.clip(x @ (e / np.linalg.norm(e)), -1.0, 1.0)

    @staticmethod
    def probe_grid(grid):
        return SphereGrid(max(48, grid.lmax if grid is not None else 0))

    @staticmethod
    def grid_strategies(model, grid):
        """Zonal models: the spectral strategy; any self-attention: the moment generating function where its
        degree and size allow (:mod:`.moments`); always the quadrature sums."""
        return {"spectral": zonal_refusal(model),
                "moments": moments_refusal(model, grid.lmax, dealiased_degree(grid.lmax)),
                "quadrature": None}

    @staticmethod
    def continuity(model, grid, strategy, field=None, drift=None):
        if model is None:  # no attention: the drift alone
            return SphereQuadrature(grid, None, drift)
        field = model.field if field is None else field
        if strategy == "spectral":
            z = model.zonal
            return SphereSpectral(grid, z.beta, z.c, model.normalized, drift=drift)
        if strategy == "moments":
            # a Transformer here is normalised on the sphere (nGPT): the moments sum its attention's average A,
            # which the Transformer turns into its velocity (α P_xA/|A|)
            velocity = getattr(model, "velocity_from_average", None)
            return SphereMoments(grid, model.attention if velocity else model, field, drift=drift, velocity=velocity)
        return SphereQuadrature(grid, field, drift)

    uniform_noise = staticmethod(_laws.uniform_noise)
    poisson = staticmethod(_laws.poisson)
    sample_poisson = staticmethod(_laws.sample_poisson)

    @staticmethod
    def make_grid(parameters):
        return SphereGrid(parameters["lmax"], backend=parameters.get("backend"))

    @staticmethod
    def check_dimension(d, densities):
        d = 3 if d is None else d
        if d < 3:
            raise ValueError(f"the sphere S^(d-1) needs d >= 3 (d = 2 is the circle), got {d}")
        if densities and d != 3:
            raise ValueError(f"densities on the sphere are solved on S² (d = 3), got {d}; drop [grid] to run "
                             "particles only")
        return d

    coordinates = staticmethod(spherical)
    energy_beta = staticmethod(energy_beta)
    excess_energy = staticmethod(_energy.excess_energy)
    energy = staticmethod(_energy.energy)
    pair_fraction = staticmethod(_energy.pair_fraction)
    sample = staticmethod(_sampling.sample)
    plot = staticmethod(_plotting.plot)
    plot_points = staticmethod(_plotting.plot_points)
    plot_solution = staticmethod(_plotting.plot_solution)
    chart = lagrangian  # how points of the Lagrangian measure move and carry the density (docs/MATH.md §6)


_POINT_SUMS = PointSums(_sums.sphere_degree, _sums.sphere_spectral_field, _sums.sphere_spectral_divergence,
                        _sums.sphere_excess_energy,
                        point_sums_pay_off(SPECTRAL_CROSSOVER, _sums.sphere_degree, _sums.self_query_bound),
                        directions=True)

SPHERE = register(Sphere())
