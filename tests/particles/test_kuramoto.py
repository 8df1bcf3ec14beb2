"""Tokens with natural frequencies on the circle, θ̇_i = ω_i + X[μ^n](θ_i) (docs/MATH.md §12; particles.kuramoto)."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import meanfield as mf
import particles as pt
from meanfield.analysis import exact
from meanfield.solvers import frequencies as fq
from particles import kuramoto
from tests.helpers import EPS


def test_without_frequencies_it_is_simulate():
    """ω = 0: the same RK4 steps of the same field as particles.simulate (Lawson's scheme with a zero linear part is
    RK4), to round-off; a batch runs its systems independently."""
    x = pt.uniform_sphere(40, 2, rng=3)
    model = mf.SelfAttention(2.0)
    a = kuramoto.simulate(model, x, np.zeros(40), [0.0, 1.0, 2.0], dt=0.01)
    b = pt.simulate(model, x, [0.0, 1.0, 2.0], dt=0.01)
    assert np.max(np.abs(a.x - b.x)) < 1e-13
    xb = np.stack([x, pt.uniform_sphere(40, 2, rng=4)])
    ab = kuramoto.simulate(model, xb, np.zeros(40), [0.0, 1.0], dt=0.01)
    assert np.max(np.abs(ab.x[:, 0] - a.x[:2])) < 1e-13
    assert np.max(np.abs(np.linalg.norm(ab.x, axis=-1) - 1.0)) < 16 * EPS  # (cos θ, sin θ): EPS seen


def test_discrete_frequencies_on_the_ott_antonsen_manifold():
    """β = 0, four frequency groups of M = 64 tokens each, each group a regular M-gon pushed to the Poisson kernel
    f_{a0} (first moment a0 up to |a0|^M): every group stays on the Möbius orbit of its polygon, so
    z = Σ_i w_i e^{iθ_i} follows the finite-node Ott–Antonsen system ȧ_j = iω_j a_j + ½(z − z̄a_j²), z = Σ_j w_j a_j,
    to the step's error (measured 7.5e-9, 4.7e-10, 2.9e-11 at dt = 0.02, 0.01, 0.005: fourth order)."""
    om = np.array([-3.0, -0.2, 0.4, 8.0])
    w = np.array([0.2, 0.3, 0.4, 0.1])
    a0, M, T = 0.35 + 0.1j, 64, 2.0
    t = np.linspace(0.0, T, 5)

    def f(_, y):
        a = y[:4] + 1j * y[4:]
        z = w @ a
        da = 1j * om * a + 0.5 * (z - np.conj(z) * a * a)
        return np.concatenate([da.real, da.imag])

    ref = solve_ivp(f, (0, T), np.r_[np.full(4, a0.real), np.full(4, a0.imag)], t_eval=t, method="DOP853",
                    rtol=1e-13, atol=1e-15)
    z_ref = w @ (ref.y[:4] + 1j * ref.y[4:])
    theta = np.tile(exact.wrapped_cauchy_sample(2 * np.pi * (np.arange(M) + 0.5) / M, a0), 4)
    x0 = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    tr = kuramoto.simulate(mf.SelfAttention(0.0), x0, np.repeat(om, M), t, dt=0.005, weights=np.repeat(w / M, M))
    assert np.max(np.abs(tr.z - z_ref)) < 1e-10


def test_sampled_frequencies_are_repeatable():
    """A law is sampled with the explicit rng after x0: the same seed, the same run."""
    g = mf.CircleGrid(64)
    start = (mf.Density(g, exact.wrapped_cauchy(g.angles, 0.3)), 50)
    a = kuramoto.simulate(mf.SelfAttention(1.0), start, fq.Lorentzian(0.2), [0.0, 0.5], rng=5)
    b = kuramoto.simulate(mf.SelfAttention(1.0), start, fq.Lorentzian(0.2), [0.0, 0.5], rng=5)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.omega, b.omega) and a.omega.shape == (50,)


def test_bad_input():
    x = pt.uniform_sphere(10, 2, rng=1)
    model = mf.SelfAttention(1.0)
    with pytest.raises(ValueError, match=r"one frequency per token, shape \(10,\).*got shape \(9,\)"):
        kuramoto.simulate(model, x, np.zeros(9), [0, 1])
    with pytest.raises(ValueError, match="non-finite"):
        kuramoto.simulate(model, x, np.r_[np.zeros(9), np.nan], [0, 1])
    with pytest.raises(ValueError, match="rng"):
        kuramoto.simulate(model, x, fq.Gaussian(1.0), [0, 1])
    with pytest.raises(TypeError, match="no finite quadrature"):
        kuramoto.simulate(model, x, lambda w: np.exp(-w * w), [0, 1], rng=1)
    with pytest.raises(ValueError, match="circle"):
        kuramoto.simulate(model, pt.uniform_sphere(10, 3, rng=1), np.zeros(10), [0, 1])
    with pytest.raises(ValueError, match="noise"):
        kuramoto.simulate(mf.SelfAttention(1.0, noise=0.1), x, np.zeros(10), [0, 1])


@pytest.mark.slow
def test_particles_converge_to_the_density_at_the_iid_rate():
    """The mean-field limit with Lorentzian frequencies (scripts/frequencies_meanfield_limit.py): W_1 between N
    tokens' law of θ and the density's marginal (pole quadrature, exact in ω) falls like N^α with α = −½ inside its
    95 % interval, at t = 0 and t = 1, over N = 10² … 10^3.5 (6 repeats)."""
    from scripts.frequencies_meanfield_limit import errors
    from validation.meanfield_limit import fit_exponent

    ns = [100, 316, 1000, 3162]
    w1, dr, sol = errors(ns, 6, [0.0, 1.0], seed=1)
    assert sol.status is mf.Status.SUCCESS
    for k in range(2):
        slope, (lo, hi) = fit_exponent(ns, w1[:, :, k])
        assert lo < -0.5 < hi and hi < 0, (k, slope, lo, hi)
