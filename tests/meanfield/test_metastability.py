"""Metastability measured (issue 48, item 5): the prediction from the initial data, the detector of metastable
states and merges, the two-cluster lifetime and the fit log T ≈ cβ.

- A law whose top linear rate is known: on S¹ σ_k = k² I_k(β)/(β I_0(β)) (SA, MATH.md §9), computed here from
  scipy's Bessel functions; ρ₀ = (1 + ε cos 3(θ − θ₀) + …)/2π has μ̂_3 = (ε/2) e^{3iθ₀}, so the predicted angles
  are θ₀ + 2πj/3 exactly (the grid's quadrature is exact for trigonometric polynomials of degree < n).
- A synthetic trajectory with clusters placed by hand (formation at t = 5, merges at t = 20 and 70): the detector
  must find the states 3 → 2 → 1 with those times to the output spacing, and E_β on each plateau equal to that of
  its configuration.
- Two weighted points on S¹ under SA merge at the time given by the quadrature of the exact two-point ODE
  (validation.metastability.two_cluster_merge_time): the merging particle flow and the detector must agree with it
  to the output spacing.
"""

import numpy as np
import pytest
from scipy.special import ive

import meanfield as mf
from meanfield.lagrangian import ClusterHistory, start
from meanfield.lagrangian.metastability import fourier_coefficients, metastable_states, predicted_clusters
from particles.metastability import chord_clusters, circular_error, cluster_masses, merging_flow
from particles.snapshot import Snapshot
from validation.metastability import lifetime_fit, two_cluster_merge_time


def sa_rates(beta, K, D=0.0):
    k = np.arange(1, K + 1)
    return k * k * (ive(k, beta) / (beta * ive(0, beta)) - D)


def law(theta0=0.7, eps=1e-3, n=64):
    g = mf.CircleGrid(n)

    def f(x):
        th = np.arctan2(x[..., 1], x[..., 0])
        return 1 + eps * np.cos(3 * (th - theta0)) + 0.3 * eps * np.cos(2 * th - 1.0) + 0.2 * eps * np.cos(5 * th + 2)

    return mf.Density.from_function(g, f)


def test_prediction_on_a_law_whose_top_rate_is_known():
    beta, theta0 = 4.4, 0.7
    p = predicted_clusters(law(theta0), mf.SelfAttention(beta=beta))
    sigma = sa_rates(beta, 8)
    assert p.count == int(np.argmax(sigma)) + 1 == 3
    assert p.rate == pytest.approx(sigma[2], rel=1e-13)
    assert p.runner_up == int(np.argsort(sigma)[-2]) + 1
    assert p.gap == pytest.approx(sigma[2] / np.sort(sigma)[-2] - 1, rel=1e-12)
    assert p.gap >= 0.2  # β = 4.4 is in the window where the prediction is sharp (top two rates 24 % apart)
    # μ̂_3 = (ε/2)e^{3iθ₀} / mass: the angles θ₀ + 2πj/3 to round-off
    assert abs(p.coefficient - 0.5e-3 * np.exp(3j * theta0)) < 1e-15
    assert circular_error(p.angles, theta0 + 2 * np.pi * np.arange(3) / 3) < 1e-9


def test_usa_and_noise_change_the_rates_as_derived():
    beta = 4.4
    assert predicted_clusters(law(), mf.SelfAttention(beta=beta, normalized=False)).count == 3  # σ ∝ SA's
    D = 0.05  # k²(I_k/(βI_0) − D) penalises high degrees: argmax 2
    p = predicted_clusters(law(), mf.SelfAttention(beta=beta), noise=D)
    assert p.count == int(np.argmax(sa_rates(beta, 8, D))) + 1 == 2
    assert p.rate == pytest.approx(sa_rates(beta, 8, D)[1], rel=1e-12)


def test_every_frame_gives_the_same_coefficients():
    rho = law()
    k = np.arange(1, 6)
    pts, w = rho.as_measure()
    ref = fourier_coefficients(rho, k)
    for frame in (start(rho), Snapshot(pts, w)):
        assert np.max(np.abs(fourier_coefficients(frame, k) - ref)) < 1e-15
    # a point mass at θ₀: μ̂_k = e^{ikθ₀}, clusters at θ₀ + 2πj/k
    theta0 = 1.3
    p = predicted_clusters(Snapshot([[np.cos(theta0), np.sin(theta0)]]), mf.SelfAttention(beta=9.0))
    assert circular_error(p.angles, theta0 + 2 * np.pi * np.arange(p.count) / p.count) < 1e-12


def test_prediction_refuses_what_it_is_not_derived_for(rng):
    with pytest.raises(ValueError, match="S¹"):
        predicted_clusters(Snapshot(np.eye(3)), mf.SelfAttention(beta=1.0))  # points on S²
    Q = np.eye(2) + 0.3 * rng.standard_normal((2, 2))
    with pytest.raises(ValueError, match="zonal"):
        predicted_clusters(law(), mf.SelfAttention(beta=1.0, Q=Q))
    with pytest.raises(TypeError, match="frame"):
        predicted_clusters(np.zeros((3, 2)), mf.SelfAttention(beta=1.0))


def synthetic(flicker=False):
    """60 particles: spread evenly until t = 5, then three clusters of 20 at 0, 2, 4; at t = 20 the first two at 1;
    from t = 70 all at 2.5. ``flicker``: at t = 40 the merged pair apart again for one output."""
    t = np.arange(0.0, 100.0, 0.5)
    base = np.repeat([0.0, 2.0, 4.0], 20)
    th = np.empty((t.size, 60))
    for i, s in enumerate(t):
        if s < 5:
            th[i] = 2 * np.pi * np.arange(60) / 60
        elif s < 20 or (flicker and s == 40):
            th[i] = base
        elif s < 70:
            th[i] = np.repeat([1.0, 1.0, 4.0], 20)
        else:
            th[i] = 2.5
    return t, np.stack([np.cos(th), np.sin(th)], -1)


def exact_energy(theta, beta):
    d = theta[:, None] - theta[None, :]
    return np.sum(np.exp(beta * np.cos(d))) / (60 ** 2 * 2 * beta)


def test_detector_finds_the_states_of_a_synthetic_trajectory():
    beta = 3.0
    t, x = synthetic()
    energy = np.array([exact_energy(np.arctan2(X[:, 1], X[:, 0]), beta) for X in x])
    st = metastable_states(t, cluster_masses(x), energy=energy)
    assert st.formed == 3
    assert list(st.counts) == [3, 2, 1]
    assert [s.start for s in st.states] == [5.0, 20.0, 70.0]
    assert st.merges == ((20.0, 3, 2), (70.0, 2, 1))
    assert st.T2 == 50.0 and st.last_merge == 70.0 and st.lifetime(3) == 15.0
    assert np.all(st.lifetimes == [15.0, 50.0]) and st.states[-1].lifetime == np.inf
    assert all(s.resolution == 0.5 for s in st.states[:-1])
    for s, th in zip(st.states, (np.repeat([0.0, 2.0, 4.0], 20), np.repeat([1.0, 1.0, 4.0], 20), np.full(60, 2.5))):
        assert s.energy == pytest.approx(exact_energy(th, beta), rel=1e-12)  # the plateaus of the staircase
    assert np.all(np.diff([s.energy for s in st.states]) > 0)  # E_β climbs


def test_a_transient_is_dropped_only_when_asked():
    t, x = synthetic(flicker=True)
    assert list(metastable_states(t, cluster_masses(x)).counts) == [3, 2, 3, 2, 1]
    st = metastable_states(t, cluster_masses(x), min_duration=1.0)
    assert list(st.counts) == [3, 2, 1] and st.T2 == 50.0


def test_formed_clusters_skip_counts_that_do_not_last():
    from particles.metastability import formed_clusters

    t, x = synthetic(flicker=True)
    t0, c, m = formed_clusters(t, x)
    assert t0 == 5.0 and np.allclose(m, 1 / 3, rtol=1e-14)
    assert circular_error(np.arctan2(c[:, 1], c[:, 0]), [0.0, 2.0, 4.0]) < 1e-12
    assert formed_clusters(t, x, persist=10.0)[0] == 5.0  # three clusters last 15
    t1, c, m = formed_clusters(t, x, persist=20.0)  # not the 3-state (15), nor the 2-state before its flicker at 40
    assert t1 == 40.5 and np.allclose(m, [2 / 3, 1 / 3], rtol=1e-14)
    assert formed_clusters(t, x, persist=200.0) is None


def test_lagrangian_history_gives_the_same_states():
    t, x = synthetic()
    masses = cluster_masses(x)
    count = np.array([np.sum(m >= 0.02) for m in masses])
    h = ClusterHistory(t, count, tuple(masses), ())
    st = h.states()
    assert list(st.counts) == [3, 2, 1] and st.T2 == 50.0 and st.last_merge == 70.0


def test_two_weighted_points_merge_when_the_two_point_ode_says():
    beta, m1, gap = 3.0, 0.7, np.pi - 0.05
    T = two_cluster_merge_time(beta, m1, 1 - m1, gap)
    x0 = np.array([[1.0, 0.0], [np.cos(gap), np.sin(gap)]])
    t = np.concatenate([[0.0], np.geomspace(1.0, 3 * T, 400)])
    st = merging_flow(mf.SelfAttention(beta=beta), x0, t, [m1, 1 - m1], merge=1e-12).states()
    spacing = t[-1] / t[-2] - 1  # 1.6 % per output
    assert st.formed == 2 and st.T2 == st.last_merge
    assert T <= st.last_merge <= T * (1 + 1.01 * spacing)  # the first output after the merge
    # near the antipodal saddle T ≈ e^{2β} log(1/(π − gap))/(m₁/m₂ + m₂/m₁) up to an O(1) factor in the log
    assert 0.5 < T * (m1 / (1 - m1) + (1 - m1) / m1) * np.exp(-2 * beta) / np.log(1 / (np.pi - gap)) < 2


def test_lifetime_fit_recovers_the_slope(rng):
    beta = np.array([1.0, 2.0, 3.0, 4.0])
    exact = lifetime_fit(beta, np.exp(2.0 * beta + 0.5))
    assert exact.c == pytest.approx(2.0, abs=1e-12) and exact.interval[1] - exact.interval[0] < 1e-10
    T = np.exp(1.5 * beta[:, None] + 0.3 + 0.1 * rng.standard_normal((4, 10)))
    T[0, 0] = np.nan  # a run with no merge seen is left out
    f = lifetime_fit(beta, T)
    assert f.n == 39 and f.beta_range == (1.0, 4.0)
    # the interval is slope ± t_{0.975, n−2} s/√Σ(β − β̄)², s² the residual variance (least squares, by hand)
    x = np.repeat(beta, 10)[1:]
    y = np.log(T.ravel()[1:])
    A = np.stack([x, np.ones_like(x)], 1)
    (c, b), res, *_ = np.linalg.lstsq(A, y, rcond=None)
    se = np.sqrt(res[0] / (x.size - 2) / np.sum((x - x.mean()) ** 2))
    q = 2.0261924630291093  # scipy.stats.t.ppf(0.975, 37)
    assert f.c == pytest.approx(c, rel=1e-12) and f.intercept == pytest.approx(b, rel=1e-12)
    assert f.interval == pytest.approx((c - q * se, c + q * se), rel=1e-10)
    with pytest.raises(ValueError, match="positive"):
        lifetime_fit(beta, -np.ones(4))
    with pytest.raises(ValueError, match="two values"):
        lifetime_fit(np.ones(4), np.ones(4))


@pytest.mark.slow
@pytest.mark.parametrize("beta, k", [(1.8, 2), (4.4, 3)])
def test_predicted_count_forms_from_a_perturbed_uniform_law(beta, k):
    """Where the top two rates differ by >= 20 % (β = 1.8: 58 %, β = 4.4: 24 %), 64 quantile particles of
    (1 + 1e-4 Σ_{k<=8} a_k cos(kθ − φ_k))/2π form k* clusters (5 seeds), at the predicted angles to within
    ε^{1 − σ₂/σ_{k*}}·O(1) (0.17 at β = 4.4). About a minute on two cores."""
    import particles
    from particles.metastability import formed_clusters

    model = mf.SelfAttention(beta=beta)
    x0 = []
    for seed in range(5):
        r = np.random.default_rng(seed)
        a, phi = r.uniform(0.5, 1.0, 8), r.uniform(0, 2 * np.pi, 8)
        u = 2 * np.pi * (np.arange(64) + 0.5) / 64
        th, m = u.copy(), np.arange(1, 9)[:, None]
        for _ in range(40):  # the quantiles: θ + ε Σ a_k (sin(kθ − φ_k) + sin φ_k)/k = u
            F = th + 1e-4 * np.sum(a[:, None] * (np.sin(m * th - phi[:, None]) + np.sin(phi)[:, None]) / m, 0) - u
            th -= F / (1 + 1e-4 * np.sum(a[:, None] * np.cos(m * th - phi[:, None]), 0))
        x0.append(np.stack([np.cos(th), np.sin(th)], 1))
    x0 = np.array(x0)
    tr = particles.simulate(model, x0, np.arange(0, 60.5, 0.5), method="rk4", progress=False)
    for s in range(5):
        p = predicted_clusters(Snapshot(x0[s]), model)
        assert p.count == k and p.gap >= 0.2
        t, c, _ = formed_clusters(tr.t, tr.x[:, s])
        assert len(c) == k
        assert circular_error(p.angles, np.arctan2(c[:, 1], c[:, 0])) < 0.3


def brute_force_components(x, h):
    """Union-find over all n(n−1)/2 pairs with |x_i − x_j| <= h (np.linalg.norm of the difference): the definition
    of the single-linkage clusters, O(n²), labels as the smallest index of each component."""
    n = len(x)
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if np.linalg.norm(x[i] - x[j]) <= h:
                a, b = root(i), root(j)
                parent[max(a, b)] = min(a, b)
    return np.array([root(i) for i in range(n)])


def same_partition(a, b):
    """Labels equal up to a permutation: i and j share a label in a exactly when they do in b."""
    return np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


def clustered(rng, n, d, k, spread):
    """n unit vectors in k clumps of angular size ~spread around random centres of S^{d-1}."""
    c = rng.standard_normal((k, d))
    x = c[rng.integers(0, k, n)] / np.linalg.norm(c, axis=1).min() + spread * rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def away_from_ties(x, h, gap):
    """Whether no pair's chord lies within a relative ``gap`` of h (then round-off cannot move an edge)."""
    r = np.linalg.norm(x[:, None] - x[None, :], axis=-1)
    return not np.any(np.abs(r - h) <= gap * h)


@pytest.mark.parametrize("d", [2, 3, 8])
def test_chord_clusters_are_the_single_linkage_components(rng, d):
    """chord_clusters (a k-d tree's pairs, sparse components) gives the partition of the brute-force union-find over
    all pairs |x_i − x_j| <= h, on iid uniform points (many small chains) and on clumps (few big components), at
    radii below, near and above the clumps' size; on the sphere, the same partition as the δ-graph
    ⟨x_i, x_j⟩ >= 1 − h²/2 where no pair is within 1e-9 of h (ties are the only place they may differ)."""
    for x in (rng.standard_normal((300, d)), clustered(rng, 300, d, 5, 0.02)):
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        for h in (0.01, 0.05, 0.2, 0.6):
            lab = chord_clusters(x, h)
            assert same_partition(lab, brute_force_components(x, h))
            if away_from_ties(x, h, 1e-9):
                from scipy.sparse.csgraph import connected_components

                assert same_partition(lab, connected_components(x @ x.T >= 1.0 - h * h / 2, directed=False)[1])
    assert chord_clusters(np.zeros((0, d)), 0.1).shape == (0,)
    with pytest.raises(ValueError, match="radius"):
        chord_clusters(np.eye(d), -1.0)


def test_chord_clusters_do_not_change_under_a_rotation(rng):
    """The graph i ~ j iff |x_i − x_j| <= h is invariant under x -> Rx (|Rx − Ry| = |x − y|): the labels of rotated
    clumps are the same (identical, since they number components by their first point), the configuration chosen
    with no chord within 1e-6 of h (a rotation moves chords by ~ε)."""
    from scipy.stats import special_ortho_group

    for d, h in ((3, 0.1), (5, 0.15)):
        x = clustered(rng, 400, d, 6, 0.02)
        assert away_from_ties(x, h, 1e-6)
        lab = chord_clusters(x, h)
        assert 1 < lab.max() + 1 < 400  # a non-trivial partition
        for _ in range(3):
            R = special_ortho_group.rvs(d, random_state=rng)
            assert np.array_equal(chord_clusters(x @ R.T, h), lab)
