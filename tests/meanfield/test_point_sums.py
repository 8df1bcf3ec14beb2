"""The point sums of S¹ and S² as the million-particle path runs them (issue 50, item 2): against the direct pair sum
within the truncation bound they state plus their round-off, at the directions of any non-zero vectors, independent
of the thread count, and the split non-uniform transforms equal to the whole."""

import numba
import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield.domains.circle import point_sums as cs
from meanfield.domains.sphere import point_sums as ss
from tests.helpers import EPS


def _direct(x, w, q, beta, c):
    """The SA field c P_q(Σ_j w_j e^{β⟨q,x_j⟩} x_j / Σ_j w_j e^{β⟨q,x_j⟩}) in float64 (numpy)."""
    e = np.exp(beta * (q @ x.T - 1.0)) * w
    avg = (e @ x) / e.sum(axis=1)[:, None]
    return c * (avg - np.sum(avg * q, axis=1)[:, None] * q)


@pytest.mark.parametrize("d, n", [(2, 2000), (2, 10000), (3, 2000), (3, 6000)])  # S²: recurrences below 4096 points, ducc0 above
def test_point_sums_equal_the_direct_sum_within_their_bound(rng, d, n):
    """SA β = 4, V = cI, random weights: |v − direct| <= the stated truncation bound + the round-off of both sums.
    Error model: SA's field is c times a convex combination of tangent vectors of norm <= 1, so both sums err by
    about (log₂ n + 2L)ε|c| relative to the terms (pairwise summation; the power recurrences z^k), amplified by
    SA's division by S = Σ_j w_j e^{β(⟨q,x_j⟩−1)}, at most 10 for these near-uniform points at β = 4 (e^{β}/∫e^{β⟨x,y⟩}:
    7.4 on S¹, 8.1 on S²); ducc0's transforms add NONUNIFORM_EPSILON relative to the terms. Tolerance: 10× that."""
    beta, c = 4.0, -1.3
    x = pt.uniform_sphere(n, d, rng=rng)
    w = rng.uniform(0.2, 1.0, n)
    w /= w.sum()
    q = pt.uniform_sphere(300, d, rng=rng)
    field = cs.circle_spectral_field if d == 2 else ss.sphere_spectral_field
    L = cs.circle_degree(beta) if d == 2 else ss.sphere_degree(beta)
    v, bound = field(x, w, q, beta, True, c)
    ref = _direct(x, w, q, beta, c)
    transforms = ss.NONUNIFORM_EPSILON if d == 3 and n + len(q) >= ss.NONUNIFORM_FROM else 0.0
    amplification = 10.0
    allowed = np.max(bound) + 10 * amplification * abs(c) * ((np.log2(n) + 2 * L) * EPS + transforms)
    assert np.max(np.linalg.norm(v - ref, axis=1)) <= allowed
    assert np.max(bound) <= 1e-16  # β = 4: the multipliers are cut below round-off


@pytest.mark.parametrize("d, n, loose", [(2, 2000, 1e3), (3, 2000, 1e4), (3, 6000, 1e4)])  # S²: recurrences, ducc0
def test_truncated_point_sums_err_within_a_bound_that_is_not_vacuous(rng, d, n, loose):
    """Truncated on purpose at L = 8 (β = 4, SA, random weights): the truncation error (~1e-5–1e-4, far above the
    ~1e-13 round-off) is at most the stated bound at every query, and the bound is within a modest factor of the
    largest error (measured 40–90 on S¹; 350–1100 on S², whose bound takes |P_l| <= 1 and |∇_S P_l| <= l(l+1)/2:
    10× that), so a bound of 0 or one inflated ×1e6 fails, unlike at the default degree where the bound is ~1e-18."""
    beta, c, L = 4.0, -1.3, 8
    x = pt.uniform_sphere(n, d, rng=rng)
    w = rng.uniform(0.2, 1.0, n)
    w /= w.sum()
    q = pt.uniform_sphere(300, d, rng=rng)
    if d == 3:  # the path under test: the recurrences below NONUNIFORM_FROM points + queries, ducc0 from there
        assert (n + len(q) >= ss.NONUNIFORM_FROM) == (n > 4000)
    field = cs.circle_spectral_field if d == 2 else ss.sphere_spectral_field
    v, bound = field(x, w, q, beta, True, c, degree=L)
    err = np.linalg.norm(v - _direct(x, w, q, beta, c), axis=1)
    assert 1e-6 < np.max(err) < 1e-3  # truncation dominates: round-off (test above) is ~1e-13 here
    assert np.all(err <= bound * (1 + 1e-8))
    assert np.max(bound) <= loose * np.max(err)


@pytest.mark.parametrize("d, n", [(2, 3000), (3, 1500), (3, 6000)])
def test_point_sums_take_the_directions_of_their_points(rng, d, n):
    """Particles hand the point sums their unretracted stages (``PointSums.directions``): the field at r_j x_j and
    s_i q_i (r, s > 0) is the field at x_j, q_i, to the round-off of normalising (a few ε relative to the terms,
    amplified by at most 10 through SA's 1/S: 1e-13 of |c| keeps 10× that and more)."""
    x = pt.uniform_sphere(n, d, rng=rng)
    w = np.full(n, 1.0 / n)
    q = pt.uniform_sphere(200, d, rng=rng)
    field = cs.circle_spectral_field if d == 2 else ss.sphere_spectral_field
    v, _ = field(x, w, q, 4.0)
    v2, _ = field(x * rng.uniform(0.5, 3.0, (n, 1)), w, q * rng.uniform(0.5, 3.0, (200, 1)), 4.0)
    assert np.max(np.abs(v2 - v)) <= 1e-13


@pytest.mark.parametrize("n, L", [(20000, 30), (20000, 25), (777, 1)])
def test_lane_moments_equal_the_power_sums(rng, n, L):
    """:func:`lane_moments` (blocks of LANES points in vector lanes, two degrees per pass, chunks) equals the power
    sums Σ_j w_j z̄_j^k of the normalised rows computed in extended precision (long double: ~1e-19, negligible):
    each term of c_k carries the normalisation (2ε) and k rounded complex products (2kε), the sums
    (n/(LANES·nchunk) + LANES + nchunk)ε Σ|w| (the docstring's model); 10× that. Odd and even L (the last degree
    outside the pairs), a block and a chunk that are not full; the mass Σ|w| to the sum's round-off."""
    x = rng.standard_normal((n, 2)) * rng.uniform(0.5, 2.0, (n, 1))  # not unit vectors: the kernel normalises
    w = rng.uniform(-1.0, 1.0, n)
    nchunk = cs.moment_chunks(n)
    c, mass = cs.lane_moments(x, w, L, nchunk, with_mass=True)
    xl = x.astype(np.longdouble)
    r = np.sqrt(xl[:, 0] ** 2 + xl[:, 1] ** 2)
    zr, zi = xl[:, 0] / r, -xl[:, 1] / r
    pr, pi = w.astype(np.longdouble), np.zeros(n, np.longdouble)
    ref = []
    for _ in range(L + 1):
        ref.append((pr.sum(), pi.sum()))
        pr, pi = pr * zr - pi * zi, pr * zi + pi * zr
    ref = np.array(ref, dtype=np.longdouble)
    err = np.hypot((c.real - ref[:, 0]).astype(float), (c.imag - ref[:, 1]).astype(float))
    model = (4 * np.arange(L + 1) + 2 + n / (cs.LANES * nchunk) + cs.LANES + nchunk) * EPS * np.sum(np.abs(w))
    assert np.all(err <= 10 * model)
    assert abs(mass - np.sum(np.abs(w))) <= 10 * n * EPS * np.sum(np.abs(w))
    assert np.array_equal(cs.fourier_moments(x, w, L), c)  # the one path


@pytest.mark.parametrize("bad", [0.0, np.nan, np.inf])
def test_circle_point_sums_refuse_points_without_a_direction(rng, bad):
    """A zero or non-finite row among the points or the queries has no direction, a non-finite weight no mass:
    ValueError naming the argument (the compiled sums would return NaN silently)."""
    x = pt.uniform_sphere(500, 2, rng=rng)
    w = np.full(500, 1 / 500)
    y = x.copy()
    y[17] = bad
    with pytest.raises(ValueError, match="points"):
        cs.circle_spectral_field(y, w, x, 4.0)
    with pytest.raises(ValueError, match="queries"):
        cs.circle_spectral_field(x, w, y, 4.0)
    if bad != 0.0:
        v = w.copy()
        v[17] = bad
        with pytest.raises(ValueError, match="weights"):
            cs.circle_spectral_field(x, v, x, 4.0)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two threads")
def test_point_sums_do_not_depend_on_the_thread_count(rng, monkeypatch):
    """The chunks of the moments, the blocks of the series and the parts of the split transforms are fixed by n, not
    by the threads: one and two threads give the same bits (S¹ and S², the transforms split from 4096 points here)."""
    monkeypatch.setattr(ss, "NONUNIFORM_SPLIT_FROM", 4096)
    xs = [pt.uniform_sphere(20000, 2, rng=rng), pt.uniform_sphere(6000, 3, rng=rng)]
    threads = numba.get_num_threads()
    out = {}
    try:
        for k in (1, 2):
            numba.set_num_threads(k)
            out[k] = [cs.circle_spectral_field(xs[0], np.full(20000, 5e-5), xs[0], 4.0),
                      ss.sphere_spectral_field(xs[1], np.full(6000, 1 / 6000), xs[1], 4.0)]
    finally:
        numba.set_num_threads(threads)
    for (v1, b1), (v2, b2) in zip(out[1], out[2]):
        assert np.array_equal(v1, v2) and np.array_equal(b1, b2)


def test_split_transforms_equal_the_whole_call(rng, monkeypatch):
    """S²'s transforms on two parts of the points (moments summed) and of the queries equal one call on all of
    them to ducc0's tolerance: NONUNIFORM_EPSILON of the terms (norm <= 1, times |c|), amplified by at most 10
    through SA's 1/S; 10× that."""
    x = pt.uniform_sphere(6000, 3, rng=rng)
    w = rng.uniform(0.2, 1.0, 6000)
    w /= w.sum()
    whole, _ = ss.sphere_spectral_field(x, w, x, 4.0)
    monkeypatch.setattr(ss, "NONUNIFORM_SPLIT_FROM", 4096)
    split, _ = ss.sphere_spectral_field(x, w, x, 4.0)
    assert np.max(np.abs(split - whole)) <= 10 * 10 * ss.NONUNIFORM_EPSILON


def test_spectral_particles_step_as_the_pairwise_ones(rng):
    """One RK4 step of 5000 particles on S² by the point sums (unretracted stages, split transforms off at this n)
    and by the pairwise kernel: the same positions to the fields' agreement (1e-13 of |c| = 1) times the step."""
    x = pt.uniform_sphere(5000, 3, rng=rng)
    model = mf.SelfAttention(4.0)
    a = pt.simulate(model, x, [0.0, 0.1], dt=0.1, strategy="spectral", progress=False)
    b = pt.simulate(model, x, [0.0, 0.1], dt=0.1, strategy="pairwise", progress=False)
    assert a.field_error_bound <= 1e-16
    assert np.max(np.abs(a.x[-1] - b.x[-1])) <= 10 * 0.1 * 1e-12


@pytest.mark.parametrize("d", [2, 3, 5])
def test_row_norms_are_numpys_to_the_bit(rng, d):
    """The retraction's row norms (3-4× faster at 10⁶ rows for d = 2, 3) are np.linalg.norm's bits: the same
    rounded squares summed in the same order (any other order would differ in some of 10⁵ rows)."""
    from meanfield.domains.sphere.geometry import normalise, row_norms

    y = rng.normal(size=(100000, d)) * rng.uniform(1e-3, 1e3, (100000, 1))
    assert np.array_equal(row_norms(y), np.linalg.norm(y, axis=-1))
    assert np.array_equal(normalise(y), y / np.linalg.norm(y, axis=-1, keepdims=True))
    assert np.array_equal(row_norms(y[:7].reshape(7, 1, d), keepdims=True), np.linalg.norm(y[:7].reshape(7, 1, d),
                                                                                          axis=-1, keepdims=True))
    batch = y[:999].reshape(3, 333, d)[:, ::2]  # a batch, not contiguous: the compiled pass takes a copy
    assert np.array_equal(normalise(batch), batch / np.linalg.norm(batch, axis=-1, keepdims=True))


@pytest.mark.parametrize("d", [2, 3, 5])
def test_normalise_refuses_a_row_without_a_direction(rng, d):
    """A row of norm 0 has no direction y/|y|: normalise raises, naming the argument and the row's index (numpy's
    quotient gave NaN there, silently), on the compiled path (d = 2, 3), the numpy one (d = 5) and in a batch. A row
    whose squares underflow (entries 1e-170: y_k² = 1e-340 rounds to 0) has computed norm 0 too; one whose squares
    are subnormal but not 0 (1e-160: 1e-320) keeps a direction. The error is a ValueError (bad input at an entry
    point) and a FloatingPointError (a time step's retraction: the step blew up). All other rows keep the bits of
    x/|x| as documented, y / np.linalg.norm(y, axis=-1, keepdims=True)."""
    from meanfield.domains.sphere.geometry import ZeroVectorError, normalise

    y = rng.normal(size=(5000, d))
    y[4000] = 1e-160  # subnormal squares, a direction: y/|y| = (1, ..., 1)/√d to round-off
    out = normalise(y)
    assert np.array_equal(out, y / np.linalg.norm(y, axis=-1, keepdims=True))
    assert np.all(np.isfinite(out))
    for row, value in [(3217, 0.0), (0, 0.0), (4999, 0.0), (123, 1e-170)]:
        z = y.copy()
        z[row] = value
        with pytest.raises(ValueError, match=f"`z`: row {row} has norm"):
            normalise(z, "z")
        with pytest.raises(FloatingPointError, match=f"row {row} "):
            mf.domains.SPHERE.retract(z)  # what the steppers call
    batch = y[:3000].reshape(3, 1000, d).copy()
    batch[2, 417] = 0.0
    with pytest.raises(ZeroVectorError, match=r"`y`: row \(2, 417\) has norm"):
        normalise(batch)
    batch[2, 417] = 1.0  # any non-zero row: the batch's bits are numpy's again
    assert np.array_equal(normalise(batch), batch / np.linalg.norm(batch, axis=-1, keepdims=True))


def test_the_unit_check_names_the_row(rng):
    """check_on_sphere (the entry points' check of unit vectors) names the row farthest from the sphere, and says
    when it is the zero vector."""
    from meanfield.domains.sphere.geometry import check_on_sphere

    x = pt.uniform_sphere(300, 3, rng=rng)
    x[211] = 0.0
    with pytest.raises(ValueError, match="at row 211 \\(the zero vector"):
        check_on_sphere(x, "x0")
    x = pt.uniform_sphere(300, 2, rng=rng).reshape(3, 100, 2)
    x[1, 7] *= 2.0
    with pytest.raises(ValueError, match="`x0` must hold unit vectors.*is 1 > 1e-08, at row \\(1, 7\\); .*normalise the rows: "
                       "x / np.linalg.norm\\(x, axis=-1, keepdims=True\\)\\.$"):
        check_on_sphere(x, "x0")


@pytest.mark.parametrize("d", [2, 3])
def test_the_unit_check_is_numpys(rng, d):
    """check_on_sphere's one compiled pass finds what numpy's passes find: a non-finite entry anywhere, a row whose
    norm (numpy's bits) is off 1 by more than atol; rows within atol pass."""
    from meanfield.domains.sphere.geometry import check_on_sphere

    x = pt.uniform_sphere(5000, d, rng=rng)
    assert check_on_sphere(x, "x") is not None
    for row, col, value, match in [(4321, d - 1, np.nan, "non-finite"), (17, 0, np.inf, "non-finite")]:
        y = x.copy()
        y[row, col] = value
        with pytest.raises(ValueError, match=match):
            check_on_sphere(y, "x")
    y = x.copy()
    y[2500] *= 1.0 + 1e-6  # |y| − 1 = 1e-6 to round-off
    with pytest.raises(ValueError, match="largest deviation of \\|x\\| from 1 is 1e-06"):
        check_on_sphere(y, "x")
    check_on_sphere(y, "x", atol=2e-6)  # within a looser atol


@pytest.mark.parametrize("call", [
    lambda b: ss.sphere_degree(b),
    lambda b: ss.truncation_tails(8, b, 1.0),
    lambda b: ss.sphere_spectral_field(np.eye(3), np.ones(3), np.eye(3), b),
    lambda b: ss.sphere_spectral_divergence(np.eye(3), np.ones(3), np.eye(3), b),
    lambda b: ss.sphere_excess_energy(np.eye(3), np.ones(3), b),
])
@pytest.mark.parametrize("beta", [-0.001, -1.0, -32.0])
def test_sphere_point_sums_refuse_negative_beta(call, beta):
    """β < 0: the Funk–Hecke multipliers D_l = e^{-β}4π i_l(β) alternate in sign, so the tails that bound the
    truncation (sphere_degree's stopping rule, truncation_tails) are no bound; the S² point sums refuse, naming β."""
    with pytest.raises(ValueError, match=rf"beta.*{beta:g}.*Funk–Hecke"):
        call(beta)


@pytest.mark.parametrize("beta", [-0.001, -4.0, -32.0])
def test_sphere_point_sums_never_pay_off_for_negative_beta(beta):
    """No a-priori bound for β < 0 on S²: self_query_bound is inf and strategy="auto" does not take the point sums."""
    assert ss.self_query_bound(4096, beta) == np.inf
    assert not mf.domains.SPHERE.point_sums(3).pays_off(10**6, beta)


def test_energy_of_points_on_the_sphere_at_negative_beta_is_the_pair_sum(rng):
    """A particle snapshot's excess energy on S² at β < 0 (the point sums refuse): the pair sum
    e^{-β}(½ Σ_ij w_i w_j e^{β⟨x_i,x_j⟩}/β − m²/2β), here in numpy; round-off ~1e-15 of e^{2|β|}/|β|: 1e-12."""
    from meanfield.lagrangian import measure
    x = pt.uniform_sphere(50, 3, rng=rng)
    w = np.full(50, 1 / 50)
    beta = -1.0
    exact = np.exp(-beta) * (0.5 * w @ np.exp(beta * x @ x.T) @ w / beta - 1 / (2 * beta))
    assert measure.excess_energy(x, w, mf.domains.SPHERE, beta) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("beta", [-4.0, -8.0, -16.0])
def test_circle_degree_bounds_the_repulsive_tail(beta):
    """β < 0: the scaled multipliers e^{-β}I_k(β) are e^{2|β|} times those of |β|, and S >= Σw (MATH.md §13), so the
    default degree must make the scaled truncation T_D, T_N per unit mass <= 1e-17 e^{-|β|}I_0(|β|) (the degree of |β|
    alone left T_D ≈ 1.5e-5 at β = −16)."""
    from scipy.special import ive

    L = cs.circle_degree(beta)
    tD, tN = cs.truncation_tails(L, beta, 1.0)
    assert tD + tN <= 1e-17 * ive(0, abs(beta)) * (1 + 1e-12)


@pytest.mark.parametrize("beta", [-8.0, -12.0])
def test_circle_field_bound_holds_for_repulsion_on_a_cluster(beta):
    """β < 0 on a cluster of 2000 points (S near its least, Σw): the multipliers e^{-β}I_k(β) reach e^{2|β|}/√(2π|β|),
    so the round-off, not the truncation, dominates (≈ 4e-10 at β = −8, 100x the truncation bound alone); the bound
    the sums return adds it (``repulsive_round_off`` Σw) and holds against the pairwise sums, whose own round-off is
    ~n ε ≈ 4e-13 (allowed 1e-11 on top)."""
    n = 2000
    th = np.random.default_rng(3).uniform(0.0, 1.0, n)
    x = np.stack([np.cos(th), np.sin(th)], axis=-1)
    w = np.full(n, 1.0 / n)
    v, bound = cs.circle_spectral_field(x, w, x, beta)
    g = x @ x.T
    e = np.exp(beta * (g - g.max(axis=1, keepdims=True))) * w  # the softmax weights, stable for β < 0
    y = (e @ x) / e.sum(axis=1, keepdims=True)
    exact = y - np.sum(y * x, axis=1, keepdims=True) * x
    err = np.linalg.norm(v - exact, axis=-1)
    assert np.all(err <= bound + 1e-11), float(np.max(err / bound))
    assert np.max(bound) <= cs.self_query_bound(n, beta)


@pytest.mark.parametrize("beta", [5e-324, 2.225073858507203e-309, 1e-300, -2.225073858507203e-309])
def test_circle_degree_at_subnormal_beta(beta):
    """β → 0: (1 + k/β) I_k(β)/I_0(β) → 1/2 at k = 1 and 0 beyond (I_k(β) ~ (β/2)^k/k!), so the degree is 1; k/β
    overflows float64 below β ~ 1e-307 and must not turn the tail into inf·0 = NaN (hypothesis found β = 2.2e-309 in
    CI, where auto asks the bound of every particle system, small ones included)."""
    with np.errstate(all="raise"):
        assert cs.circle_degree(beta) == 1
        assert mf.domains.CIRCLE.point_sums(2).pays_off(10**6, beta)


def _pole_pair(d):
    """Two points ±e (e the last axis of R^d) of weights +1 and −1: SA's denominator is D(q) = e^{-β}(e^{βz} − e^{−βz})
    = 2e^{-β} sinh(βz), z = ⟨q, e⟩, which vanishes on the equator z = 0 (and everywhere at β = 0, the weights summing
    to 0); off it the field is exactly X(q) = coth(βz) P_q^⊥ e (the numerator 2e^{-β}cosh(βz) e)."""
    e = np.eye(d)[-1]
    return np.array([e, -e]), np.array([1.0, -1.0]), e


def _at_height(d, z):
    q = np.zeros(d)
    q[0], q[-1] = np.sqrt(1.0 - z * z), z
    return q


@pytest.mark.parametrize("beta", [1.0, 4.0, 16.0])
@pytest.mark.parametrize("sums", ["circle", "sphere", "rings"])
def test_signed_weights_meet_the_exact_field_within_the_bound_and_refuse_its_pole(beta, sums):
    """Signed weights (+1, −1 at ±e): off the equator the SA point sums equal the exact field coth(βz) P_q^⊥ e within
    their returned bound, which for signed weights adds a round-off allowance (|D| may be small: the bound's margin is
    |D̃| − T_D); on the equator D = 0, a pole: ValueError naming `weights` and the query, never inf or NaN (the sums
    returned ±inf/NaN, S² garbage, the rings a finite field of 4e15 with a finite bound). USA has no denominator: its
    field there is finite."""
    d = 2 if sums == "circle" else 3
    y, w, e = _pole_pair(d)
    z = np.array([0.8, 0.3, -0.05])
    q = np.array([_at_height(d, s) for s in z])
    exact = (e - z[:, None] * q) / np.tanh(beta * z)[:, None]
    if sums == "rings":
        from meanfield.domains.zonal_sphere import point_sums as zs

        theta = np.arccos(z)[:, None]

        def field(q_, normalized=True):
            angles = np.arccos(np.clip(q_[:, -1], -1.0, 1.0))[:, None]
            v, b = zs.ring_field(np.array([[0.0], [np.pi]]), w, angles, beta, normalized, d=3)
            return v, b
        v, bound = field(q)
        err = np.abs(v[:, 0] - (-np.sin(theta[:, 0]) / np.tanh(beta * z)))  # θ̇ = −sin θ coth(β cos θ)
    else:
        spectral = cs.circle_spectral_field if sums == "circle" else ss.sphere_spectral_field

        def field(q_, normalized=True):
            return spectral(y, w, q_, beta, normalized)
        v, bound = field(q)
        err = np.linalg.norm(v - exact, axis=1)
    assert np.all(np.isfinite(bound)) and np.all(err <= bound)
    q_pole = np.array([q[0], _at_height(d, 0.0), q[1]])
    with pytest.raises(ValueError, match=r"`weights`: the weights are signed and at query 1 .* pole"):
        field(q_pole)
    assert np.all(np.isfinite(field(q_pole, normalized=False)[0]))


@pytest.mark.parametrize("sums", ["circle", "sphere"])
def test_weights_summing_to_zero_refuse_at_beta_zero(sums):
    """At β = 0, D(q) = Σ_j w_j for every query: weights summing to 0 leave SA's field undefined everywhere
    (ValueError at the first query), where it returned inf/NaN."""
    d = 2 if sums == "circle" else 3
    y, w, _ = _pole_pair(d)
    spectral = cs.circle_spectral_field if sums == "circle" else ss.sphere_spectral_field
    with pytest.raises(ValueError, match="`weights`: .* query 0 .*2 of the 2 queries"):
        spectral(y, w, np.array([_at_height(d, 0.6), _at_height(d, -0.2)]), 0.0)


def test_signed_weights_refuse_the_pole_on_the_nonuniform_sphere_path(rng):
    """The same pole through ducc0's transforms (n + m >= NONUNIFORM_FROM): 4096 queries, |z| >= 0.5 but one on the
    equator, named by its index."""
    y, w, _ = _pole_pair(3)
    m = ss.NONUNIFORM_FROM
    q = pt.uniform_sphere(m, 3, rng=rng)
    q[:, 2] = np.sign(q[:, 2]) * np.maximum(np.abs(q[:, 2]), 0.5)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[2500] = [0.6, 0.8, 0.0]
    with pytest.raises(ValueError, match="at query 2500 .*; 1 of the 4096 queries"):
        ss.sphere_spectral_field(y, w, q, 4.0)
