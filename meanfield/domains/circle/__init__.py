"""The circle S¹: geometry, grid, Fourier transforms, right-hand sides, energy, sampling, plots.

:data:`CIRCLE` is the :class:`~meanfield.domains.base.Domain` everything above
this layer dispatches through.
"""

from __future__ import annotations

import numpy as np

from ..base import Crossover, Domain, PointSums, point_sums_pay_off, register, sphere_of_dim
from ..gegenbauer import ZonalBasis
from ..panels import PanelSupport
from ..sphere.geometry import UnitSphereGeometry, check_on_sphere, on_sphere
from ..zonal import energy_beta, zonal_strategies
from . import (
    energy as _energy, lagrangian, laws as _laws, plotting as _plotting, point_sums as _sums, sampling as _sampling,
)
from .continuity import CircleQuadrature, CircleSpectral, bessel_multipliers
from .geometry import angles_to_points, points_to_angles, tangents
from .grid import CircleGrid
from .panels import CircleField, CirclePanels
from .sampling import cdf

#: Particles: ``strategy="auto"`` takes the O(nL) Fourier sums (``point_sums``) from n >= max(192, 9 (L + 1))
#: particles, L = circle_degree(β) (24 at β = 4: from 225), where their error bound holds (``POINT_SUMS_TOLERANCE``).
#: Measured by ``python benchmarks/bench_cost_curves.py --crossover`` (their field at the n particles against
#: ``kernels.pairwise_field``'s, one thread, timed alternately in one process; 2026-12-02, 2-core Intel Xeon VM
#: (AVX-512) under load 4–7): n* ≈ 195, 104, 116, 344, 613 at β = 0.5, 1, 4, 16, 64 (97, 88, 143, 337, 560 at load
#: 1), i.e. ~5–8 (L + 1) (the sums cost ~n L against the pairs' n²; below ~200 the two are within 10 % of each
#: other). After the point sums' rewrite for 10⁶ points and the 512-bit pair kernels: n* ≈ 64 (the sweep's
#: smallest n), 64, 64, 123, 385 (load ~7), so the rule stays at or above every crossover measured. After the point
#: sums' 512-bit kernels (the million-particle S¹ step, 2026-12-02, load 5–7, point/pair at n = 48–384): below 0.5
#: for β <= 4, 0.4–0.7 at β = 16, 0.75–2 at β = 64 (its rule: from 684): the rule unchanged. Re-measure and update
#: this one line when either sum changes speed.
SPECTRAL_CROSSOVER = Crossover(floor=192, per_degree=9.0)

__all__ = ["CIRCLE", "Circle", "CircleGrid", "CircleSpectral", "CircleQuadrature", "bessel_multipliers",
           "angles_to_points", "points_to_angles", "tangents", "cdf"]


class Circle(UnitSphereGeometry, Domain):
    """The circle S¹ ⊂ R² (MATH.md §2.1): SA/USA and any Q, K, V in d = 2."""

    name = "circle"
    positions = "sequence"  # the domain of its tokens with positions (causal attention)
    description = "circle S¹"
    dim = 2
    grid_type = CircleGrid
    default_max_n = 16384
    quadrature_of_any_field = True  # CircleQuadrature/SphereQuadrature sum ``field`` at the nodes (nGPT's too)
    repulsion_refusal = None  # its grid takes β < 0: multipliers I_k(β) = (−1)^k I_k(|β|), degree from |β|
    volume = 2.0 * np.pi
    periodic = True
    coordinate_label = "θ"
    initial_laws = ("uniform", "uniform-noise", "von-mises-fisher", "poisson")
    grid_parameters = {"n": True}
    panels = PanelSupport(CirclePanels, CircleField, order=16, min_width=2.0 * np.pi * 2.0 ** -44, tol=1e-14,
                          max_points=2 ** 20)

    of_dim = staticmethod(sphere_of_dim)  # the unit spheres are one family: S^{d-1} for d >= 3

    def check_points(self, x, name):
        x = check_on_sphere(x, name)
        if x.shape[-1] != 2:
            raise ValueError(f"`{name}` must hold points of the circle (unit vectors in R²), got shape {x.shape}.")
        return x

    def contains(self, x, atol=1e-8):
        x = np.asarray(x, dtype=float)
        return x.ndim >= 1 and x.shape[-1] == 2 and on_sphere(x, atol)

    @staticmethod
    def symbol(d):
        return "S¹"

    @staticmethod
    def intrinsic_dimension(d):
        return 1

    @staticmethod
    def brownian_step(x, tau, rng):
        r"""Brownian motion on S¹ with generator ∂²_θ run for time τ, exactly: every point turned by α = √(2τ) Z,
        Z ~ N(0, 1) (E cos kα = e^{−k²τ}, the heat kernel's), the unit circle kept to round-off."""
        x = np.asarray(x, dtype=float)
        a = np.sqrt(2.0 * tau) * rng.standard_normal(x.shape[:-1])
        c, s = np.cos(a), np.sin(a)
        return np.stack([c * x[..., 0] - s * x[..., 1], s * x[..., 0] + c * x[..., 1]], axis=-1)

    @staticmethod
    def point_sums(d):
        return _POINT_SUMS if d == 2 else None

    @staticmethod
    def zonal_basis(M):
        """The zonal basis of d = 2: cos kθ (normalised) at the midpoints θ_j = π(j + ½)/M of [0, π]."""
        return ZonalBasis(2, M)

    @staticmethod
    def symmetry_blocks(grid, orders=()):
        """The blocks of a linearisation about an even state (:func:`meanfield.analysis.stationary.stability`), in the
        Laplacian's coordinates (the rfft coefficients): "even" (cos kθ, real parts) and "odd" (sin kθ, imaginary
        parts), k = 1..n/2 − 1 (the Nyquist mode has no sine); the rotations are in "odd"."""
        K = grid.n // 2 - 1

        def units(unit):
            out = []
            for k in range(1, K + 1):
                e = np.zeros(grid.n // 2 + 1, dtype=complex)
                e[k] = unit
                out.append(e)
            return out

        return ({"even": (units(1.0), lambda col: col[1:K + 1].real),
                 "odd": (units(1j), lambda col: (col[1:K + 1] / 1j).real)}, "odd")

    @staticmethod
    def polar_cosine(points, axis=None):
        """⟨x, e⟩ about ``axis`` (default e_1 = (1, 0): the cosine of the angle θ)."""
        x = np.asarray(points, dtype=float)
        e = np.array([1.0, 0.0]) if axis is None else np.asarray(axis, dtype=float) / np.linalg.norm(axis)
        return np.clip(x @ e, -1.0, 1.0)

    @staticmethod
    def probe_grid(grid):
        return CircleGrid(max(512, grid.n if grid is not None else 0))

    @staticmethod
    def grid_strategies(model, grid):
        return zonal_strategies(model)

    @staticmethod
    def continuity(model, grid, strategy, field=None, drift=None):
        if model is None:  # no attention: the drift alone
            return CircleQuadrature(grid, None, drift)
        if strategy == "spectral":
            z = model.zonal
            return CircleSpectral(grid, z.beta, z.c, model.normalized, drift)
        return CircleQuadrature(grid, model.field if field is None else field, drift)

    uniform_noise = staticmethod(_laws.uniform_noise)
    poisson = staticmethod(_laws.poisson)
    sample_poisson = staticmethod(_laws.sample_poisson)

    @staticmethod
    def make_grid(parameters):
        return CircleGrid(parameters["n"])

    @staticmethod
    def check_dimension(d, densities):
        if d not in (None, 2):
            raise ValueError(f"the circle lives in R², so dimension must be 2, got {d}")
        return 2

    # the sphere's geometry in d = 2 (the mixin), the angle as coordinate; its own energy, sampling, figures
    coordinates = staticmethod(points_to_angles)
    energy_beta = staticmethod(energy_beta)
    excess_energy = staticmethod(_energy.excess_energy)
    energy = staticmethod(_energy.energy)
    pair_fraction = staticmethod(_energy.pair_fraction)
    sample = staticmethod(_sampling.sample)
    plot = staticmethod(_plotting.plot)
    plot_points = staticmethod(_plotting.plot_points)
    plot_solution = staticmethod(_plotting.plot_solution)
    chart = lagrangian  # how points of the Lagrangian measure move and carry the density (docs/MATH.md §6)


_POINT_SUMS = PointSums(_sums.circle_degree, _sums.circle_spectral_field, _sums.circle_spectral_divergence,
                        _sums.circle_excess_energy,
                        point_sums_pay_off(SPECTRAL_CROSSOVER, _sums.circle_degree, _sums.self_query_bound),
                        directions=True)

CIRCLE = register(Circle())
