"""Natural frequencies on the circle (docs/MATH.md §12, GLPR §7): the density on S¹ × R_ω against the
Ott–Antonsen reduction, the incoherent state's linear rates, the critical width, the quadratures, the resolution
checks and bad input."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import meanfield as mf
from meanfield.analysis import exact, stationary
from meanfield.solvers import frequencies as fq
from tests.helpers import EPS


def poisson(grid, a):
    return exact.wrapped_cauchy(grid.angles, a)


# ------------------------------------------------------------------------------------------------ Ott–Antonsen
@pytest.mark.parametrize("gamma, c, center, n, T", [
    (0.25, 1.0, 0.0, 256, 8.0),   # r grows to r_∞ = √(1 − 2γ/c)
    (0.35, 2.0, 0.7, 256, 6.0),   # V = 2I, frequencies centred at 0.7: z turns at 0.7
    (0.6, 1.0, 0.0, 64, 8.0),     # γ > c/2: the incoherent state attracts, r → 0
])
def test_pole_density_is_the_ott_antonsen_solution(gamma, c, center, n, T):
    """β = 0, Lorentzian g, a start independent of ω (the Poisson kernel f_{a0} for every ω: on the OA manifold,
    a(ω, 0) = a0 analytic in ω): the marginal's z(t) is the closed form of ż = (iω_0 − γ)z + (c/2)(z − |z|²z), to
    1e-10 in the complex z (phase included), with the pole quadrature (exact by the residue theorem). RK4 at
    dt = 0.01 (its error, ~1e-12 here, scales as dt⁴: the default CFL step 0.05 of the coarse grid gives 2e-9)."""
    g = mf.CircleGrid(n)
    a0 = 0.3 * np.exp(0.4j)
    t = np.linspace(0.0, T, 9)
    model = mf.SelfAttention(0.0, V=c * np.eye(2))
    sol = fq.solve(model, mf.Density(g, poisson(g, a0)), fq.Lorentzian(gamma, center), (0.0, T), t, dt=0.01)
    assert sol.status is mf.Status.SUCCESS, sol.message
    expected = exact.lorentzian_ott_antonsen(t, a0, gamma, c, center)
    assert np.max(np.abs(sol.z - expected)) < 1e-10
    assert np.max(np.abs(sol.mass - 1.0)) < 1e-14  # every node's mass to round-off
    assert sol.omega_error == 0.0  # the pole integrates free streaming exactly


def test_pole_density_reaches_the_ott_antonsen_limit():
    """r(t) → r_∞ = √(1 − 2γ/c): γ = 0.35, c = 1 (r_∞ = √0.3, a Poisson kernel resolved on 128 nodes) until the
    closed form is within 1e-12 of r_∞; the density's r equals r_∞ to 1e-10."""
    gamma, T = 0.35, 100.0
    g = mf.CircleGrid(128)
    sol = fq.solve(mf.SelfAttention(0.0), mf.Density(g, poisson(g, 0.2)), fq.Lorentzian(gamma), (0.0, T), dt=0.02)
    r_inf = exact.lorentzian_order_limit(gamma)
    assert r_inf == pytest.approx(np.sqrt(0.3), abs=8 * EPS)  # √(1 − 0.7) and √0.3: 1 − 0.7 is 0.3 + 1 ulp
    # the closed form's round-off at T = 100 (e^{αT} in a logistic ratio): 1.7e-13 measured
    assert abs(np.abs(exact.lorentzian_ott_antonsen(T, 0.2, gamma)) - r_inf) < 2e-12
    assert abs(sol.order[-1] - r_inf) < 1e-10
    assert exact.lorentzian_order_limit(0.5) == 0.0 and exact.lorentzian_order_limit(0.7) == 0.0


def test_lorentzian_ott_antonsen_solves_its_equation():
    """The closed form satisfies ż = (iω_0 − γ)z + (c/2)(z − |z|²z) (against DOP853 at rtol 1e-13), in the three
    regimes α = c − 2γ > 0, = 0, < 0."""
    for gamma, c, w0 in [(0.2, 1.0, 0.3), (0.5, 1.0, 0.0), (0.9, 1.0, -1.0)]:
        z0 = 0.4 + 0.1j
        t = np.linspace(0, 12, 13)

        def f(_, y):
            z = y[0] + 1j * y[1]
            dz = (1j * w0 - gamma) * z + 0.5 * c * (z - abs(z) ** 2 * z)
            return [dz.real, dz.imag]

        ref = solve_ivp(f, (0, 12), [z0.real, z0.imag], t_eval=t, method="DOP853", rtol=1e-13, atol=1e-15)
        assert np.max(np.abs(ref.y[0] + 1j * ref.y[1] - exact.lorentzian_ott_antonsen(t, z0, gamma, c, w0))) < 1e-11


def _oa_nodes(quad, a0, c, t):
    """The finite-node Ott–Antonsen system ȧ_j = iω_j a_j + (c/2)(z − z̄ a_j²), z = Σ w_j a_j: exact for the
    node densities (each node's Poisson kernel is invariant), whatever the nodes."""
    om, w = quad.nodes, quad.weights
    J = om.size

    def f(_, y):
        a = y[:J] + 1j * y[J:]
        z = w @ a
        da = 1j * om * a + 0.5 * c * (z - np.conj(z) * a * a)
        return np.concatenate([da.real, da.imag])

    s = solve_ivp(f, (0, t[-1]), np.concatenate([np.full(J, a0.real), np.full(J, a0.imag)]), t_eval=t,
                  method="DOP853", rtol=1e-13, atol=1e-15)
    return w @ (s.y[:J] + 1j * s.y[J:])


def test_real_nodes_follow_their_ott_antonsen_system_and_say_when_omega_is_unresolved():
    """Real nodes (8 Lorentzian nodes, per-node Poisson kernels): the density solver is the finite-node OA system to
    1e-10. Against the continuum it is not: the nodes cannot integrate e^{−ikωt} against the heavy-tailed g (module
    docstring), and with the default omega_tol the run stops saying that the density filamented in ω."""
    quad = fq.Lorentzian(0.25).quadrature(8)
    g = mf.CircleGrid(256)
    a0 = 0.3 + 0.0j
    t = np.linspace(0.0, 3.0, 7)
    values = np.broadcast_to(poisson(g, a0), (8, g.n))
    sol = fq.solve(mf.SelfAttention(0.0), values, quad, (0.0, 3.0), t, omega_tol=np.inf, dt=0.002)
    assert sol.status is mf.Status.SUCCESS
    assert np.max(np.abs(sol.z - _oa_nodes(quad, a0, 1.0, t))) < 1e-10
    assert np.max(np.abs(sol.mass - 1.0)) < 1e-14
    # the finite-node system is not the continuum's: the gap is the quadrature's, 1e-2 here
    assert np.max(np.abs(sol.z - exact.lorentzian_ott_antonsen(t, a0, 0.25))) > 1e-3
    stopped = fq.solve(mf.SelfAttention(0.0), values, quad, (0.0, 3.0), t)
    assert stopped.status is mf.Status.RESOLUTION_LOST
    assert "filamented in ω" in stopped.message and "tan-trapezoid" in stopped.message
    # the advice is about ω (more nodes, the bands, the pole, omega_tol), not the circle grid (issue 46)
    assert "bands(J)" in stopped.message and "omega_tol=np.inf" in stopped.message
    assert "finer circle grid" not in stopped.message
    with pytest.raises(mf.ResolutionError, match="filamented"):
        fq.solve(mf.SelfAttention(0.0), values, quad, (0.0, 3.0), t, raise_on_failure=True)


# ------------------------------------------------------------------------------------------------ linear rates
def _measured_rate(model, law, k, gamma, lam, n=64, eps=1e-7):
    """The growth rate of mode k measured from the density solver over t = 2/λ, started on the (discrete) unstable
    eigenvector: ρ̂_{j,k} ∝ (λ + kγ)/(λ + ikω_j) (the pole: a pure mode k of the marginal)."""
    g = mf.CircleGrid(n)
    quad = law.pole() if isinstance(law, fq.Lorentzian) else law
    if quad.rule == "pole":
        rho0 = mf.Density(g, (1.0 + 2.0 * eps * np.cos(k * g.angles)) / (2 * np.pi))
    else:
        ck = eps * (lam + k * gamma) / (lam + 1j * k * quad.nodes)
        rho0 = (1.0 + 2.0 * np.real(np.multiply.outer(ck, np.exp(1j * k * g.angles)))) / (2 * np.pi)
    T = 2.0 / lam
    # the pole at β > 0 is the Cauchy-noise model, whose linearisation about the incoherent state is the Lorentzian's
    sol = fq.solve(model, rho0, quad, (0.0, T), [0.0, T], cauchy_noise=quad.rule == "pole")
    assert sol.status is mf.Status.SUCCESS, sol.message
    c = np.fft.rfft(sol.marginal, axis=-1)[:, k]
    return np.log(abs(c[1] / c[0])) / T


@pytest.mark.parametrize("beta, normalized, gamma, k, rule", [
    (1.0, False, 0.3, 1, "pole"), (1.0, False, 0.3, 1, "tan"),
    (1.0, True, 0.2, 1, "pole"), (1.0, True, 0.2, 1, "tan"),
    (5.0, False, 4.0, 2, "pole"),
    (5.0, False, 4.0, 2, "tan"),
])
def test_growth_of_the_incoherent_state_is_the_lorentzian_rate(beta, normalized, gamma, k, rule):
    """λ_k = k² c I_k(β)/(β s) − kγ (docs/MATH.md §12) measured from the density solver's early growth, to 1e-6
    relative: β = 1 (USA, SA, mode 1), β = 5 USA (mode 2, the most unstable). Real nodes (32, the Cayley-trapezoidal
    rule) converge geometrically in the dispersion relation, so they give the continuum rate too."""
    model = mf.SelfAttention(beta, normalized=normalized)
    lam = exact.lorentzian_rates([k], beta, gamma, 1.0, normalized)[0]
    assert lam > 0
    law = fq.Lorentzian(gamma)
    measured = _measured_rate(model, law if rule == "pole" else law.quadrature(32), k, gamma, lam)
    assert abs(measured / lam - 1.0) < 1e-6


def test_lorentzian_rates_are_the_identical_rates_shifted():
    """λ_k(γ) = σ_k − kγ with σ_k the noiseless identical-oscillator rate of :func:`stationary.linear_rates` (its
    own code path), and λ_1 = c/2 − γ at β = 0 (the OA linearisation)."""
    k = np.arange(1, 12)
    for beta, normalized in [(0.5, True), (1.0, False), (5.0, False), (30.0, True)]:
        model = mf.SelfAttention(beta, normalized=normalized)
        sigma = stationary.linear_rates(model, "circle", k, noise=0.0)
        lam = exact.lorentzian_rates(k, beta, 0.37, 1.0, normalized)
        assert np.allclose(lam, sigma - 0.37 * k, rtol=1e-13, atol=1e-13)
    assert exact.lorentzian_rates([1, 2], 0.0, 0.1, c=2.0) == pytest.approx([0.9, -0.2], abs=1e-15)


def test_critical_width():
    """γ_c = max_k k c I_k(β)/(βs) (docs/MATH.md §12 values), and at γ_c the most unstable mode's rate is zero and
    no mode grows."""
    for beta, normalized, value, mode in [(1.0, False, 0.565159, 1), (1.0, True, 0.446390, 1),
                                          (5.0, False, 7.002246, 2)]:
        gc, k = exact.lorentzian_critical_width(beta, 1.0, normalized)
        assert (round(gc, 6), k) == (value, mode)
        lam = exact.lorentzian_rates(np.arange(1, 60), beta, gc, 1.0, normalized)
        assert abs(lam[k - 1]) < 1e-12 * k * gc and np.all(lam <= 1e-12 * gc)
    assert exact.lorentzian_critical_width(0.0, 3.0) == (1.5, 1)  # β = 0: c/2 (OA)
    assert exact.lorentzian_critical_width(2.0, -1.0)[0] == 0.0
    w = exact.lorentzian_critical_width(1.0)  # the number docs/tour.md prints: .width (and float(w))
    assert w.width == w[0] == float(w) and w.mode == w[1] == 1


# ------------------------------------------------------------------------------------------------ quadratures
def test_cayley_trapezoidal_rule_of_the_lorentzian():
    """The J real nodes integrate ζ^m = ((γ + i(ω − ω_0))/(γ − i(ω − ω_0)))^m exactly for |m| < J (mean 0) and not
    at m = J; the dispersion integral ∫ g/(λ + ikω) = 1/(λ + kγ) converges geometrically, like
    |ζ_*|^J = (|kγ − λ|/(kγ + λ))^J."""
    gamma, w0, J = 0.7, 0.3, 16
    q = fq.Lorentzian(gamma, w0).quadrature(J)
    assert q.weights.sum() == pytest.approx(1.0, abs=1e-15) and q.real
    zeta = (gamma + 1j * (q.nodes - w0)) / (gamma - 1j * (q.nodes - w0))
    for m in range(1, J):
        assert abs(q.weights @ zeta ** m) < 1e-13
    assert abs(q.weights @ zeta ** J) == pytest.approx(1.0, abs=1e-12)
    lam, k = 0.4, 1
    ratio = abs(k * gamma - lam) / (k * gamma + lam)
    for J in (8, 16, 32):
        qJ = fq.Lorentzian(gamma).quadrature(J)
        err = abs(qJ.weights @ (1.0 / (lam + 1j * k * qJ.nodes)) - 1.0 / (lam + k * gamma))
        assert err < 10.0 * ratio ** J + 64 * EPS  # the rule's sum of J terms of size ~1/λ: J ulps at J = 32


def test_gauss_hermite_and_pole_quadratures():
    """Gauss–Hermite integrates the Gaussian's moments exactly below degree 2J and its characteristic function
    e^{iuω_0 − σ²u²/2} to 1e-13 for σu <= 2.4 at J = 20 (3e-13 at 2.8, 4e-11 at 3.2: recurrence); the pole's Σ w e^{−ikωt} is e^{−ikω_0t − kγt}."""
    s, w0 = 0.8, -0.2
    q = fq.Gaussian(s, w0).quadrature(20)
    x = q.nodes - w0
    for m in range(0, 40, 2):
        double_factorial = np.prod(np.arange(m - 1, 0, -2, dtype=float))
        assert q.weights @ x ** m == pytest.approx(s ** m * double_factorial, rel=1e-12)
        assert abs(q.weights @ x ** (m + 1)) < 1e-12 * max(1.0, s ** (m + 1) * double_factorial * (m + 1))
    u = np.linspace(0, 3, 7)
    assert np.max(np.abs(np.exp(1j * np.multiply.outer(u, q.nodes)) @ q.weights
                         - fq.Gaussian(s, w0).characteristic(u))) < 1e-13
    p = fq.Lorentzian(0.3, 0.5).pole()
    assert p.exact and not p.real
    for k, t in [(1, 0.7), (3, 2.0)]:
        assert np.exp(-1j * k * p.nodes * t) @ p.weights == pytest.approx(
            fq.Lorentzian(0.3, 0.5).characteristic(-k * t), abs=1e-15)


def test_samples_follow_their_laws():
    """iid frequencies with an explicit rng: repeatable; the Lorentzian's quartiles are ω_0 ± γ, the Gaussian's
    mean and variance ω_0 and σ² (within 5 standard errors at 10⁵ draws)."""
    n = 100_000
    a = fq.Lorentzian(0.5, 1.0).sample(n, 7)
    assert np.array_equal(a, fq.Lorentzian(0.5, 1.0).sample(n, np.random.default_rng(7)))
    q1, q3 = np.quantile(a, [0.25, 0.75])
    se = 0.5 * np.pi * np.sqrt(0.25 * 0.75 / n) * 2  # g(q)^{-1}√(p(1−p)/n), g(ω_0 ± γ) = 1/(2πγ)
    assert abs(q1 - 0.5) < 5 * se and abs(q3 - 1.5) < 5 * se
    b = fq.Gaussian(2.0, -1.0).sample((10, n // 10), 3)
    assert b.shape == (10, n // 10)
    assert abs(b.mean() + 1.0) < 5 * 2.0 / np.sqrt(n) and abs(b.var() / 4.0 - 1.0) < 5 * np.sqrt(2.0 / n)
    d = fq.Discrete([-1.0, 2.0], [0.25, 0.75]).sample(n, 1)
    assert set(np.unique(d)) == {-1.0, 2.0} and abs(np.mean(d == 2.0) - 0.75) < 5 * np.sqrt(0.1875 / n)


# ------------------------------------------------------------------------------------------------ resolution, mass
def test_nonlinear_run_conserves_every_node_mass():
    """SA β = 1, 16 Gauss–Hermite nodes, a perturbed start that clusters: every node's mass stays 1 to round-off
    and the marginal is the weighted sum of the nodes."""
    g = mf.CircleGrid(256)
    rho0 = mf.Density.from_function(g, mf.domains.CIRCLE.uniform_noise(0.5, 3, np.random.default_rng(2))).unit_mass()
    sol = fq.solve(mf.SelfAttention(1.0), rho0, fq.Gaussian(0.3), (0.0, 3.0), np.linspace(0, 3, 4), nodes=16,
                   omega_tol=np.inf)  # the nodes as a system of their own: the ω check would stop it at t = 1.25
    assert sol.status is mf.Status.SUCCESS, sol.message
    assert np.max(np.abs(sol.mass - 1.0)) < 1e-14
    assert np.max(np.abs(np.einsum("j,tjn->tn", sol.weights, sol.values) - sol.marginal)) < 1e-14
    assert np.max(np.abs(fq.order_parameter(sol.marginal, g) - sol.z)) < 1e-14
    assert sol.order[-1] > sol.order[0]


def test_lost_resolution_in_theta_stops_naming_the_node_without_hand_over():
    """Identical frequencies lock into a Dirac mass: on 64 nodes the node's tail passes tail_tol, and with
    handover=False the run stops with the node named (no silent NaN, no unresolved output)."""
    g = mf.CircleGrid(64)
    sol = fq.solve(mf.SelfAttention(0.0), mf.Density(g, poisson(g, 0.3)), fq.Discrete([0.0]), (0.0, 30.0),
                   handover=False)
    assert sol.status is mf.Status.RESOLUTION_LOST
    assert "node 0" in sol.message and "tail_tol" in sol.message and "handover=False" in sol.message
    assert sol.t_reached < 30.0 and np.all(np.isfinite(sol.values))
    with pytest.raises(mf.ResolutionError, match="not resolved"):
        sharp = np.broadcast_to(poisson(g, 0.95), (1, 64))
        fq.solve(mf.SelfAttention(0.0), sharp, fq.Discrete([0.0]).quadrature(), (0.0, 1.0))


def test_a_collapsing_node_is_handed_over_to_atoms_and_reaches_the_point():
    """The same collapse with the default hand-over (issue 46, finding 3): the node goes to the atoms of its last
    resolved state (its trapezoidal rule at the midpoints) and the flow moves them exactly, so |z(t)| follows the
    closed form |a(t)| of Ott–Antonsen through the collapse to 1 (the continuum's transient is the atoms' quadrature
    error, 2e-4 at t = 10 on 64 nodes; by t = 30 every atom has reached the point: 5e-13). The node's mass stays 1;
    the marginal is a measure from then on (density(k) refuses, marginal_measure(k) gives it)."""
    g = mf.CircleGrid(64)
    t = np.array([0.0, 0.5, 4.0, 10.0, 30.0])
    sol = fq.solve(mf.SelfAttention(0.0), mf.Density(g, poisson(g, 0.3)), fq.Discrete([0.0]), (0.0, 30.0), t)
    assert sol.status is mf.Status.SUCCESS, sol.message
    (t_h, nodes), = sol.handovers
    assert nodes == (0,) and 0.5 < t_h < 4.0 and "handed over" in sol.message
    assert list(sol.as_points[:, 0]) == [False, False, True, True, True]
    r = np.abs(exact.ott_antonsen(t, 0.3))
    assert abs(sol.order[1] - r[1]) <= 1e-10  # on the grid: RK4 at the CFL step, 1.3e-11 (the same on every CPU)
    # the atoms: their quadrature's transient (2.2e-4 at t = 10), then every atom at the point (4.7e-13 at t = 30)
    assert np.max(np.abs(sol.order[2:4] - r[2:4])) <= 1e-3 and abs(sol.order[-1] - r[-1]) <= 1e-10
    assert np.max(np.abs(sol.mass - 1.0)) <= 16 * EPS and abs(np.sum(sol.masses[0]) - 1.0) <= 16 * EPS
    assert np.all(np.isnan(sol.values[2:, 0])) and np.all(np.isnan(sol.marginal[2:]))
    with pytest.raises(ValueError, match="marginal_measure"):
        sol.density(2)
    m = sol.marginal_measure(3)
    assert abs(m.weights.sum() - 1.0) <= 16 * EPS
    z = m.weights @ (m.points[:, 0] + 1j * m.points[:, 1])
    assert abs(z - sol.z[3]) <= 16 * EPS  # the same sum in another order: EPS seen
    assert sol.density(1).mass() == pytest.approx(1.0, abs=16 * EPS)


def test_a_run_that_stops_after_a_hand_over_before_its_first_output_returns_where_it_stopped():
    """Found in review: the last state was read in the layout of the start (before the hand-over) and the solve
    raised. 8 Gauss–Hermite nodes (σ = 0.2) all lock, go to atoms at t ≈ 1, and the ω-check stops the run before the
    only output time: the solution holds the state it stopped at, its nodes atoms, each of mass 1."""
    g = mf.CircleGrid(64)
    sol = fq.solve(mf.SelfAttention(0.0), mf.Density(g, poisson(g, 0.3)), fq.Gaussian(0.2), (0.0, 40.0), [40.0],
                   nodes=8, omega_tol=1e-2)
    assert sol.status is mf.Status.RESOLUTION_LOST and "filamented in ω" in sol.message
    assert sol.t.tolist() == [sol.t_reached] and sol.t_reached < 40.0 and sol.handovers
    assert np.all(sol.as_points[0]) and np.max(np.abs(sol.mass - 1.0)) <= 1e-13


def test_real_lorentzian_nodes_reach_the_synchronised_state_as_their_finite_system():
    """β = 0, γ = 0.2 (below γ_c = 1/2), 16 real nodes from f_{0.1} for every ω: the locked nodes collapse and are
    handed over one by one, and the density follows its finite-node Ott–Antonsen system (every node's Poisson kernel
    is invariant; the atoms' quadrature error of the collapse's transient, 1e-4 measured, is the difference) into the
    synchronised state, r ≈ 0.77. Only nodes with |ω_j| < c r (locked) are handed over."""
    quad = fq.Lorentzian(0.2).quadrature(16)
    g = mf.CircleGrid(128)
    t = np.linspace(0.0, 40.0, 9)
    sol = fq.solve(mf.SelfAttention(0.0), mf.Density(g, poisson(g, 0.1)), quad, (0.0, 40.0), t, omega_tol=np.inf)
    assert sol.status is mf.Status.SUCCESS, sol.message
    z_ref = _oa_nodes(quad, 0.1 + 0.0j, 1.0, t)
    assert np.max(np.abs(sol.z - z_ref)) <= 2e-3
    atoms = sol.as_points[-1]
    assert 8 <= atoms.sum() < 16 and np.all(np.abs(quad.nodes[atoms]) < sol.order[-1])
    assert np.max(np.abs(sol.mass - 1.0)) <= 1e-13 and sol.order[-1] > 0.7


def test_bands_are_exact_poles_of_lorentzian_bands():
    """Lorentzian(γ).bands(J): centres at the real nodes of Lorentzian(γ − δ), each shifted by −iδ (δ = γ/2): the
    dispersion integral Σ_j w_j/(λ + ik(ω_j − iδ)) → 1/(λ + kγ) geometrically in J (the real rule for λ + kδ), the
    mixture's characteristic function is e^{−δ|u|} times the real rule's; and the density solver on bands is the
    bands' own Ott–Antonsen system (the band nodes are complex frequencies ω_j − iδ) to 1e-9."""
    gamma, lam, k = 0.4, 0.3, 1
    q = fq.Lorentzian(gamma).bands(16)
    real = fq.Lorentzian(gamma / 2).quadrature(16)
    assert q.rule == "bands" and not q.real and not q.exact
    assert np.allclose(q.nodes, real.nodes - 0.5j * gamma, rtol=0, atol=1e-15)
    errs = [abs(fq.Lorentzian(gamma).bands(J).weights @ (1 / (lam + 1j * k * fq.Lorentzian(gamma).bands(J).nodes))
                - 1 / (lam + k * gamma)) for J in (4, 8, 16)]
    ratio = abs(k * gamma / 2 - (lam + k * gamma / 2)) / (k * gamma / 2 + lam + k * gamma / 2)
    assert all(e <= 10 * ratio ** J + 1e-15 for e, J in zip(errs, (4, 8, 16))) and errs[2] < 1e-3 * errs[0]
    with pytest.raises(ValueError, match="width"):
        fq.Lorentzian(gamma).bands(8, width=gamma)
    g = mf.CircleGrid(256)
    t = np.linspace(0.0, 6.0, 7)
    sol = fq.solve(mf.SelfAttention(0.0), mf.Density(g, poisson(g, 0.3)), q, (0.0, 6.0), t, omega_tol=np.inf,
                   dt=0.005)
    assert sol.status is mf.Status.SUCCESS and not sol.handovers
    ref = _oa_nodes(fq.Quadrature(np.conj(q.nodes), q.weights, "bands", q.law), 0.3 + 0.0j, 1.0, t)
    assert np.max(np.abs(sol.z - ref)) <= 1e-9


def test_the_pole_and_bands_are_refused_where_the_field_has_higher_harmonics():
    """For β > 0 the modes k >= 1 couple to negative ones (module docstring): the pole is not the Lorentzian
    average there (USA β = 2, γ = 1 from f_{0.5}: |z(1)| = 0.376 by the pole, 0.416 and 0.425 by 64 and 256 real
    nodes, 0.422 by 10⁵ tokens with stratified Cauchy frequencies): refused, with the way out, unless
    cauchy_noise=True; at β = 0 (any V) both are taken."""
    g = mf.CircleGrid(128)
    rho0 = mf.Density(g, poisson(g, 0.5))
    usa = mf.SelfAttention(2.0, normalized=False)
    for quad in (fq.Lorentzian(1.0).pole(), fq.Lorentzian(1.0).bands(8), fq.Lorentzian(1.0)):
        with pytest.raises(ValueError, match="first-harmonic fields only.*quadrature\\(J\\)"):
            fq.solve(usa, rho0, quad, (0.0, 0.1))
    assert fq.solve(usa, rho0, fq.Lorentzian(1.0), (0.0, 0.1), cauchy_noise=True).status is mf.Status.SUCCESS
    kuramoto_v = mf.SelfAttention(0.0, V=np.array([[1.0, 0.3], [-0.2, 0.8]]))
    assert fq.solve(kuramoto_v, rho0, fq.Lorentzian(1.0), (0.0, 0.1)).status is mf.Status.SUCCESS


@pytest.mark.slow
def test_bands_reach_the_ott_antonsen_limit():
    """β = 0, γ = 0.2: 64 bands reach r_∞ = √(1 − 2γ/c) of the continuum: max |r(t) − r_∞| over t ∈ [50, 100]
    below 1e-3 (5.1e-4 measured; 3.8e-5 with 128 bands: scripts/kuramoto_synchronised_state.py), about 80 s."""
    quad = fq.Lorentzian(0.2).bands(64)
    g = mf.CircleGrid(512)
    t = np.linspace(0.0, 100.0, 201)
    sol = fq.solve(mf.SelfAttention(0.0), mf.Density(g, poisson(g, 0.1)), quad, (0.0, 100.0), t, omega_tol=np.inf,
                   cfl=0.5)
    assert sol.status is mf.Status.SUCCESS, sol.message
    assert np.max(np.abs(sol.order[t >= 50] - exact.lorentzian_order_limit(0.2))) < 1e-3


# ------------------------------------------------------------------------------------------------ bad input
def test_bad_input():
    with pytest.raises(ValueError, match="gamma.*-0.1"):
        fq.Lorentzian(-0.1)
    with pytest.raises(ValueError, match="sigma"):
        fq.Gaussian(-1.0)
    with pytest.raises(TypeError, match="no finite quadrature"):
        fq.solve(mf.SelfAttention(1.0), mf.Density.uniform(mf.CircleGrid(16)),
                 lambda w: np.exp(-w * w / 2) / np.sqrt(2 * np.pi), (0, 1))
    g = mf.CircleGrid(16)
    quad = fq.Gaussian(1.0).quadrature(8)
    with pytest.raises(ValueError, match="holds 5 node densities but the quadrature has J = 8"):
        fq.solve(mf.SelfAttention(1.0), np.full((5, 16), 1 / (2 * np.pi)), quad, (0, 1))
    with pytest.raises(ValueError, match="pole quadrature is exact for starts independent of ω"):
        fq.solve(mf.SelfAttention(1.0), np.full((1, 16), 1 / (2 * np.pi)), fq.Lorentzian(1.0).pole(), (0, 1))
    with pytest.raises(ValueError, match="mass 1; node 0"):
        fq.solve(mf.SelfAttention(1.0), np.full((8, 16), 1.0), quad, (0, 1))
    # noise is built (issue 47): each node's density diffuses, DΔρ_j (test_frequencies_noise.py)
    assert fq.solve(mf.SelfAttention(1.0, noise=0.1), mf.Density.uniform(g), quad, (0, 1)).status is mf.Status.SUCCESS
    with pytest.raises(ValueError, match="must be positive and sum to 1"):
        fq.Discrete([0.0, 1.0], [0.5, 0.6])
    with pytest.raises(ValueError, match="rng"):
        fq.Lorentzian(1.0).sample(10, None)
