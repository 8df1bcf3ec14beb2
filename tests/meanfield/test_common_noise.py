"""Common noise for densities (MATH.md §13; meanfield.models.common_noise, meanfield.representations.common_noise):
the path, the linear flow and its Lyapunov spectrum, and the stochastic continuity equation on the circle."""

import numpy as np
import pytest
from scipy import integrate
from scipy.linalg import expm

import meanfield as mf
from meanfield.domains import CircleGrid
from meanfield.domains.circle import fourier
from meanfield.domains.euclidean import EuclideanGrid
from meanfield.domains.zonal_sphere.grid import ZonalGrid
from meanfield.integrate import Status
from meanfield.models import Softmax
from meanfield.models.common_noise import (
    CommonNoise, CommonPath, expm_batch, interval_maps, lyapunov_exponents, lyapunov_gap,
)


def solve_common_noise(model, mu, t, noise, **kw):
    """One realisation through :func:`meanfield.solve` and its ``common_noise`` option, outputs at ``t``."""
    t = np.asarray(t, dtype=float)
    return mf.solve(model, mu, (t[0], t[-1]), t, common_noise=noise, **kw)


def values(sol):
    return np.stack([f.values for f in sol.frames])


J = np.array([[0.0, -1.0], [1.0, 0.0]])
#: σ diag(1, −1) and σ [[0, 1], [1, 0]]: the traceless symmetric matrices, an isotropic noise (rotations conjugate
#: the pair into itself), whose linear flow has the exponents ±σ² (below)
STRAIN = np.array([[[1.0, 0.0], [0.0, -1.0]], [[0.0, 1.0], [1.0, 0.0]]])


def density(n=256):
    return mf.Density.from_function(CircleGrid(n), lambda x: np.exp(1.5 * x[..., 0] + 0.5 * x[..., 1] ** 2))


# ----------------------------------------------------------------------------- the path and the maps
def test_path_is_reproducible_and_has_brownian_increments():
    a, b = CommonPath(2, 0.01, 2.0, seed=5), CommonPath(2, 0.01, 2.0, seed=5)
    assert np.array_equal(a.increments, b.increments)
    assert not np.array_equal(a.increments, CommonPath(2, 0.01, 2.0, seed=6).increments)
    assert a.increments.shape == (400, 2) and a.steps == 200
    # half-step increments are N(0, h/2): the sample variance of 800 of them within 5 standard errors
    # (Var of s² is 2σ⁴/(N−1))
    var, target = a.increments.var(), 0.005
    assert abs(var - target) < 5 * target * np.sqrt(2 / (a.increments.size - 1))
    assert np.array_equal(a.W(np.array([0.0, 2.0]))[1], a.increments.sum(axis=0))


@pytest.mark.parametrize("kwargs, match", [
    (dict(m=0, dt=0.1, t1=1.0), "`m`"),
    (dict(m=1, dt=-0.1, t1=1.0), "`dt`"),
    (dict(m=1, dt=0.3, t1=1.0), "whole number of steps"),
    (dict(m=1, dt=0.1, t1=0.0), "`t1`"),
])
def test_path_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CommonPath(seed=0, **kwargs)


def test_noise_refuses_bad_input():
    path = CommonPath(1, 0.1, 1.0, seed=0)
    with pytest.raises(ValueError, match="one W\\^k per Σ_k"):
        CommonNoise(STRAIN, path)
    with pytest.raises(ValueError, match="`sigmas`"):
        CommonNoise(np.ones(3), path)
    with pytest.raises(ValueError, match="finite"):
        CommonNoise(np.full((2, 2), np.nan), path)
    with pytest.raises(TypeError, match="CommonPath"):
        CommonNoise(J, "path")
    with pytest.raises(ValueError, match="`t`.*grid"):
        path.index(0.05)


def test_expm_batch_is_the_exponential():
    """In the regime of a path's increments (‖A‖₁ up to ~2: up to 2 squarings) against scipy's Padé expm."""
    rng = np.random.default_rng(1)
    for scale in (0.01, 0.1, 0.5):
        A = rng.normal(size=(20, 3, 3)) * scale
        E = expm_batch(A)
        s = max(0, int(np.ceil(np.log2(np.max(np.abs(A).sum(axis=-2)) / 0.5))))
        for a, e in zip(A, E):
            ref = expm(a)
            # Taylor truncation < 1e-22; round-off ~ (2^s + 1) × 10 ε × ‖e^A‖ (s squarings, each doubling the relative
            # error; sums of ~20 terms), asserted with a 10x margin
            assert np.max(np.abs(e - ref)) <= 10 * (2 ** s + 1) * 10 * 2.2e-16 * np.max(np.abs(ref))


def test_flow_is_the_exponential_of_the_path_for_commuting_sigmas():
    """One Σ (or commuting ones): R_t = e^{Σ W_t} exactly, the product of the maps to round-off."""
    path = CommonPath(1, 0.01, 1.0, seed=2)
    S = np.array([[0.3, -0.8, 0.1], [0.8, 0.0, 0.2], [0.0, 0.5, -0.4]])
    noise = CommonNoise(S, path)
    t = np.array([0.0, 0.37, 1.0])
    R = noise.flow(t)
    for k, W in enumerate(path.W(t)[:, 0]):
        ref = expm(S * W)
        # 2·37 products of maps each exact to ~1e-16: 1e-13 keeps a 10x margin over 100 × 1e-16 × ‖R‖
        assert np.max(np.abs(R[k] - ref)) <= 1e-13 * np.max(np.abs(ref))


def test_interval_maps_compose_to_the_flow():
    path = CommonPath(2, 0.05, 1.0, seed=3)
    noise = CommonNoise(STRAIN, path)
    maps = interval_maps(noise, 4, 9)
    assert len(maps) == 6
    P = np.eye(2)
    for m in maps:
        P = m @ P
    ref = noise.flow(0.45) @ np.linalg.inv(noise.flow(0.2))
    assert np.max(np.abs(P - ref)) < 1e-13
    assert all(m is None for m in interval_maps(CommonNoise(0 * STRAIN, path), 0, 3))


# ----------------------------------------------------------------------------- Lyapunov exponents
def discrete_exponent(sigma, tau):
    """λ₁ of the product of iid e^{A}, A = σ√τ(ξ₁ diag(1, −1) + ξ₂ [[0, 1], [1, 0]]): A is symmetric traceless with
    eigenvalues ±s, s = σ√τ R (R Rayleigh), in a uniformly rotated frame; for an isotropic product
    λ₁ = E log|e^A e₁| / τ = E[½ log(cosh 2s + sinh 2s cos 2φ)] / τ = E log cosh s / τ (the mean over φ of
    log(a + b cos ψ) is log((a + √(a² − b²))/2)). As τ → 0, σ² − (2/3)σ⁴τ + O(τ²): the continuous λ₁ = σ² (Itô's
    correction of d log|Y|)."""
    f = lambda r: np.log(np.cosh(sigma * np.sqrt(tau) * r)) * r * np.exp(-r * r / 2)  # noqa: E731
    return integrate.quad(f, 0, np.inf, epsabs=1e-14)[0] / tau


def test_lyapunov_spectrum_sums_to_the_trace():
    """λ₁ + λ₂ = (1/T) Σ tr A_j exactly (det of the product), whatever the path."""
    S = np.array([[[0.5, -0.3], [0.2, 0.1]], [[0.0, 0.4], [0.1, -0.2]]])
    noise = CommonNoise(S, CommonPath(2, 0.02, 4.0, seed=4))
    ex = lyapunov_exponents(noise)
    trace = np.trace(noise.generators(), axis1=1, axis2=2).sum() / 4.0
    assert abs(ex.sum() - trace) < 1e-12  # a sum of 400 logs of R's diagonal, each to round-off


def test_lyapunov_gap_of_the_isotropic_noise():
    """The gap of the scheme's product, 2 E log cosh(σ√τ R)/τ (τ = h/2), lies in the computed interval; it is the
    continuous 2σ² up to the scheme's bias (4/3)σ⁴τ."""
    sigma, dt = 1.0, 0.02
    gap = lyapunov_gap(sigma * STRAIN, t=40.0, dt=dt, paths=8, seed=1)
    exact = 2 * discrete_exponent(sigma, dt / 2)
    assert abs(exact - (2 * sigma ** 2 - (4 / 3) * sigma ** 4 * dt / 2)) < 1e-3
    assert gap.low <= exact <= gap.high
    assert gap.high - gap.low < 0.6  # the interval says something: ±15 % of the gap
    np.testing.assert_allclose(gap.exponents.sum(axis=1), 0.0, atol=1e-12)  # traceless: det = 1


# ----------------------------------------------------------------------------- densities on the circle
@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_zero_sigma_is_todays_density_bit_for_bit(noise):
    model = mf.SelfAttention(2.0, noise=noise)
    mu, t = density(), np.linspace(0, 0.5, 6)
    path = CommonPath(2, 0.01, 0.5, seed=1)
    ref = mf.solve(model, mu, (0, 0.5), t_eval=t, dt=0.01, representation="grid", refine=False)
    sol = solve_common_noise(model, mu, t, CommonNoise(0 * STRAIN, path), dt=0.01, representation="grid",
                             refine=False)
    assert set(sol.representation) == {"grid"}  # Σ = 0 is no common noise: today's run
    assert np.array_equal(values(sol), np.stack([d.values for d in ref.densities]))


@pytest.mark.parametrize("model", [mf.SelfAttention(1.0, normalized=False), mf.SelfAttention(2.0),
                                   mf.SelfAttention(1.0, normalized=False, noise=0.05)],
                         ids=["USA", "SA", "USA+D"])
def test_skew_sigma_rotates_the_noiseless_density(model):
    """Q = K = V = I is rotation equivariant: μ_t = (R_t)_# ν_t, R_t the rotation by σW_t (MATH.md §13). The
    noiseless ν from today's solver with the same steps, rotated by evaluating its interpolant at θ − σW_t."""
    mu, t, sigma = density(), np.linspace(0, 1, 6), 0.8
    path = CommonPath(1, 0.01, 1.0, seed=3)
    ref = mf.solve(model, mu, (0, 1), t_eval=t, dt=0.01, representation="grid", refine=False)
    sol = solve_common_noise(model, mu, t, CommonNoise(sigma * J, path), dt=0.01)
    angle = sigma * path.W(t)[:, 0]
    assert np.max(np.abs(angle)) > 0.3  # the rotation is not small
    for k, nu in enumerate(ref.densities):
        rotated = fourier.evaluate(nu.values, mu.grid.angles - angle[k])
        # round-off: 100 steps of the equivariant right-hand side (FFTs, ~1e-15 each) and 100 Fourier shifts
        assert np.max(np.abs(values(sol)[k] - rotated)) < 1e-12 * np.max(np.abs(rotated))
    masses = [d.grid.integrate(d.values) for d in sol.densities]
    np.testing.assert_allclose(masses, 1.0, rtol=0, atol=1e-13)


def test_general_sigma_without_attention_is_the_pushed_forward_density():
    """No attention (V = 0): μ_t = (φ_t)_# μ_0 with φ_t(u) = R_t u/|R_t u|, R_t the path's linear flow (exact:
    the composition of the maps is the map of the product). The density, given as a function, pushed forward in
    closed form: ρ_t(θ) = ρ_0(φ_t^{-1}θ) det R_t / |adj(R_t) u|²."""
    S = np.array([[[0.4, -0.5], [0.5, -0.4]], [[0.0, 0.3], [0.3, 0.0]]])
    path = CommonPath(2, 0.02, 1.0, seed=7)
    noise = CommonNoise(S, path)
    model = mf.SelfAttention(0.0, V=np.zeros((2, 2)))
    f = lambda x: np.exp(1.2 * x[..., 0] + 0.4 * x[..., 1])  # noqa: E731
    mu = mf.Density.from_function(CircleGrid(256), f)
    sol = solve_common_noise(model, mu, [0.0, 1.0], noise)
    assert sol.status is Status.SUCCESS, sol.message
    R = noise.flow(1.0)
    assert np.linalg.norm(R - np.eye(2)) > 0.3
    (a, b), (c, d) = R
    u = mu.grid.points
    pre = np.stack([d * u[:, 0] - b * u[:, 1], a * u[:, 1] - c * u[:, 0]], axis=-1)
    r2 = np.sum(pre * pre, axis=-1)
    Z = f(u[0]) / mu.values[0]  # from_function's normalisation to mass 1
    exact = f(pre / np.sqrt(r2)[:, None]) * (np.linalg.det(R) / r2) / Z
    # 100 maps, each the interpolation (1.4e-14 + round-off relative to Σ|ρ̂_k| ~ max ρ) and a truncation of a
    # resolved density: 1e-9
    assert np.max(np.abs(values(sol)[-1] - exact)) < 1e-9 * np.max(exact)


@pytest.mark.parametrize("n", [7, 64, 256])
def test_interpolant_at_any_angles_within_the_lagrange_bound(n):
    """fourier.evaluate_many (the general-Σ map's evaluation): the interpolant on 4n nodes (exact, an FFT of the
    zero-padded spectrum) and 32-node Lagrange interpolation, off by at most lagrange_bound() Σ_k m_k|ρ̂_k| (Cauchy's
    remainder mode by mode) plus round-off; the reference sums the series mode by mode at angles in [0, 2π)."""
    rng = np.random.default_rng(n)
    c = (rng.standard_normal(n // 2 + 1) + 1j * rng.standard_normal(n // 2 + 1)) * 0.9 ** np.arange(n // 2 + 1)
    c[-1] = 1.0 if n % 2 == 0 else c[-1]  # the top mode at full size (the bound's worst case)
    c[0] = c[0].real
    if n % 2 == 0:
        c[-1] = c[-1].real  # the Nyquist coefficient of a real grid
    values = fourier.from_coefficients(c, n)
    theta = np.concatenate([rng.uniform(0, 2 * np.pi, 4 * n), 2 * np.pi * np.arange(5) / n])  # the last on nodes
    D = fourier.interpolant_coefficients(fourier.coefficients(values), n)
    k = np.arange(D.size)
    exact = D[0].real + 2 * np.real(np.exp(1j * np.outer(theta, k[1:])) @ D[1:])
    l1 = 2 * np.sum(np.abs(D))
    bound = fourier.lagrange_bound()
    assert bound < 2e-14
    # round-off: the sums of ~n terms of size |D_k| at ε each and cos(kθ) to ε kθ <= ε πn: 1e-15 n Σ|D| covers both
    err = np.max(np.abs(fourier.evaluate_many(values, theta) - exact))
    assert err <= bound * l1 + 1e-15 * n * l1, (err, l1)  # a stencil of 8 nodes is off by 4e-6 l1 here


def test_interpolant_next_to_a_node_is_the_node_value_not_nan():
    """Angles a hair from a node (|θ − θ_j| below ulp(σn/2π · 2π)/2, where x + p/2 − 1 rounds onto the stencil's node,
    and −1e-17, where θ mod 2π rounds to 2π): evaluate_many and linear_pushforward are finite and within the
    Lagrange bound of the exact trigonometric interpolant, mixed with random angles and exact nodes."""
    n = 64
    th = 2 * np.pi * np.arange(n) / n
    values = np.exp(np.cos(th))
    values /= values.mean()
    rng = np.random.default_rng(1)
    theta = np.concatenate([[-1e-17, 1e-17, -1e-300, 1e-300, 0.0, 2 * np.pi - 1e-16, 2 * np.pi, th[5] + 1e-16,
                             th[5] - 1e-16, th[9]], rng.uniform(0, 2 * np.pi, 40), [-1e-17, 1e-17]])
    D = fourier.interpolant_coefficients(fourier.coefficients(values), n)
    k = np.arange(D.size)
    exact = D[0].real + 2 * np.real(np.exp(1j * np.outer(theta, k[1:])) @ D[1:])
    l1 = 2 * np.sum(np.abs(D))
    # as the test above: the Lagrange bound plus round-off 1e-15 n Σ|D|
    tol = fourier.lagrange_bound() * l1 + 1e-15 * n * l1
    for alone in (theta[:1], theta[1:2], theta[-2:]):  # no node among them: no other point triggers a fix-up
        got = fourier.evaluate_many(values, alone)
        assert np.all(np.isfinite(got)) and np.max(np.abs(got - exact[:1])) <= tol, got
    got = fourier.evaluate_many(values, theta)
    assert np.all(np.isfinite(got)) and np.max(np.abs(got - exact)) <= tol
    # the pushforward by a rotation R_α (det 1, |adj(R) u| = 1): ρ at θ_j − α, node 0's preimage a hair off node 0
    for alpha in (1e-18, -1e-18, 1e-17, -1e-17):
        R = np.array([[np.cos(alpha), -np.sin(alpha)], [np.sin(alpha), np.cos(alpha)]])
        got = fourier.linear_pushforward(values, R, np.cos(th), np.sin(th))
        assert np.all(np.isfinite(got)) and np.max(np.abs(got - values)) <= tol, (alpha, got[:3])


def test_common_noise_is_refused_where_not_implemented():
    path = CommonPath(1, 0.1, 1.0, seed=0)
    box = mf.Density.from_function(EuclideanGrid(((-3.0, 3.0),), 64), lambda x: np.exp(-x[..., 0] ** 2))
    with pytest.raises(ValueError, match="R\\^d grids.*not projected"):
        solve_common_noise(Softmax(beta=1.0), box, [0, 1], CommonNoise(J, path))
    J3 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])  # a rotation about the zonal axis
    zonal = mf.Density.from_function(ZonalGrid(3, 16), lambda x: np.exp(x[..., 2]))  # as S² grids: not written yet
    with pytest.raises(ValueError, match="not implemented on this grid"):
        solve_common_noise(mf.SelfAttention(1.0), zonal, [0, 1], CommonNoise(J3, path))
    with pytest.raises(ValueError, match="`t_span\\[1\\]`.*grid"):
        solve_common_noise(mf.SelfAttention(1.0), density(), [0, 0.55], CommonNoise(J, path))
    with pytest.raises(ValueError, match="`t_eval`.*grid"):
        solve_common_noise(mf.SelfAttention(1.0), density(), [0, 0.55, 1.0], CommonNoise(J, path))
    with pytest.raises(ValueError, match="3×3.*R\\^2"):
        solve_common_noise(mf.SelfAttention(1.0), density(), [0, 1], CommonNoise(np.eye(3), path))
    with pytest.raises(ValueError, match="`method`"):
        solve_common_noise(mf.SelfAttention(1.0), density(), [0, 1], CommonNoise(J, path), method="rk45")
    with pytest.raises(TypeError, match="CommonNoise"):
        solve_common_noise(mf.SelfAttention(1.0), density(), [0, 1], J)


# ----------------------------------------------------------------------------- densities on S²
def sphere_density(lmax=24):
    return mf.Density.from_function(mf.SphereGrid(lmax), lambda x: np.exp(1.0 * x[..., 0] + 0.3 * x[..., 2] ** 2))


def test_zero_sigma_is_todays_density_on_the_sphere_bit_for_bit():
    model, mu, t = mf.SelfAttention(1.0, normalized=False), sphere_density(), np.linspace(0, 0.2, 3)
    ref = mf.solve(model, mu, (0, 0.2), t_eval=t, dt=0.01, representation="grid", refine=False)
    sol = solve_common_noise(model, mu, t, CommonNoise(np.zeros((1, 3, 3)), CommonPath(1, 0.01, 0.2, seed=1)),
                             dt=0.01, representation="grid", refine=False)
    assert np.array_equal(values(sol), np.stack([d.values for d in ref.densities]))


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_skew_sigma_rotates_the_noiseless_density_on_the_sphere(noise):
    """S², USA with Q = K = V = I: μ_t(x) = ν_t(R_tᵀ x), R_t the path's product of rotations (two non-commuting
    skew Σ_k)."""
    rng = np.random.default_rng(1)
    S = np.stack([a - a.T for a in rng.normal(size=(2, 3, 3))]) * 0.4
    model, mu, t = mf.SelfAttention(1.0, normalized=False, noise=noise), sphere_density(), np.linspace(0, 0.4, 3)
    path = CommonPath(2, 0.01, 0.4, seed=2)
    ref = mf.solve(model, mu, (0, 0.4), t_eval=t, dt=0.01, representation="grid", refine=False)
    noise_ = CommonNoise(S, path)
    sol = solve_common_noise(model, mu, t, noise_, dt=0.01)
    assert sol.status is Status.SUCCESS, sol.message
    R = noise_.flow(t)
    assert np.linalg.norm(R[-1] - np.eye(3)) > 0.3
    g = mu.grid
    for k, nu in enumerate(ref.densities):
        rotated = g.interpolate(nu.values, g.points @ R[k])  # rows x @ R = (Rᵀx)ᵀ
        # round-off: the comparison's own evaluation (the non-uniform synthesis, 1e-14 of the coefficients' l¹ size:
        # 6e-14 of max ρ at t = 0) and 40 steps and maps of spherical-harmonic transforms (today's solver is
        # rotation-equivariant to 1e-13 over 40 steps): 1e-12 keeps a 10x margin
        assert np.max(np.abs(values(sol)[k] - rotated)) < 1e-12 * np.max(np.abs(rotated))


def test_general_sigma_without_attention_is_the_pushed_forward_density_on_the_sphere():
    S = np.array([[[0.2, -0.5, 0.0], [0.5, -0.05, 0.1], [0.0, 0.05, -0.15]]])
    path = CommonPath(1, 0.02, 0.2, seed=7)
    noise = CommonNoise(S, path)
    f = lambda x: np.exp(0.8 * x[..., 0] + 0.3 * x[..., 2])  # noqa: E731
    mu = mf.Density.from_function(mf.SphereGrid(32), f)
    sol = solve_common_noise(mf.SelfAttention(0.0, V=np.zeros((3, 3))), mu, [0.0, 0.2], noise)
    assert sol.status is Status.SUCCESS, sol.message
    R = noise.flow(0.2)
    assert np.linalg.norm(R - np.eye(3)) > 0.1
    pre = mu.grid.points @ np.linalg.inv(R).T
    r = np.linalg.norm(pre, axis=-1)
    Z = f(mu.grid.points[0, 0]) / mu.values[0, 0]
    exact = f(pre / r[..., None]) / (np.linalg.det(R) * r ** 3) / Z
    # 10 maps (each 1e-14 of the l¹ size, ~5 max ρ) and their truncations to degree 32 (spectral tail <= 1e-13
    # on the way, measured): 1e-11 keeps a 10x margin over 10 × (5e-14 + 1e-13)
    assert np.max(np.abs(values(sol)[-1] - exact)) < 1e-11 * np.max(exact)
