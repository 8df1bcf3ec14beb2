"""Natural frequencies with noise on S¹ (issue 47, item 4; docs/MATH.md §12 with §7's noise): each node's density
diffuses, ∂_t ρ_j + ∂_θ(ρ_j(ω_j + X[ρ̄])) = D∂²_θρ_j, the noise's −Dk² integrated exactly with the rotation.

Asserted: the incoherent state's rate of mode k is the noiseless Lorentzian rate with −Dk² added (growth and decay,
the pole and real nodes); one node at ω = 0 is the circle solver with noise to round-off, and one node at ω its
rotation by ωt (a common frequency is a rotating frame); particles with natural frequencies and noise agree with
the density within their sampling error (slow).
"""

import numpy as np
import pytest

import meanfield as mf
from meanfield.analysis import exact
from meanfield.solvers import frequencies as fq
from meanfield.domains.circle import fourier


def _measured_rate(model, quad, k, gamma, lam0, n=64, eps=1e-7):
    """The rate of mode k measured over t = 2/|λ| from the (discrete) eigenvector of the linearisation (as
    tests/meanfield/test_frequencies.py): with noise, (λ + Dk² + ikω)ρ̂_k(ω) = a_k ρ̄̂_k, so the eigenvector is the
    noiseless one of rate λ0 = λ + Dk²: ρ̂_{j,k} ∝ (λ0 + kγ)/(λ0 + ikω_j) (the pole: a pure mode k)."""
    g = mf.CircleGrid(n)
    if quad.rule == "pole":
        rho0 = mf.Density(g, (1.0 + 2.0 * eps * np.cos(k * g.angles)) / (2 * np.pi))
    else:
        ck = eps * (lam0 + k * gamma) / (lam0 + 1j * k * quad.nodes)
        rho0 = (1.0 + 2.0 * np.real(np.multiply.outer(ck, np.exp(1j * k * g.angles)))) / (2 * np.pi)
    lam = lam0 - model.noise * k * k
    T = 2.0 / abs(lam)
    # the pole at β > 0 is the Cauchy-noise model, whose linearisation about the incoherent state is the Lorentzian's
    sol = fq.solve(model, rho0, quad, (0.0, T), [0.0, T], cauchy_noise=quad.rule == "pole")
    assert sol.status is mf.Status.SUCCESS, sol.message
    c = np.fft.rfft(sol.marginal, axis=-1)[:, k]
    return np.log(abs(c[1] / c[0])) / T, lam


@pytest.mark.parametrize("beta, gamma, k, noise, rule", [
    (1.0, 0.3, 1, 0.1, "pole"), (1.0, 0.3, 1, 0.1, "tan"),  # growth, slowed by the noise
    (1.0, 0.3, 1, 0.5, "pole"),                             # the noise turns the growth into decay
    (5.0, 4.0, 2, 0.3, "pole"),                             # mode 2, the most unstable at β = 5
])
def test_noisy_incoherent_state_has_the_lorentzian_rate_minus_dk2(beta, gamma, k, noise, rule):
    """λ_k = k² c I_k(β)/(βs) − kγ − Dk² (docs/MATH.md §12 with the noise's −Dk²) measured from the density solver,
    to 1e-6 relative (as the noiseless test: the nonlinear terms at ε = 1e-7, and the time error, measured 1e-9)."""
    model = mf.SelfAttention(beta, normalized=False, noise=noise)
    lam0 = exact.lorentzian_rates([k], beta, gamma, 1.0, False)[0]
    law = fq.Lorentzian(gamma)
    measured, lam = _measured_rate(model, law.pole() if rule == "pole" else law.quadrature(32), k, gamma, lam0)
    assert (lam > 0) == (noise < 0.5)
    assert abs(measured / lam - 1.0) < 1e-6


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_one_noisy_node_is_the_circle_solver_in_its_rotating_frame(beta):
    """One node at ω = 0 is the circle's density with noise (meanfield.solve on the grid, the same Lawson RK4 steps
    and the same field): equal to 20 EPS of the largest value (the two paths form the flux in a different order:
    a few ulps per step, measured 1e-15); one node at ω = 0.7 is that density turned by 0.7 t (a common frequency is
    a rotating frame; the field commutes with rotations)."""
    g = mf.CircleGrid(64)
    rho0 = mf.Density(g, exact.wrapped_cauchy(g.angles, 0.4 + 0.2j))
    model = mf.SelfAttention(beta, noise=0.2)
    t = [0.0, 0.5, 1.0]
    circle = mf.solve(model, rho0, (0.0, 1.0), t, dt=0.01, representation="grid")
    values = np.array([d.values for d in circle.densities])
    tol = 20 * np.finfo(float).eps * np.max(values)
    still = fq.solve(model, rho0, fq.Discrete([0.0]), (0.0, 1.0), t, dt=0.01)
    assert np.max(np.abs(still.values[:, 0] - values)) <= tol
    turning = fq.solve(model, rho0, fq.Discrete([0.7]), (0.0, 1.0), t, dt=0.01)
    k = np.arange(g.n // 2 + 1)
    turned = [fourier.from_coefficients(fourier.coefficients(v) * np.exp(-1j * k * 0.7 * s), g.n)
              for v, s in zip(values, t)]
    assert np.max(np.abs(turning.values[:, 0] - np.array(turned))) <= tol


@pytest.mark.slow
def test_noisy_particles_with_frequencies_follow_the_density():
    """Two populations ω = ±0.5 (a discrete law: its quadrature is exact), D = 0.1, β = 1 from f_{0.5}: the mean
    over 16 runs of 1000 tokens of z(2) = Σ_i e^{iθ_i}/n lies within 4 standard errors (plus 2/n for the finite-n
    bias, O(1/n)) of the density's z(2) (measured: 2 standard errors)."""
    import particles.kuramoto as ku

    g = mf.CircleGrid(128)
    rho0 = mf.Density(g, exact.wrapped_cauchy(g.angles, 0.5))
    model = mf.SelfAttention(1.0, noise=0.1)
    T, N, B = 2.0, 1000, 16
    sol = fq.solve(model, rho0, fq.Discrete([-0.5, 0.5]), (0.0, T), [0.0, T])
    assert sol.status is mf.Status.SUCCESS, sol.message
    omega = np.tile(np.repeat([-0.5, 0.5], N // 2), (B, 1))
    z = ku.simulate(model, (rho0, N, B), omega, [0.0, T], dt=0.01, rng=1).z[-1]
    error = np.std(z.real, ddof=1) / np.sqrt(B) + np.std(z.imag, ddof=1) / np.sqrt(B)
    assert abs(np.mean(z) - sol.z[-1]) <= 4 * error + 2.0 / N
