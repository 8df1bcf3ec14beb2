"""The S² solver against mathematics: the Möbius family, convergence, paths, invariants, input checks."""

import numpy as np
import pytest
from scipy.stats import special_ortho_group

import meanfield as mf
from meanfield.analysis import exact
from meanfield.domains import SPHERE
from tests.helpers import smooth_positive_sphere, rhs
from validation import observed_order

W0 = 0.3 * np.array([0.1, -0.2, 0.2]) / np.linalg.norm([0.1, -0.2, 0.2])  # |w_0| = 0.3, off-axis


def smooth(lmax, R=None):
    def f(x):
        y = x if R is None else x @ R  # f(Rᵀx) for a rotation R
        return np.exp(y[..., 0] + 0.5 * y[..., 2] ** 2 - 0.3 * y[..., 1] * y[..., 2])

    return mf.Density.from_function(mf.SphereGrid(lmax), f)


# ------------------------------------------------------------------ the oracle itself
def test_mobius_family_oracle():
    g = mf.SphereGrid(64)
    d = mf.Density.from_function(g, lambda x: exact.mobius_density(x, W0))
    assert g.integrate(exact.mobius_density(g.points, W0)) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(d.mean(), exact.mobius_mean_factor(0.3) * W0 / 0.3, atol=1e-13)
    # series and closed form of g_3 meet continuously at s = 0.1, and g_3 ≈ 4s/3 for small s
    assert exact.mobius_mean_factor(0.1 - 1e-12) == pytest.approx(exact.mobius_mean_factor(0.1), abs=1e-11)
    assert exact.mobius_mean_factor(1e-6) == pytest.approx(4e-6 / 3, rel=1e-11)


@pytest.mark.parametrize("normalized", [True, False])
def test_mobius_family_at_beta_zero(normalized):
    """β = 0 from |w_0| = 0.3: density error <= 1e-8 (max norm, relative) at t = 2; mean on ṡ = ½g_3(s)(1 − s²)."""
    mu0 = mf.Density.from_function(mf.SphereGrid(32), lambda x: exact.mobius_density(x, W0))
    sol = mf.solve(mf.SelfAttention(0.0, normalized=normalized), mu0, (0, 2), t_eval=[0, 1, 2], method="rk45",
                   refine=True)
    assert sol.densities[-1].grid.lmax > 32  # it refined as the peak sharpened
    s = exact.mobius_radius(sol.t, 0.3)
    for t, d, st in zip(sol.t, sol.densities, s):
        ex = exact.mobius_density(d.grid.points, st * W0 / 0.3)
        assert np.max(np.abs(d.values - ex)) / ex.max() <= 1e-8
        np.testing.assert_allclose(d.mean(), exact.mobius_mean_factor(st) * W0 / 0.3, atol=1e-10)
    assert np.max(np.abs(sol.mass_steps - 1)) <= 1e-12


# ------------------------------------------------------------------ convergence
@pytest.mark.parametrize("beta", [1.0, 4.0, 9.0])
def test_spectral_convergence_in_lmax(beta):
    model = mf.SelfAttention(beta)
    kw = dict(method="dop853", rtol=1e-12, atol=1e-14, monitor=mf.ResolutionMonitor(1.0, 1.0, 1.0))
    ref = mf.solve(model, smooth(48), (0, 0.5), **kw).densities[-1]
    errs = []
    for L in (8, 12, 16, 24):
        d = mf.solve(model, smooth(L), (0, 0.5), **kw).densities[-1]
        errs.append(np.max(np.abs(d.grid.resample(d.values, 48) - ref.values)) / ref.values.max())
    assert errs[0] > 1e-6 and errs[-1] < 1e-9
    assert all(b < 0.2 * a for a, b in zip(errs[:-1], errs[1:]))


def test_rk4_fourth_order_on_the_sphere():
    model, d = mf.SelfAttention(4.0), smooth(24)
    ref = mf.solve(model, d, (0, 0.5), method="dop853", rtol=1e-13, atol=1e-15).densities[-1].values
    hs = np.array([1 / 8, 1 / 16, 1 / 32])
    errs = [np.max(np.abs(mf.solve(model, d, (0, 0.5), dt=h).densities[-1].values - ref)) for h in hs]
    assert abs(observed_order(hs, errs).order - 4) < 0.25


# ------------------------------------------------------------------ paths
@pytest.mark.parametrize("beta", [0.0, 1.0, 4.0, 20.0])
@pytest.mark.parametrize("normalized", [True, False])
def test_fast_and_generic_rates_agree(beta, normalized):
    d = smooth(20)
    m = mf.SelfAttention(beta, normalized=normalized)
    a = rhs(SPHERE, m, d.grid, "spectral").rate(d.values)
    b = rhs(SPHERE, m, d.grid, "quadrature").rate(d.values)
    assert np.max(np.abs(a - b)) <= 1e-10 * max(np.max(np.abs(a)), 1.0)


def test_generic_path_random_orthogonal_qk_and_rotation_equivariance():
    rng = np.random.default_rng(5)
    R0 = special_ortho_group.rvs(3, random_state=rng)  # Q = K = R0: ⟨Qx, Ky⟩ = ⟨x, y⟩
    R = special_ortho_group.rvs(3, random_state=rng)
    model = mf.SelfAttention(2.0, Q=R0, K=R0)
    kw = dict(t_eval=[0, 0.3], dt=0.01)
    a = mf.solve(model, smooth(24), (0, 0.3), **kw)
    assert a.strategy == "moments"  # "auto" for a non-zonal model
    fast = mf.solve(mf.SelfAttention(2.0), smooth(24), (0, 0.3), **kw)
    assert np.max(np.abs(a.densities[-1].values - fast.densities[-1].values)) <= 1e-10
    q = mf.solve(model, smooth(24), (0, 0.3), strategy="quadrature", **kw)
    assert np.max(np.abs(q.densities[-1].values - fast.densities[-1].values)) <= 1e-10
    # rotating the initial density rotates the solution: ρ^R_t(x) = ρ_t(Rᵀx)
    b = mf.solve(model, smooth(24, R), (0, 0.3), **kw)
    x = rng.normal(size=(40, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(b.densities[-1](x), a.densities[-1](x @ R), atol=1e-10)


def test_multihead_general_on_the_sphere_conserves_mass():
    rng = np.random.default_rng(2)
    heads = [mf.SelfAttention(1.0, *(rng.normal(size=(3, 3)) for _ in range(3))), mf.SelfAttention(0.5, normalized=False)]
    sol = mf.solve(mf.MultiHeadAttention(heads), smooth(24), (0, 0.04), dt=0.01, refine=True)
    assert sol.nsteps == 4 and sol.strategy == "moments"
    assert np.max(np.abs(sol.mass_steps - 1)) <= 1e-12


# ------------------------------------------------------------------ invariants
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("c", [1.0, -1.0])
def test_energy_monotone_and_mass_exact(normalized, c):
    model = mf.SelfAttention(3.0, V=c * np.eye(3), normalized=normalized)
    t_end = 0.5 if normalized else 0.5 / np.exp(3.0)
    sol = mf.solve(model, smooth(24), (0, t_end), refine=True)
    assert np.max(np.abs(sol.mass_steps - 1)) <= 1e-12
    dE = np.diff(sol.energy_steps) * c
    assert np.all(dE >= -1e-12 * np.abs(sol.energy_steps[1:]))
    assert c * (sol.energy[-1] - sol.energy[0]) > 0
    # the energy of the density equals the model's E_β on the grid measure
    pts, w = sol.densities[-1].as_measure()
    assert sol.energy[-1] == pytest.approx(mf.SelfAttention(3.0).energy(pts, w), rel=1e-12)


def test_collapse_beyond_reach_stops_naming_t():
    """Grid only (no hand-over to the Lagrangian measure): the run stops where the grid is lost, saying when."""
    mu0 = mf.Density.from_function(mf.SphereGrid(24), lambda x: np.exp(3 * x[..., 2]))
    sol = mf.solve(mf.SelfAttention(4.0), mu0, (0, 20), method="rk45", refine=False, representation="grid")
    assert sol.status is mf.Status.RESOLUTION_LOST and 0 < sol.t_reached < 20 and sol.t[-1] == sol.t_reached
    assert all(np.all(np.isfinite(d.values)) for d in sol.densities)
    with pytest.raises(mf.ResolutionError) as info:
        mf.solve(mf.SelfAttention(4.0), mu0, (0, 20), method="rk45", refine=False, representation="grid",
                 raise_on_failure=True)
    assert info.value.t == sol.t_reached and f"t = {info.value.t:.6g}" in str(info.value)


# ------------------------------------------------------------------ bad input
def test_bad_input():
    with pytest.raises(ValueError, match="`lmax`"):
        mf.SphereGrid(1)
    g = mf.SphereGrid(4)
    bad = np.ones(g.shape)
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        mf.Density(g, bad)
    bad[0, 0] = -1.0
    with pytest.raises(ValueError, match="non-negative"):
        mf.Density(g, bad)
    with pytest.raises(ValueError, match="unit vectors"):
        mf.Density.uniform(g)(np.array([[1.0, 0.1, 0.0]]))
    with pytest.raises(ValueError, match="2×2|3×3"):
        mf.solve(mf.SelfAttention(1.0, Q=np.eye(2)), mf.Density.uniform(g), (0, 1))


# ------------------------------------------------------------------ backends
def test_backends_agree_and_solutions_match():
    from meanfield.domains.sphere import DuccBackend, PyshtoolsBackend

    rng = np.random.default_rng(3)
    for L in (5, 31, 96):
        g = rng.normal(size=(L + 1, 2 * L + 1))
        a, b = PyshtoolsBackend.analysis(g, L), DuccBackend.analysis(g, L)
        assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(a))
        assert np.max(np.abs(PyshtoolsBackend.synthesis(a, L + 3) - DuccBackend.synthesis(a, L + 3))) <= 1e-12 * np.max(np.abs(g))
    d = {name: mf.Density.from_function(mf.SphereGrid(24, backend=name), lambda x: np.exp(x[..., 0] + x[..., 2] ** 2))
         for name in ("pyshtools", "ducc0")}
    sols = {k: mf.solve(mf.SelfAttention(2.0), v, (0, 0.2), dt=0.02) for k, v in d.items()}
    assert np.max(np.abs(sols["pyshtools"].densities[-1].values - sols["ducc0"].densities[-1].values)) <= 1e-12
    with pytest.raises(ValueError, match="backend"):
        mf.SphereGrid(8, backend="fftw")


# ------------------------------------------------------------------ the ring-plan fast path
@pytest.mark.parametrize("beta, normalized", [(4.0, True), (0.0, True), (1.5, False)])
@pytest.mark.parametrize("L", [24, 63])
def test_ring_plan_rate_equals_the_reference_path(beta, normalized, L):
    """The ring-plan right-hand side (the flux form) against the cilm-array path (the scalar form): two formulas
    for the same tendency, equal to round-off (1.2e-12 measured at L = 63, β = 0: the flux form multiplies the
    round-off of the analysed flux by |∇Y_lm| ~ l; both are within the tendency's conditioning of the exact
    tendency, test_sphere_flux.py); the FFT-friendly longitude count changes it only by the products'
    aliasing, below that here."""
    from meanfield.domains.sphere import SphereSpectral
    from meanfield.domains.sphere.transforms import dealiased_degree

    v = smooth_positive_sphere(L, seed=L)
    g = mf.SphereGrid(L, backend="ducc0")
    reference = SphereSpectral(g, beta, 0.7, normalized, fast=False)
    same_grid = SphereSpectral(g, beta, 0.7, normalized, nphi=2 * dealiased_degree(L) + 1)
    default = SphereSpectral(g, beta, 0.7, normalized)
    assert default.fast and default._pd.nphi >= 2 * dealiased_degree(L) + 1
    a, speed_a, _ = reference.rate_and_speeds(v)
    b, speed_b, _ = same_grid.rate_and_speeds(v)
    scale = np.max(np.abs(a))
    # two transform paths at lmax 63 (ring plans, plain SHT) of products of O(1) fields: ~L EPS of each product,
    # differentiated (×L): 5.7e-13 of the scale measured (USA, β = 1.5)
    assert np.max(np.abs(a - b)) <= 2e-11 * scale
    assert speed_b == pytest.approx(speed_a, rel=1e-13)
    assert same_grid.speeds(v)[0] == pytest.approx(speed_a, rel=1e-13)
    assert np.max(np.abs(default.rate(v) - a)) <= 2e-11 * scale
    # and both transform libraries: pyshtools' cilm path on its own grid, to their agreement (2.3e-12 of the scale
    # measured on an AVX2 CPU, 8.1e-13 here)
    p = SphereSpectral(mf.SphereGrid(L, backend="pyshtools"), beta, 0.7, normalized)
    assert np.max(np.abs(p.rate(v) - a)) <= 5e-11 * scale
    with pytest.raises(ValueError, match="fast"):
        SphereSpectral(mf.SphereGrid(L, backend="pyshtools"), beta, 0.7, normalized, fast=True)


@pytest.mark.parametrize("beta", [0.5, 4.0, 40.0])
def test_potential_is_truncated_only_below_round_off(beta, monkeypatch):
    """potential_degree(a, L, N) = L_u: the degrees of u = Σ N_l a_lm Y_lm past L_u add to ∇u at most
    Σ_{l>L_u} N_l c_l ‖a_l‖ (Cauchy–Schwarz and Σ_m |∇Y_lm|² = l(l+1)(2l+1)/4π = c_l²), which is at most
    2⁻⁵³ Σ_l N_l c_l ‖a_l‖, the scale of the full sum's round-off: measured by synthesising that tail alone on the
    dealiased rings. L_u is where N_l ~ (β/2)^l/(2l+1)!! makes it so (< L for moderate β), and the right-hand side
    with the truncated potential equals the one with the full potential to round-off."""
    from meanfield.domains.sphere import SphereSpectral, continuity
    from meanfield.domains.sphere.continuity import funk_hecke, potential_degree
    from meanfield.domains.sphere.gauss import alm_layout

    L = 63
    g = mf.SphereGrid(L)
    rho = mf.Density.from_function(g, lambda x: np.exp(12.0 * x[..., 2] + 3.0 * x[..., 0] * x[..., 1])).values
    rate = SphereSpectral(g, beta, 1.0, True)
    a = rate.coefficients(rho)
    _, N = funk_hecke(L, beta)
    l, m, _ = alm_layout(L)
    norm = np.sqrt(np.bincount(l, np.where(m > 0, 2.0, 1.0) * np.abs(a) ** 2, minlength=L + 1))
    bound = N * np.sqrt(np.arange(L + 1) * np.arange(1, L + 2) * (2 * np.arange(L + 1) + 1) / (4 * np.pi)) * norm
    Lu = potential_degree(a, L, N)
    assert 1 <= Lu <= L and np.sum(bound[Lu + 1:]) <= 2.0**-53 * np.sum(bound) < np.sum(bound[Lu:])
    assert Lu < {0.5: 20, 4.0: 30, 40.0: L}[beta]
    pd = rate._pd
    tail = np.where(l > Lu, N[l] * a, 0.0)
    spectra = pd.spectra(3)
    pd.gradient_legs(tail, out=spectra[:, :, : L + 1])
    values = pd.rings(spectra)
    grad = np.hypot(values[1], values[2]) * pd.gradient_scale[:, None]
    assert np.max(grad) <= np.sum(bound[Lu + 1:])
    assert np.max(np.abs(values[0])) <= np.sum(bound[Lu + 1:])
    full, cut = pd.spectra(3), pd.spectra(3)
    pd.gradient_legs(N[l] * a, out=full[:, :, : L + 1])
    pd.gradient_legs(N[l] * a, out=cut[:, :, : L + 1], degree=Lu)
    full, cut = pd.rings(full), pd.rings(cut)
    assert np.max(np.abs(full - cut)) <= 4 * 2.0**-53 * np.sum(bound)
    assert potential_degree(a * np.nan, L, N) == L  # non-finite coefficients: nothing is dropped
    truncated = rate.rate(rho)
    monkeypatch.setattr(continuity, "potential_degree", lambda a, L, N: L)
    # what the cut drops is below round-off: the two rates differ by the syntheses' round-off, 1.3e-15 relative seen
    assert np.max(np.abs(rate.rate(rho) - truncated)) <= 5e-14 * np.max(np.abs(truncated))


@pytest.mark.parametrize("beta, normalized", [(4.0, True), (0.0, True), (1.5, False)])
def test_shtns_backend_equals_ducc0(beta, normalized):
    """The optional shtns backend (skipped where shtns is absent): its transforms and its fused right-hand side
    against ducc0's on the same grid, L = 40 (shtns) and L = 20 (below shtns' 32 colatitudes: ducc0 does it)."""
    pytest.importorskip("shtns")
    import pickle

    from meanfield.domains.sphere import SphereSpectral

    u = 2.0 ** -53
    for L in (20, 40):
        v = smooth_positive_sphere(L, seed=L)
        d, s = mf.SphereGrid(L, backend="ducc0"), mf.SphereGrid(L, backend="shtns")
        # Error model: each library's transform is a sum whose every term passes through at most γ = nθ + nφ + L
        # roundings (the Legendre recurrence over l <= L, the sum over the nθ rings or the degrees, the sum over
        # the nφ longitudes or orders: a direct DFT's length, an FFT's log₂ nφ is shorter), so it errs by at most
        # γu × (the sum of its terms' magnitudes), and the two libraries differ by twice that. Analysis: the terms
        # of c_lm = Σ q_k v_k Y_lm(x_k) sum to <= max|v| Σ q_k |Y_lm(x_k)| <= √(4π) max|v| (Cauchy–Schwarz, Σ q_k
        # = 4π, Σ q_k Y_lm² = 1: the quadrature is exact at degree 2L). Synthesis: those of v(x) = Σ c_lm Y_lm(x)
        # sum to <= A = Σ |c_lm| √((2l+1)/4π) (|Y_lm| <= √((2l+1)/4π), the addition theorem). Measured at L = 40
        # (AVX-512 and AVX2, ducc0 at psABI levels 4 and 3): analysis 7.4e-15 against 2.7e-13 (37×), synthesis
        # 1.6-2.0e-15 against 2.2e-13 (110×). (The former bounds, 1e-14 max|v| and a round trip to v within
        # 1e-13 max|v|, had no model and 2.9× and 2.4× margins: the round trip is dominated by v's own round-off,
        # not band-limited, 172 uA at L = 20 where ducc0 does both transforms.)
        gamma = v.shape[0] + v.shape[1] + L
        c = d.backend.analysis(v, L)
        scale = np.sqrt(4 * np.pi) * np.max(np.abs(v))
        assert np.max(np.abs(s.backend.analysis(v, L) - c)) <= 2 * gamma * u * scale
        A = np.sum(np.abs(c) * np.sqrt((2 * np.arange(L + 1)[:, None] + 1) / (4 * np.pi)))
        assert np.max(np.abs(s.backend.synthesis(c, L) - d.backend.synthesis(c, L))) <= 2 * gamma * u * A
        ref, fast = SphereSpectral(d, beta, 0.7, normalized), SphereSpectral(s, beta, 0.7, normalized)
        assert fast.shtns == (L >= 31)
        a, speed_a, _ = ref.rate_and_speeds(v)
        b, speed_b, _ = fast.rate_and_speeds(v)
        assert np.max(np.abs(a - b)) <= 5e-12 * np.max(np.abs(a))
        assert speed_b == pytest.approx(speed_a, rel=1e-13) and fast.speeds(v)[0] == pytest.approx(speed_a, rel=1e-13)
        assert np.array_equal(pickle.loads(pickle.dumps(fast)).rate(v), b)


def test_shtns_backend_says_how_to_install_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "shtns", None)  # import shtns now raises ImportError
    with pytest.raises(ImportError, match="libfftw3-dev"):
        mf.SphereGrid(40, backend="shtns")


@pytest.mark.parametrize("normalized", [True, False])
def test_compiled_quadrature_field_equals_the_models_sum(normalized):
    """The solver's quadrature path sums the grid measure with the compiled pairwise kernel; its right-hand
    side equals the one with the model's NumPy sum to round-off, for random Q, K, V and two heads, on S² and
    on the circle."""
    from meanfield.domains import CIRCLE, SPHERE
    from meanfield.kernels import grid_field as _compiled_field

    rng = np.random.default_rng(11)
    for d, domain, grid in ((3, SPHERE, mf.SphereGrid(12)), (2, CIRCLE, mf.CircleGrid(64))):
        heads = [mf.SelfAttention(1.5, *(rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)),
                                  normalized=normalized) for _ in range(2)]
        model = mf.MultiHeadAttention(heads)
        values = mf.Density.from_function(grid, lambda x: np.exp(x[..., 0] + 0.5 * x[..., 1] ** 2)).values
        ref = rhs(domain, model, grid, "quadrature").rate(values)
        fast = rhs(domain, model, grid, "quadrature", _compiled_field(model)).rate(values)
        assert np.max(np.abs(fast - ref)) <= 1e-12 * np.max(np.abs(ref))


def test_ring_plan_rates_pickle_and_do_not_share_work_arrays_across_threads():
    """A right-hand side pickles (its plans are rebuilt, not their per-thread work arrays), and two threads
    evaluating it at once on different densities get each its own answer."""
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    from meanfield.domains import SPHERE

    g = mf.SphereGrid(20)
    rate = rhs(SPHERE, mf.SelfAttention(3.0), g)
    values = [smooth_positive_sphere(20, seed) for seed in range(4)]
    expected = [rate.rate(v) for v in values]
    copy = pickle.loads(pickle.dumps(rate))
    assert np.array_equal(copy.rate(values[0]), expected[0])
    with ThreadPoolExecutor(2) as pool:
        for _ in range(5):
            got = list(pool.map(rate.rate, values))
            assert all(np.array_equal(a, b) for a, b in zip(got, expected))


@pytest.mark.skipif(__import__("numba").config.NUMBA_NUM_THREADS < 2, reason="needs two threads")
def test_transforms_below_the_thread_switch_do_not_depend_on_the_thread_count():
    """Below SHT_THREADS_FROM ducc0's transforms take one thread by default, the non-uniform synthesis included
    (the grid's interpolation; the S² map's route where no stencil meets its bound): one and two of numba's threads
    give the same bits (ducc0's synthesis_general on two threads differs from one in the last bits, 3e-15 at L = 8)."""
    import numba

    rng = np.random.default_rng(5)
    g = mf.SphereGrid(8)
    cilm = rng.standard_normal((2, 9, 9)) * np.tri(9)[None]
    cilm[1, :, 0] = 0.0
    cilm[0, 0, 0] = 10.0  # random coefficients of size 1 at every degree: no stencil, the non-uniform synthesis
    values = g.from_coefficients(cilm)
    x = rng.standard_normal((3000, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    B = np.array([[1.1, 0.2, -0.1], [-0.3, 0.9, 0.2], [0.1, 0.1, 1.2]])
    threads = numba.get_num_threads()
    out = {}
    try:
        for k in (1, 2):
            numba.set_num_threads(k)
            out[k] = (g.interpolate(values, x), g.linear_transport(values, B))
    finally:
        numba.set_num_threads(threads)
    assert all(np.array_equal(a, b) for a, b in zip(out[1], out[2]))


@pytest.mark.parametrize("method", ["rk4", "ssprk3"])
def test_solve_runs_its_stages_on_coefficients_as_on_values(method, monkeypatch):
    """The fixed steps' stages on the a_lm (one transform each way per step) give the same solve as stages on the
    grid values, CFL steps included; the values' part beyond degree L is carried unchanged."""
    from meanfield.representations import GridProblem

    g = mf.SphereGrid(24)
    d = mf.Density.from_function(g, lambda x: np.exp(2.0 * x[..., 2] + x[..., 0] * x[..., 1]))
    z = np.random.default_rng(0).standard_normal(g.shape)
    d = mf.Density(g, d.values + 1e-6 * (z - g.from_coefficients(g.coefficients(z))))  # a part beyond degree L
    model = mf.SelfAttention(4.0)
    staged = mf.solve(model, d, (0.0, 0.5), t_eval=[0.25, 0.5], method=method)
    assert GridProblem(model, g, "auto", True, 256).stages() is not None
    monkeypatch.setattr(GridProblem, "stages", lambda self: None)
    plain = mf.solve(model, d, (0.0, 0.5), t_eval=[0.25, 0.5], method=method)
    assert staged.nsteps == plain.nsteps and staged.nfev == plain.nfev
    for a, b in zip(staged.densities, plain.densities):
        assert np.max(np.abs(a.values - b.values)) <= 1e-13 * np.max(np.abs(b.values))
    residual = d.values - g.from_coefficients(g.coefficients(d.values))
    last = staged.densities[-1].values
    assert np.max(np.abs(residual)) > 1e-7  # the test means something
    # an analysis and a synthesis of O(1) values at lmax 16: ~L EPS; 1.13e-14 measured
    assert np.max(np.abs(last - g.from_coefficients(g.coefficients(last)) - residual)) <= 2e-13
