r"""A new domain is one package plus its registration (issue 47, item 3): a domain defined and registered here, in the
test alone, runs through :func:`meanfield.solve` (and :mod:`validation`) with no other file naming it.

The domain is the loop T¹_L = ℝ/Lℤ of circumference L = 3: the circle under another name with another period. Its
chart coordinate is the arclength φ ∈ [0, L), its points in R² are the unit vectors u(φ) = (cos 2πφ/L, sin 2πφ/L)
(so that attention on the circle moves them: its models' ``manifold`` is "sphere"), its geodesic distance is
(L/2π) × the angle, and a density on it is ρ_L(φ) with respect to dφ (uniform density 1/L).

The mathematics of the check. Tokens on the loop follow the same ODE as on the circle, u̇ = X[μ](u); with
θ = 2πφ/L the law μ is one measure whether written as ρ_L dφ or as ρ dθ, so ρ_L(φ, t) = (2π/L) ρ(2πφ/L, t). The
continuity equation on the loop, ∂_t ρ_L + ∂_φ(ρ_L φ̇) = 0 with φ̇ = (L/2π) θ̇, follows: ∂_φ = (2π/L) ∂_θ, so
∂_t ρ_L = (2π/L) ∂_t ρ. Its right-hand side below is written that way, from the circle's quadrature sums on the
same nodes (the domain's own business: how it discretises its equation), and the CFL step it asks for, spacing L/n
over max|φ̇|, is the circle's 2π/n over max|θ̇|: the loop's run takes the circle run's steps, and its values equal
(2π/L) × the circle's to round-off. W_1 on the loop is (L/2π) × W_1 on the circle between the same measures (the
cost scales).

Particles started from a :class:`particles.Snapshot` on the loop live on it: the same unit vectors under the same
field, so their trajectory is the circle's (bitwise, measured), read in the loop's lengths.

What the library needed (the rest is this file): ``validation`` compared every periodic domain of dimension 1 as
the 2π circle (a loop's W_1 came out wrong by 8e-3 with no error); it now asks the domain its period
(``volume``). ``particles.simulate`` took its domain from the model alone; a frame of points now starts the
particles on its own domain where the model moves that domain's points.

Error model: one step multiplies the values by L/2π and back, and the field's sums run in the same order: a few
ulps per step, n_steps × 8·EPS relative after n_steps steps (measured 1.2e-15 after 68 and 101 steps), so 1e-12
leaves a margin of more than 100×. W_1 on the loop and (L/2π) × W_1 on the circle differ by the angles' scaling,
a few ulps (measured 2e-16 for W_1 ≈ 0.03).
"""

import numpy as np
import pytest

import meanfield as mf
from meanfield.domains import CIRCLE, CircleGrid, Domain, Grid, register, unregister
from meanfield.domains.circle.continuity import CircleQuadrature
from tests.helpers import EPS
from validation import distance, w1

L = 3.0
SCALE = L / (2.0 * np.pi)  # dφ/dθ


class LoopGrid(Grid):
    """n equispaced nodes φ_j = Lj/n of the loop, the nodal values of ρ_L (w.r.t. dφ)."""

    dim = 2

    def __init__(self, n: int):
        self.n = int(n)
        self.circle = CircleGrid(self.n)  # the same nodes as unit vectors
        self.phi = L * np.arange(self.n) / self.n
        self.points = self.circle.points
        self.weights = np.full(self.n, L / self.n)
        self.spacing = L / self.n

    @property
    def domain(self):
        return LOOP

    @property
    def shape(self):
        return (self.n,)

    def integrate(self, values):
        return np.sum(values, axis=-1) * (L / self.n)

    def refined(self, factor: int = 2):
        return LoopGrid(self.n * factor)

    def resample(self, values, n: int):
        return self.circle.resample(values, n)  # the trigonometric interpolant: the same in φ as in θ

    def interpolate(self, values, points):
        return self.circle.interpolate(values, points)

    def resolution(self, values, tail_tol: float, *, spectrum=None):
        return self.circle.resolution(values, tail_tol)  # the tail relative to the mean: scale-free

    def coordinates(self):
        return {"phi": (self.phi.copy(), {"long_name": "arclength φ"})}

    @classmethod
    def from_coordinates(cls, coordinates):
        return cls(len(coordinates["phi"]))

    def coarsened(self, values):
        raise NotImplementedError("no coarsened measure on the loop in this test")

    def __repr__(self):
        return f"LoopGrid(n={self.n}, L={L:g})"


class LoopRate:
    """∂_t ρ_L = (2π/L) × the circle's ∂_t ρ at ρ = (L/2π) ρ_L; speeds φ̇ = (L/2π) θ̇ and ∂_φ φ̇ = ∂_θ θ̇ (module
    docstring)."""

    strategy = "quadrature"

    def __init__(self, grid: LoopGrid, field):
        self.circle = CircleQuadrature(grid.circle, field)

    def rate_and_speeds(self, values):
        rate, vmax, strain = self.circle.rate_and_speeds(SCALE * values)
        return rate / SCALE, SCALE * vmax, strain

    def rate(self, values):
        return self.rate_and_speeds(values)[0]

    def speeds(self, values):
        vmax, strain = self.circle.speeds(SCALE * values)
        return SCALE * vmax, strain


class Loop(Domain):
    """The loop T¹_L = ℝ/Lℤ (module docstring): points unit vectors of R², chart the arclength φ."""

    name = "loop"
    description = f"loop R/{L:g}Z"
    dim = 2
    grid_type = LoopGrid
    manifold = "sphere"  # attention on the circle moves its points
    volume = L
    periodic = True
    unit_vectors = True
    on_sphere = True
    coordinate_label = "φ"

    # geometry: the circle's, lengths scaled by L/2π
    def check_points(self, x, name):
        return CIRCLE.check_points(x, name)

    def contains(self, x, atol=1e-8):
        return CIRCLE.contains(x, atol)

    def project(self, x, v):
        return CIRCLE.project(x, v)

    def retract(self, y):
        return CIRCLE.retract(y)

    def distance(self, xa, xb):
        return SCALE * CIRCLE.distance(xa, xb)

    def chord_distance(self, chord):
        return SCALE * CIRCLE.chord_distance(chord)

    def coordinates(self, x):
        return SCALE * CIRCLE.coordinates(x)

    def brownian_step(self, x, tau, rng):
        return CIRCLE.brownian_step(x, tau / SCALE**2, rng)  # Δ_φ = (2π/L)² Δ_θ

    def intrinsic_dimension(self, d):
        return 1

    def symbol(self, d=None):
        return f"T¹ (L = {L:g})"

    def check_dimension(self, d, densities):
        if d not in (None, 2):
            raise ValueError(f"the loop lives in R², not R^{d}.")
        return 2

    # densities
    def grid_strategies(self, model, grid):
        return {"quadrature": None}

    def continuity(self, model, grid, strategy, field=None, drift=None):
        if model is None or drift is not None:
            raise ValueError("the loop's right-hand side sums attention alone (no feed-forward drift here)")
        return LoopRate(grid, model.field if field is None else field)

    def make_grid(self, parameters):
        return LoopGrid(parameters["n"])

    def sample(self, density, shape, rng):
        raise NotImplementedError("no sampling on the loop in this test")

    def plot(self, density, ax=None, **kwargs):
        raise NotImplementedError("no figures of the loop in this test")

    def plot_points(self, x, ax, **kwargs):
        raise NotImplementedError("no figures of the loop in this test")

    def plot_solution(self, solution, title=None):
        raise NotImplementedError("no figures of the loop in this test")


LOOP = Loop()


@pytest.fixture
def loop():
    """The loop registered for one test, removed after it (the domain layer's one table)."""
    register(LOOP)
    yield LOOP
    unregister(LOOP.name)


def _density(grid, kappa=2.0, mu=1.0):
    """A von Mises law about θ = μ, as values of ρ dθ on the circle's grid or of ρ_L dφ on the loop's (unit mass)."""
    theta = 2.0 * np.pi * np.arange(grid.n) / grid.n
    v = np.exp(kappa * np.cos(theta - mu))
    return mf.Density(grid, v / grid.integrate(v))


@pytest.mark.parametrize("model", [mf.SelfAttention(2.0), mf.SelfAttention(1.0, normalized=False)],
                         ids=["SA", "USA"])
def test_the_loop_runs_through_solve_as_the_circle_after_the_change_of_variable(loop, model):
    n, t_eval = 128, [0.0, 0.25, 0.5]
    on_loop = mf.solve(model, _density(LoopGrid(n)), (0.0, 0.5), t_eval, refine=False, strategy="quadrature")
    on_circle = mf.solve(model, _density(CircleGrid(n)), (0.0, 0.5), t_eval, refine=False, strategy="quadrature",
                         representation="grid")
    assert mf.domains.get("loop") is LOOP  # registered: the domain layer's table knows it by name
    assert on_loop.success and on_circle.success, (on_loop.message, on_circle.message)
    assert on_loop.nsteps == on_circle.nsteps > 10  # the same CFL steps (module docstring)
    for k in range(len(t_eval)):
        f, g = on_loop.frame(k), on_circle.frame(k)
        assert f.domain is LOOP and f.t == g.t == t_eval[k]
        np.testing.assert_allclose(f.values, g.values / SCALE, rtol=1e-12, atol=1e-12 * np.max(g.values))
    # mass ∫ρ_L dφ conserved to round-off (the spectral flux has no k = 0 part), at every step
    assert np.max(np.abs(on_loop.mass_steps - 1.0)) <= 64 * n * EPS
    # the law moved (SA/USA with c > 0 concentrate it): the check above is not of a frozen density
    assert np.max(np.abs(on_loop.frame(-1).values - on_loop.frame(0).values)) > 1e-2 * np.max(on_loop.frame(0).values)


def test_validation_measures_the_loop_by_its_own_metric(loop):
    """W_1 on the loop is (L/2π) × W_1 on the circle between the same measures (the cost scales): a loop density
    (through its interpolant's CDF, as the circle's) against points of the loop, and two point sets. The two sides
    differ by the scaling's round-off, a few ulps of each angle (W_1 is 1-Lipschitz in them) and of the value."""
    n = 32
    on_loop, on_circle = _density(LoopGrid(n)), _density(CircleGrid(n))
    x = CIRCLE.retract(np.random.default_rng(4).normal(size=(25, 2)))
    y = CIRCLE.retract(np.random.default_rng(5).normal(size=(40, 2)))
    for loop_w1, circle_w1 in ((w1(on_loop, x), w1(on_circle, x)),
                               (w1(x, y, domain=LOOP), w1(x, y, domain=CIRCLE))):
        assert circle_w1 > 0.05
        assert abs(loop_w1 - SCALE * circle_w1) <= 16 * EPS * max(1.0, loop_w1), (loop_w1, SCALE * circle_w1)
    # the certified bound of a quantised loop density is the circle's π/M in the loop's lengths
    d = distance(on_loop, x, cells=1 << 12)
    assert d.method == "circle" and d.bound == pytest.approx(SCALE * np.pi / (1 << 12), rel=1e-15)


def test_particles_on_the_loop_are_the_circles_particles_measured_in_its_lengths(loop):
    """Particles started from a snapshot on the loop live on it (``Trajectory.domain``): the same unit vectors move
    by the same field as on the circle (one step size, one sum), so the trajectories agree to round-off, and W_1
    between the loop's density and its particles is (L/2π) × the circle's at every output."""
    import particles as pt
    from particles import Snapshot

    model, n, t_eval = mf.SelfAttention(2.0), 128, [0.0, 0.25, 0.5]
    x0 = pt.sample(_density(CircleGrid(64)), 200, rng=9)
    on_loop = pt.simulate(model, Snapshot(x0, domain=LOOP), t_eval, dt=0.01, strategy="pairwise", progress=False)
    on_circle = pt.simulate(model, x0, t_eval, dt=0.01, strategy="pairwise", progress=False)
    assert on_loop.domain is LOOP and on_circle.domain is CIRCLE
    assert np.max(np.abs(on_loop.x - on_circle.x)) <= 64 * EPS
    rho_loop = mf.solve(model, _density(LoopGrid(n)), (0.0, 0.5), t_eval, refine=False, strategy="quadrature")
    rho_circle = mf.solve(model, _density(CircleGrid(n)), (0.0, 0.5), t_eval, refine=False, strategy="quadrature",
                          representation="grid")
    for k in range(len(t_eval)):
        snap = on_loop.frame(k)
        assert snap.domain is LOOP
        a, b = w1(rho_loop.frame(k), snap, cells=1 << 14), w1(rho_circle.frame(k), on_circle.frame(k), cells=1 << 14)
        # both sides' particle angles agree within 64 EPS (above), the densities within 1e-15 relative (first test)
        assert abs(a - SCALE * b) <= SCALE * (64 * EPS + 1e-13), (a, SCALE * b)
