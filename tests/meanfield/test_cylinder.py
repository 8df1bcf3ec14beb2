"""Pre- and peri-LN densities on S¹ × (0, ∞) (meanfield.solvers.cylinder; docs/MATH.md §10.1).

Asserted: the density's speeds are the particles' (particles.velocity at tokens x = rθ over the grid measure of the
directions, pre and peri, SA and USA, several heads, Q = qI, K = kI, V = cI); the mass is conserved to 1e-13; a law
whose directions are uniform keeps them uniform to round-off and moves every radius by r ↦ r + αt (α = c I₁(β)/I₀(β)
pre-LN SA, c I₁(β) USA, 1 peri-LN) — the density converges to that exact solution at second order in Δs; second
order by self-convergence on a law that turns and clusters; the moments (∫e^{iθ}dρ̄, E r, E x) converge at second
order to those of a weighted Lagrangian reference (particles.simulate on a tensor quadrature of ρ0, spectrally
accurate); the exact 1-D W1 of the script against scipy; iid particles approach the density at the rate N^{-1/2}
within its 95 % interval (slow); bad input refused with the reason.
"""

import numpy as np
import pytest
from scipy.special import ive

import particles as pt
from meanfield.solvers.cylinder import CylinderGrid, RadiusRangeError, solve_radial, velocity
from meanfield.models import MultiHeadAttention, Normalization, SelfAttention, Transformer
from meanfield.integrate.monitor import ResolutionError, ResolutionMonitor

S0, SIGMA = 2.0, 0.25  # s = log r ~ N(S0, SIGMA²) for the smooth laws below
RADII = (np.exp(-0.5), np.exp(4.5))


def gauss(s):
    return np.exp(-0.5 * ((s - S0) / SIGMA) ** 2) / (SIGMA * np.sqrt(2 * np.pi))


def turning(theta, s):
    """A law that turns and clusters: von Mises (κ = 2) directions whose sin 2θ part depends on the radius."""
    return np.exp(2.0 * np.cos(theta - 1.0)) * gauss(s) * (1.0 + 0.5 * np.sin(2 * theta) * np.tanh((s - S0) / SIGMA))


def uniform_directions(theta, s):
    """The directions' marginal exactly uniform (tanh((s − S0)/σ) g(s) is odd about S0), the joint law not."""
    return gauss(s) / (2 * np.pi) * (1.0 + 0.5 * np.sin(2 * theta) * np.tanh((s - S0) / SIGMA))


def model_of(kind, beta=1.0, **kw):
    return Transformer(SelfAttention(beta, **kw), normalization=kind)


def coarsened(values, factor):
    """Cell averages on cells ``factor`` times wider (exact for cell averages)."""
    return values.reshape(values.shape[0] // factor, factor, values.shape[1]).mean(axis=1)


# ------------------------------------------------------------------ the model is the particles'
@pytest.mark.parametrize("kind", ["pre", "peri"])
@pytest.mark.parametrize("attention", [
    SelfAttention(1.5),
    SelfAttention(0.7, normalized=False),
    SelfAttention(2.0, Q=2.0 * np.eye(2), K=0.5 * np.eye(2), V=-0.5 * np.eye(2)),
    MultiHeadAttention([SelfAttention(1.0), SelfAttention(3.0, V=0.4 * np.eye(2))]),
])
def test_speeds_are_those_of_the_particles(kind, attention):
    """(ṡ, θ̇) of the density at tokens x = rθ_j equal the particles' ẋ (particles.velocity, the model's own
    normalisation and sums) turned into ṙ/r = ⟨θ, ẋ⟩/r and θ̇ = ⟨θ^⊥, ẋ⟩/r, for the directions' law ρ̄ on the
    nodes as the weights 2πρ̄_j/n: attention reads the directions only, so every radius sees the same measure."""
    model = Transformer(attention, normalization=kind)
    n = 48
    theta = 2 * np.pi * np.arange(n) / n
    rho = np.exp(1.5 * np.cos(theta - 0.3)) * (1 + 0.4 * np.sin(3 * theta))
    rho /= rho.sum() * 2 * np.pi / n
    u = np.stack([np.cos(theta), np.sin(theta)], -1)
    perp = np.stack([-np.sin(theta), np.cos(theta)], -1)
    s = np.array([-0.7, 0.0, 1.3])
    ds, dth = velocity(model, rho, s)
    for i, r in enumerate(np.exp(s)):
        xdot = pt.velocity(model, r * u, weights=rho * 2 * np.pi / n, strategy="quadrature")
        # A summed two ways over 48 nodes (NumPy, compiled), peri-LN dividing by |A|: ~48 EPS Σ|terms|/(r|A|),
        # measured up to 7.3e-14 (AVX2; 6.4e-14 here)
        assert np.max(np.abs(ds[i] - np.sum(xdot * u, -1) / r)) <= 1e-12
        assert np.max(np.abs(dth[i] - np.sum(xdot * perp, -1) / r)) <= 1e-12


# ------------------------------------------------------------------ conservation
@pytest.mark.parametrize("kind, beta, kw", [("pre", 2.0, {}), ("peri", 1.0, {}), ("pre", 1.0, {"normalized": False})])
def test_mass_is_conserved_to_round_off(kind, beta, kw):
    """Σ ρ Δθ Δs stays 1 to 1e-13 at every step (max drift over the accepted steps) and output: the θ-divergence
    has its k = 0 coefficient exactly zero, the s-fluxes telescope and vanish at the two ends. (Peri-LN at β = 1:
    at β = κ = 2 the average A of the direction opposite the law's mean vanishes — the softmax weights of a von
    Mises law seen from its antipode are uniform — and A/|A| has a cone there.)"""
    sol = solve_radial(model_of(kind, beta, **kw), turning, (0.0, 1.0), [0.0, 0.5, 1.0], n_theta=64, n_s=128,
                       radii=RADII)
    assert sol.nsteps > 50
    assert sol.mass_drift <= 1e-13
    assert np.max(np.abs(sol.mass - 1.0)) <= 1e-13
    assert np.max(np.abs(sol.radius_masses.sum(axis=1) - 1)) <= 1e-13
    assert np.max(np.abs(sol.directions.sum(axis=1) * sol.grid.dtheta - 1)) <= 1e-13


# ------------------------------------------------------------------ exact solution: uniform directions
@pytest.mark.parametrize("kind, kw, alpha", [
    ("pre", {}, ive(1, 1.0) / ive(0, 1.0)),  # SA: A(θ) = c I₁(β)/I₀(β) θ for uniform directions
    ("pre", {"normalized": False}, ive(1, 1.0) * np.exp(1.0)),  # USA: A(θ) = c I₁(β) θ
    ("peri", {}, 1.0),  # A/|A| = θ
])
def test_uniform_directions_stay_uniform_and_radii_translate(kind, kw, alpha):
    """For a law whose directions' marginal is uniform, A(θ) = αθ: θ̇ = 0 and ṙ = α for every token, so the marginal
    stays uniform (to round-off here) and the exact density is ρ(θ, s, t) = ρ0(θ, s0) e^s/(e^s − αt),
    s0 = log(e^s − αt). The L1 error against its cell averages falls at second order in Δs (80, 160, 320 cells)."""
    model, T = model_of(kind, 1.0, **kw), 1.0

    def exact(theta, s):
        e = np.exp(s) - alpha * T
        inside = e > 0
        e = np.where(inside, e, 1.0)
        return np.where(inside, uniform_directions(theta, np.log(e)) * np.exp(s) / e, 0.0)

    errors = []
    for n_s in (80, 160, 320):
        sol = solve_radial(model, uniform_directions, (0.0, T), n_theta=16, n_s=n_s, radii=RADII, dt=5e-3,
                           monitor=ResolutionMonitor(neg_tol=1e-4))  # compared with the exact solution itself
        assert np.max(np.abs(sol.directions * 2 * np.pi - 1)) <= 1e-13
        g = sol.grid
        errors.append(np.sum(np.abs(sol.values[-1] - g.cell_averages(exact))) * g.dtheta * g.ds)
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all((orders > 1.9) & (orders < 2.1)), orders
    assert errors[-1] <= 1e-3


# ------------------------------------------------------------------ second order in Δs
@pytest.mark.parametrize("kind", ["pre", "peri"])
def test_second_order_in_the_radius_spacing(kind):
    """Self-convergence at t = 1 (n_θ = 64, dt fixed): the L1 differences of the cell averages between 80, 160
    and 320 cells (each restricted to the coarsest cells, exact for averages) fall by 4 per halving (measured
    with 640 cells too: orders 1.980, 1.995 pre-LN; 1.981, 1.995 peri-LN)."""
    model = model_of(kind, 1.0)
    values = [solve_radial(model, turning, (0.0, 1.0), n_theta=64, n_s=n_s, radii=RADII, dt=5e-3).values[-1]
              for n_s in (80, 160, 320)]
    g = CylinderGrid(64, 80, RADII)
    diffs = [np.sum(np.abs(coarsened(values[i + 1], 2 ** (i + 1)) - coarsened(values[i], 2 ** i))) * g.dtheta * g.ds
             for i in range(2)]
    orders = np.log2(np.array(diffs[:-1]) / diffs[1:])
    assert np.all((orders > 1.9) & (orders < 2.1)), orders


def lagrangian_moments(model, T, n_theta=32, n_s=28):
    """(∫e^{iθ}dρ̄, E r, E x as a complex number) at T of the Lagrangian reference: the tensor trapezoidal rule of ρ0
    (n_theta angles, n_s points over S0 ± 7σ; spectrally accurate for these smooth, fast-decaying laws) pushed by
    the flow as weighted particles (particles.simulate, DOP853 at rtol 1e-11)."""
    th = 2 * np.pi * np.arange(n_theta) / n_theta
    s = S0 + SIGMA * np.linspace(-7, 7, n_s)
    TH, SS = np.meshgrid(th, s)
    w = turning(TH, SS).ravel()
    w /= w.sum()
    x0 = (np.exp(SS)[..., None] * np.stack([np.cos(TH), np.sin(TH)], -1)).reshape(-1, 2)
    x = pt.simulate(model, x0, [0.0, T], method="dop853", rtol=1e-11, atol=1e-12, weights=w).x[-1]
    r = np.linalg.norm(x, axis=-1)
    z = x[:, 0] + 1j * x[:, 1]
    return np.array([w @ (z / r), w @ r, w @ z])


@pytest.mark.parametrize("kind", ["pre", "peri"])
def test_moments_converge_to_the_lagrangian_reference_at_second_order(kind):
    """The density's ∫e^{iθ}ρ̄ dθ, E r and E x at t = 0.5 against the weighted particles' (the same flow, by the
    particle code): errors fall by 4 per halving of Δs (80, 160, 320 cells); the reference itself changes by less
    than (1.3e-10, 3.6e-8, 5.0e-8) from 32 × 28 to 48 × 40 points (measured), 100 times below the finest error."""
    model, T = model_of(kind, 1.0), 0.5
    ref = lagrangian_moments(model, T)
    errors = []
    for n_s in (80, 160, 320):
        sol = solve_radial(model, turning, (0.0, T), n_theta=64, n_s=n_s, radii=RADII, dt=5e-3)
        g = sol.grid
        e = np.exp(1j * g.theta)
        z = sol.directions[-1] @ e * g.dtheta
        x = np.sum(sol.values[-1] * np.diff(g.r_edges)[:, None] * e) * g.dtheta  # Σ ρ_mj e^{iθ_j} ∫_cell e^s ds Δθ
        errors.append(np.abs(np.array([z, sol.mean_radius[-1], x]) - ref))
    errors = np.array(errors)
    orders = np.log2(errors[:-1] / errors[1:])
    assert np.all((orders > 1.9) & (orders < 2.1)), orders
    assert np.all(errors[-1] > 100 * np.array([1.3e-10, 3.6e-8, 5.0e-8]))  # not the reference's own error


# ------------------------------------------------------------------ outputs
def test_outputs_are_the_marginals_of_the_density():
    """The direction's marginal (a circle Density), the radius law (masses on [r_m, r_m+1], density in r, E r)
    and the order parameter, from the same values; the initial cell averages are ρ0's to Gauss–Legendre accuracy."""
    sol = solve_radial(model_of("pre"), turning, (0.0, 0.2), n_theta=64, n_s=80, radii=RADII)
    g = sol.grid
    marginal = sol.direction_marginal(0)
    assert marginal.grid.n == 64 and np.allclose(marginal.values, sol.directions[0], rtol=0, atol=0)
    assert np.allclose(sol.radius_density * np.diff(g.r_edges), sol.radius_masses, rtol=1e-14, atol=0)
    # the initial law: directions' marginal ∝ e^{2cos(θ−1)} (the sin 2θ part integrates to 0 over s)
    f = np.exp(2.0 * np.cos(g.theta - 1.0))
    assert np.max(np.abs(sol.directions[0] - f / (f.sum() * g.dtheta))) <= 1e-9
    from scipy.special import i0, i1
    assert abs(sol.order_parameter[0] - i1(2.0) / i0(2.0)) <= 1e-9
    assert sol.order_parameter[-1] > sol.order_parameter[0]  # SA with c > 0 clusters the directions
    # uniform directions: the law of log r is N(S0, σ²) (cell averages to 1e-12), E r = e^{S0 + σ²/2} to O(Δs²)
    sol = solve_radial(model_of("pre"), uniform_directions, (0.0, 0.1), n_theta=16, n_s=80, radii=RADII)
    assert np.max(np.abs(sol.log_radius_density[0] - CylinderGrid(16, 80, RADII).cell_averages(
        lambda th, s: gauss(s) + 0 * th)[:, 0])) <= 1e-12
    ratio = sol.mean_radius[0] / np.exp(S0 + SIGMA ** 2 / 2)
    assert 1e-2 * g.ds ** 2 <= abs(ratio - 1) <= g.ds ** 2  # second order: Σ ḡ_m ∫_cell e^s = ∫ g e^s + O(Δs²)


# ------------------------------------------------------------------ the mean-field limit (particles)
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pre", "peri"])
def test_particles_approach_the_density_at_rate_one_half(kind):
    """N iid tokens from ρ0 against the density at t = 1 (scripts/cylinder_meanfield_limit.py): W1 of the
    directions' laws and of the laws of log r fall like N^α with −½ inside the fitted 95 % interval, which is
    narrower than 0.5 (N = 250 … 4000, 5 repeats)."""
    from scripts.cylinder_meanfield_limit import run

    _, fits, sol = run([250, 500, 1000, 2000, 4000], 5, [0.0, 1.0], kind, seed=1)
    assert sol.mass_drift <= 1e-13
    for m in range(2):
        slope, (lo, hi) = fits[m][-1]
        assert lo <= -0.5 <= hi and hi - lo < 0.5, (m, slope, lo, hi)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("model, words", [
    (SelfAttention(1.0), "post-LN"),
    (Transformer(SelfAttention(1.0)), "post-LN keeps"),
    (Transformer(SelfAttention(1.0), normalization=Normalization("ngpt", alpha=0.5)), "nGPT"),
    (Transformer(SelfAttention(1.0), normalization=Normalization("mix", switch=1.0)), "Mix-LN"),
])
def test_sphere_variants_are_sent_to_the_sphere_solvers(model, words):
    with pytest.raises(ValueError, match=words) as e:
        solve_radial(model, turning, (0.0, 1.0), radii=RADII)
    assert "meanfield.solve" in str(e.value)


@pytest.mark.parametrize("attention, words", [
    (SelfAttention(1.0, Q=np.array([[1.0, 0.3], [0.0, 1.0]])), "not zonal"),
    (SelfAttention(1.0, V=np.diag([1.0, 0.5])), "not zonal"),
    (SelfAttention(1.0, Q=np.eye(2), K=-np.eye(2)), "not zonal"),
    (SelfAttention(1.0, noise=0.1), "noise"),
    (SelfAttention(1.0, Q=np.eye(3)), "R\\^3"),
])
def test_non_zonal_and_other_models_are_refused(attention, words):
    with pytest.raises(ValueError, match=words):
        solve_radial(Transformer(attention, normalization="pre"), turning, (0.0, 1.0), radii=RADII)


@pytest.mark.parametrize("radii", [(0.0, 5.0), (-1.0, 5.0), (2.0, 1.0), (1.0, np.inf)])
def test_radii_must_be_positive(radii):
    """r ≤ 0 is no radius: the density lives on s = log r."""
    with pytest.raises(ValueError, match="0 < r_min < r_max"):
        solve_radial(model_of("pre"), turning, (0.0, 1.0), radii=radii)


def test_bad_initial_laws_are_refused():
    model = model_of("pre")
    with pytest.raises(ValueError, match=">= 0"):
        solve_radial(model, lambda th, s: np.cos(th) * gauss(s), (0, 1), radii=RADII)
    with pytest.raises(ValueError, match="floating-point error"):
        solve_radial(model, lambda th, s: gauss(s) / (s - s), (0, 1), radii=RADII)
    values = np.ones((128, 256))
    values[3, 4] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        solve_radial(model, values, (0, 1), radii=RADII)
    with pytest.raises(ValueError, match=r"shape \(n_s, n_theta\)"):
        solve_radial(model, np.ones((10, 10)), (0, 1), radii=RADII)
    with pytest.raises(ValueError, match="zero mass"):
        solve_radial(model, lambda th, s: 0.0 * th * s, (0, 1), radii=RADII)
    with pytest.raises(ValueError, match="`n_theta` must be even"):
        solve_radial(model, turning, (0, 1), n_theta=63, radii=RADII)


def test_a_law_at_the_edge_is_refused_at_the_start():
    """ρ0 with mass in the outer cells: the zero-flux wall would hold it; refused with the interval to widen."""
    with pytest.raises(RadiusRangeError, match="Widen `radii`") as e:
        solve_radial(model_of("pre"), turning, (0, 1), radii=(np.exp(1.0), np.exp(4.5)))
    assert e.value.side == "inner" and e.value.solution is None and e.value.t == 0.0


def test_mass_leaving_the_interval_stops_the_run():
    """Uniform directions under peri-LN: every radius grows like r + t; an interval too short for the run stops it
    when mass reaches the outer guard cells, with the solution up to then (mass still 1 there) — never a law piled
    against the wall."""
    def narrow(theta, s):
        return (1 + 0.5 * np.sin(2 * theta) * np.tanh((s - 2.0) / 0.1)) * np.exp(-0.5 * ((s - 2.0) / 0.1) ** 2)

    with pytest.raises(RadiusRangeError, match="outer guard cells") as e:
        solve_radial(model_of("peri"), narrow, (0.0, 20.0), [0.0, 1.0, 20.0], n_theta=16, n_s=240,
                     radii=(np.exp(1.2), np.exp(2.8)))
    err = e.value
    assert err.side == "outer" and 0 < err.t < 20.0 and err.mass > 1e-10
    part = err.solution
    assert part.t[-1] == err.t and part.t[0] == 0.0 and np.max(np.abs(part.mass - 1)) <= 1e-13


def test_peri_without_a_direction_is_refused():
    """Peri-LN divides by |A|: uniform directions at β = 0 give A = 0 everywhere."""
    with pytest.raises(FloatingPointError, match="A/\\|A\\| is undefined"):
        solve_radial(model_of("peri", 0.0), uniform_directions, (0, 1), n_theta=16, radii=RADII)


def test_an_unresolved_density_stops_the_run():
    """Clustering sharpens the directions, and tokens at different radii turn at different speeds (θ̇ = v/r), which
    shears the law along s: at n_θ = 48, n_s = 160, β = 4 the run stops with ResolutionError (the negative part's
    mass or the angular tail past its threshold) carrying the resolved part; an initial law the angles do not
    resolve is refused at the start."""
    with pytest.raises(ResolutionError, match="refine n_s or n_theta|raise n_theta") as e:
        solve_radial(model_of("pre", 4.0), turning, (0.0, 5.0), [0.0, 1.0, 5.0], n_theta=48, n_s=160, radii=RADII)
    part = e.value.solution
    assert part is not None and part.t[-1] == e.value.t and part.t[:2].tolist() == [0.0, 1.0]
    assert np.max(np.abs(part.mass - 1)) <= 1e-13
    with pytest.raises(ResolutionError, match="`rho0`: the angular spectral tail") as e:
        solve_radial(model_of("pre"), lambda th, s: np.exp(20 * np.cos(th)) * gauss(s), (0, 1), n_theta=32,
                     radii=RADII)
    assert e.value.initial
