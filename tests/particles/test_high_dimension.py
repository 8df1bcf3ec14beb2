"""Particles in high dimension (GLPR Part II, §6): the equiangular solution of Theorem 6.8, and the exact span
reduction and zonal kernel that make d = 128 cheap (tests/particles/test_hemisphere.py: §6.1)."""

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield.analysis.exact import equiangular
from particles import clusters, fused, span


def _pairs(x):
    """The inner products ⟨x_i, x_j⟩, i < j, of each system: shape (..., n(n−1)/2)."""
    n = x.shape[-2]
    iu = np.triu_indices(n, 1)
    return (x @ np.swapaxes(x, -1, -2))[..., iu[0], iu[1]]


# ------------------------------------------------------------------ GLPR Theorem 6.8: the equiangular solution
@pytest.mark.parametrize("normalized", [True, False])
def test_orthonormal_tokens_stay_equiangular_on_the_ode(normalized):
    """n = d = 32 orthonormal tokens, Q = K = V = I, β = 1: every ⟨x_i(t), x_j(t)⟩ is ρ(t) of GLPR (6.9) (SA) or
    (6.10) (USA). RK4 is fourth order here (errors at t = 2 for dt = 0.1, 0.05, 0.025, 0.0125: SA 4.5e-7, 2.8e-8,
    1.8e-9, 1.1e-10; USA 3.1e-6, 1.9e-7, 1.2e-8, 7.6e-10), so dt = 0.00625 leaves about 7e-12 (SA) and 5e-11
    (USA) against the 1e-9 asserted. Two frames at once run the fused zonal kernel (d = 32 >= ZONAL_FROM), a
    single frame the pairwise sums."""
    beta, n = 1.0, 32
    model = mf.SelfAttention(beta, normalized=normalized)
    rho = equiangular([2.0, 5.0], n, beta, normalized)
    assert 0 < rho[0] < rho[1] < 1
    for x0 in (pt.orthogonal(n, n, rng=0), pt.orthogonal(n, n, rng=1, batch=2)):
        traj = pt.simulate(model, x0, [0.0, 2.0, 5.0], dt=0.00625)
        assert traj.strategy == ("fused" if x0.ndim == 3 else "pairwise")
        for k in (1, 2):
            assert np.max(np.abs(_pairs(traj.x[k]) - rho[k - 1])) <= 1e-9


def test_equiangular_in_more_dimensions_than_tokens_through_the_span():
    """n = 8 orthonormal tokens in d = 64 (Theorem 6.8 needs d >= n): integrated in their 8-dimensional span, the
    inner products are still ρ(t) of (6.9), and the tokens stay in the span of the initial ones."""
    n, d, beta = 8, 64, 2.0
    x0 = pt.orthogonal(n, d, rng=3, batch=3)
    traj = pt.simulate(mf.SelfAttention(beta), x0, [0.0, 1.0, 4.0], dt=0.00625)
    assert traj.reduced_to == n
    rho = equiangular([1.0, 4.0], n, beta)
    for k in (1, 2):
        assert np.max(np.abs(_pairs(traj.x[k]) - rho[k - 1])) <= 1e-9
    P = np.swapaxes(x0, -1, -2) @ x0  # projector on span{x_i(0)} (orthonormal rows)
    assert np.max(np.abs(traj.x[-1] @ P - traj.x[-1])) <= 1e-14


# ------------------------------------------------------------------ the span reduction and the zonal kernel
@pytest.mark.parametrize("normalized", [True, False])
def test_span_reduction_is_the_direct_integration_to_round_off(normalized):
    """d = 128, n = 32 (GLPR §6.3's d): integrated in the 32-dimensional span of x0 and mapped back, the trajectory
    is the one integrated in R^128 to round-off (measured 6e-16 SA, 4e-16 USA at t = 10), for the fused path
    (a batch) and the pairwise path (one system), with Q = qI, K = kI, V = cI."""
    d, n = 128, 32
    I = np.eye(d)
    beta = 4.0 if normalized else 1.0
    model = mf.SelfAttention(beta, Q=1.5 * I, K=0.8 * I, V=0.7 * I, normalized=normalized)
    t = [0.0, 2.5, 10.0]
    for x0 in (pt.uniform_sphere(n, d, rng=1, batch=3), pt.uniform_sphere(n, d, rng=2)):
        a = pt.simulate(model, x0, t, dt=0.05)
        b = pt.simulate(model, x0, t, dt=0.05, reduce_span=False)
        assert a.reduced_to == n and b.reduced_to is None and a.strategy == b.strategy and a.nsteps == b.nsteps
        assert a.x.shape == b.x.shape == (3,) + x0.shape
        assert np.max(np.abs(a.x - b.x)) <= 1e-12
        np.testing.assert_array_equal(a.x[0], b.x[0])  # the initial tokens exactly, not through B Bᵀ
        assert np.max(np.abs(np.linalg.norm(a.x, axis=-1) - 1)) <= 1e-14


def test_span_reduction_applies_only_where_the_span_is_invariant(rng):
    """Noise, a general V, n >= d and the adaptive methods are integrated in R^d (reduced_to None), with the
    reason stated by span.refusal; weighted particles and a repulsive qk < 0 are reduced."""
    d, n = 12, 5
    x0 = pt.uniform_sphere(n, d, rng=rng, batch=2)
    t = [0.0, 0.5]
    assert pt.simulate(mf.SelfAttention(1.0), x0, t).reduced_to == n
    assert pt.simulate(mf.SelfAttention(1.0), x0, t, weights=[0.1, 0.2, 0.3, 0.2, 0.2]).reduced_to == n
    neg = mf.SelfAttention(1.0, Q=-np.eye(d))
    a, b = pt.simulate(neg, x0, t, dt=0.01), pt.simulate(neg, x0, t, dt=0.01, reduce_span=False)
    assert a.reduced_to == n and np.max(np.abs(a.x - b.x)) <= 1e-13
    V = np.eye(d) + 0.1 * rng.standard_normal((d, d))
    assert pt.simulate(mf.SelfAttention(1.0, V=V), x0, t).reduced_to is None
    assert pt.simulate(mf.SelfAttention(1.0, noise=0.1), x0, t, rng=0).reduced_to is None
    assert pt.simulate(mf.SelfAttention(1.0), x0, t, method="rk45").reduced_to is None
    assert pt.simulate(mf.SelfAttention(1.0), pt.uniform_sphere(n, 4, rng=rng), t).reduced_to is None
    assert "noise" in span.refusal(mf.SelfAttention(1.0), n, d, method="rk4", noisy=True)
    assert "zonal" in span.refusal(mf.SelfAttention(1.0, V=V), n, d, method="rk4", noisy=False)
    assert "rk45" in span.refusal(mf.SelfAttention(1.0), n, d, method="rk45", noisy=False)
    assert "nothing to gain" in span.refusal(mf.SelfAttention(1.0), d, d, method="rk4", noisy=False)
    with pytest.raises(TypeError, match="reduce_span"):
        pt.simulate(mf.SelfAttention(1.0), x0, t, reduce_span="yes")


def test_span_basis_and_lift():
    """B has orthonormal columns and reproduces x (also for linearly dependent tokens); lift maps a history of
    coordinates back, time first, stored system-major so that the per-system view is contiguous."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6, 20))
    x[:, 5] = x[:, 0] + x[:, 1]  # rank 5
    B = span.basis(x)
    assert B.shape == (4, 20, 6)
    np.testing.assert_allclose(np.swapaxes(B, -1, -2) @ B, np.broadcast_to(np.eye(6), (4, 6, 6)), atol=1e-14)
    np.testing.assert_allclose(x @ B @ np.swapaxes(B, -1, -2), x, atol=1e-14)
    hist = [x @ B, 2 * (x @ B)]
    out = span.lift(hist, B, first=x)
    assert out.shape == (2, 4, 6, 20) and np.moveaxis(out, 0, 1).flags.c_contiguous
    np.testing.assert_array_equal(out[0], x)
    np.testing.assert_allclose(out[1], 2 * x, atol=1e-13)
    with pytest.raises(ValueError, match="n <= d"):
        span.basis(np.ones((5, 3)))


@pytest.mark.parametrize("normalized", [True, False])
def test_zonal_fused_kernel_equals_the_generic_sums(normalized):
    """The two-product kernel (d >= ZONAL_FROM, Q = qI, K = kI, V = cI, either sign of qk) against the pairwise
    path in d = 16 with n = 40 > d (no span reduction): the same RK4 trajectory to round-off."""
    d = 16
    assert d >= fused.ZONAL_FROM
    I = np.eye(d)
    for q in (1.3, -0.6):
        model = mf.SelfAttention(3.0, Q=q * I, K=0.9 * I, V=-0.8 * I, normalized=normalized)
        x0 = pt.uniform_sphere(40, d, rng=7, batch=4)
        a = pt.simulate(model, x0, [0.0, 0.5, 2.0], dt=0.02, strategy="fused")
        b = pt.simulate(model, x0, [0.0, 0.5, 2.0], dt=0.02, strategy="pairwise")
        assert a.reduced_to is None and np.max(np.abs(a.x - b.x)) <= 1e-13


def test_gram_energy_kernel_in_high_dimension(rng):
    """E_β of small systems in d = 128 (the Gram matrix by one BLAS product, meanfield.kernels.energy) against the
    model's own double sum, with weights, for β from 0 to 300."""
    x = pt.uniform_sphere(32, 128, rng=rng, batch=3)
    x[1, :8] = x[1, :1]  # a cluster: e^{β(⟨x_i, x_j⟩ − 1)} = 1 for its pairs
    w = rng.uniform(0, 1, (3, 32))
    w /= w.sum(axis=1, keepdims=True)
    for beta in (0.0, 0.3, 7.0, 300.0):
        ref = [mf.SelfAttention(beta).energy(x[b], w[b]) for b in range(3)]
        # Gram products in d = 128 (BLAS vs the compiled kernel's order) times β in the exponent: ~βd EPS; 4.4e-14 seen
        np.testing.assert_allclose(mf.kernels.energy(x, w, beta), ref, rtol=1e-12)


def test_high_dimensional_kernels_give_the_same_bits_on_any_thread_count(monkeypatch):
    """The zonal RK4 kernel, the span's lift, pair_fraction and the Gram energy run one task per system on
    meanfield.kernels.threads (and BLAS only on single-threaded sizes): 1, 2 or 3 threads give the same bits."""
    import numba

    x = pt.uniform_sphere(16, 48, rng=11, batch=5)
    w = np.full((5, 16), 1 / 16)
    model = mf.SelfAttention(3.0)
    results = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(numba, "get_num_threads", lambda t=threads: t)
        traj = pt.simulate(model, x, [0.0, 0.3, 1.0], dt=0.05)
        assert traj.reduced_to == 16
        results.append((fused.rk4_small_systems(model, x, 0.05, 6), traj.x, clusters.pair_fraction(traj.x, 0.05),
                        mf.kernels.energy(traj.x[-1], w, 3.0)))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_zonal_fused_kernel_refuses_usa_overflow():
    """USA with |βqk| past float64's exponent range is refused before any step, with the norm (the zonal kernel
    reads it off q, k without an SVD); the same model in SA runs."""
    x0 = pt.uniform_sphere(6, 16, rng=0, batch=2)
    with pytest.raises(OverflowError, match="‖βQᵀK‖ = 1000.0"):
        fused.rk4_small_systems(mf.SelfAttention(800.0, Q=1.25 * np.eye(16), normalized=False), x0, 1e-4, 1)
    out = fused.rk4_small_systems(mf.SelfAttention(800.0, Q=1.25 * np.eye(16)), x0, 1e-4, 1)
    assert np.all(np.isfinite(out))


def test_phase_diagram_script_in_d128_follows_the_equiangular_curve(tmp_path, capsys):
    """scripts/phase_diagram.py --d 128 (n = 32, 16 systems, β = 0.5 and 2, t <= 8): iid tokens in d = 128 are
    nearly orthogonal, and by GLPR Theorem 6.9 every pair clusters along the equiangular solution of (6.9): the
    statistic is 0 until t*(β) − 1 and 1 from t*(β) + 1 (measured with 1024 systems: from 0 to 1 within t* − 0.5,
    t* + 0.5 for β <= 2). The step check halves each β's step and reports the change against the Hoeffding
    half-width √(log(2/α)/(2R)) = 0.34 (R = 16, α = 0.05)."""
    from scripts.phase_diagram import hoeffding, main

    main(["--d", "128", "--realisations", "16", "--betas", "2", "--beta-min", "0.5", "--beta-max", "2", "--t-max",
          "8", "--dt-out", "0.5", "--check-step", "--serial", "--output", str(tmp_path)])
    out = capsys.readouterr().out
    assert "step check at β = [0.5, 2.0]" in out and "converged" in out and f"= {hoeffding(16):.3f}" in out
    data = np.load(tmp_path / "phase_diagram.npz")
    t, p, t_star = data["t"], data["p_pair"], data["t_star"]
    assert np.all((5 < t_star) & (t_star < 6.5)), t_star
    for k in range(2):
        assert np.all(p[k][t <= t_star[k] - 1] == 0) and np.all(p[k][t >= t_star[k] + 1] == 1), (t_star[k], p[k])


def test_span_coordinates_are_an_isometric_copy_of_the_positions():
    """simulate(..., span_coordinates=True) keeps the reduced run's coordinates: mapped by the basis they are the
    positions to round-off, and every inner product — the pair fraction, E_β — is the positions' (the study runner
    reads them where it needs no positions: a d = 128 phase diagram without the 6.7 GB history per β)."""
    import particles as pt
    from particles import clusters
    from meanfield.kernels import energy

    x0 = pt.uniform_sphere(12, 40, rng=3, batch=3)
    model = mf.SelfAttention(2.0)
    a = pt.simulate(model, x0, [0, 1, 4], dt=0.05)
    b = pt.simulate(model, x0, [0, 1, 4], dt=0.05, span_coordinates=True)
    assert a.basis is None and b.basis.shape == (3, 40, 12) and b.x.shape == (3, 3, 12, 12)
    assert np.max(np.abs(b.x @ np.swapaxes(b.basis, -1, -2) - a.x)) < 1e-13
    for k in range(3):
        assert np.array_equal(clusters.pair_fraction(a.x[k], 1e-3), clusters.pair_fraction(b.x[k], 1e-3))
        w = np.full((3, 12), 1 / 12)
        assert np.allclose(energy(a.x[k], w, 2.0), energy(b.x[k], w, 2.0), rtol=1e-13)
    with pytest.raises(TypeError, match="span_coordinates"):
        pt.simulate(model, x0, [0, 1], span_coordinates="yes")


def test_observe_keeps_a_statistic_instead_of_the_history():
    """simulate(..., observe=f) keeps f at every output (here the pair fraction) equal to f of the stored history,
    in R^d and in the span coordinates, and the last positions alone."""
    import particles as pt
    from particles import clusters

    x0 = pt.uniform_sphere(16, 40, rng=5, batch=4)
    model = mf.SelfAttention(3.0)
    t = [0, 1, 2, 6]
    full = pt.simulate(model, x0, t, dt=0.05)
    f = lambda x: clusters.pair_fraction(x, 1e-2)  # noqa: E731
    want = np.stack([f(x) for x in full.x])
    for coords in (False, True):
        obs = pt.simulate(model, x0, t, dt=0.05, observe=f, span_coordinates=coords)
        assert np.array_equal(obs.observed, want) and obs.x.shape[0] == 1
    assert np.max(np.abs(pt.simulate(model, x0, t, dt=0.05, observe=f).x[0] - full.x[-1])) < 1e-14
    with pytest.raises(TypeError, match="observe"):
        pt.simulate(model, x0, t, observe=3)
