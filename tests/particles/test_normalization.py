"""Normalised Transformers as particles: post-, pre-, peri-, Mix-LN and nGPT (docs/MATH.md §10).

Asserted: the equiangular reduction's 1 − ρ(1) against MATH.md's values; particles from orthonormal tokens (n = d = 8,
β = 1, α = 0.2, r(0) = 1) against it at t = 1, 5, 20 to 1e-9 in 1 − ρ and r with every integrator, batches with other
radii included; the asymptotic rates (post e^{−2t}, pre/peri t^{−2}, nGPT e^{−2αt}) from long runs; pre/peri/nGPT
move their tokens by the average A at the directions (brute-force sums), never by the projected field, on both sum
paths and whatever the radii; the post-LN-only paths and the density solvers refuse them; the layer maps are first
order in h to the flows; the noise's meaning for pre-LN (Brownian motion of R^d); bad input named.
"""

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield.analysis import exact
from meanfield import kernels
from meanfield.models import Normalization, SelfAttention, Transformer

ALPHA = 0.2
VARIANTS = {"post": "post", "pre": "pre", "peri": "peri", "ngpt": Normalization("ngpt", alpha=ALPHA),
            "mix": Normalization("mix", switch=2.0)}


def one_minus_rho(x):
    """1 − ⟨θ_i, θ_j⟩ = |θ_i − θ_j|²/2 of every pair (no cancellation), shape (..., n(n − 1)/2)."""
    th = x / np.linalg.norm(x, axis=-1, keepdims=True)
    iu = np.triu_indices(x.shape[-2], 1)
    diff = th[..., iu[0], :] - th[..., iu[1], :]
    return 0.5 * np.sum(diff * diff, axis=-1)


def brute_average(x, Q, K, V, beta):
    """A_i = Σ_j softmax_j(β⟨Qθ_i, Kθ_j⟩) Vθ_j at the directions, written out token by token."""
    th = x / np.linalg.norm(x, axis=-1, keepdims=True)
    A = np.empty_like(th)
    for i in range(len(th)):
        s = np.array([beta * (Q @ th[i]) @ (K @ th[j]) for j in range(len(th))])
        e = np.exp(s - s.max())
        A[i] = sum(e[j] * (V @ th[j]) for j in range(len(th))) / e.sum()
    return A


# ------------------------------------------------------------------ the equiangular reduction (MATH.md §10)
def test_reduction_gives_the_values_of_math_md():
    """1 − ρ(1) for n = 8, β = 1, α = 0.2 as MATH.md §10 states them (7 digits); post-LN is GLPR (6.9)."""
    stated = {"post": 0.6374131, "pre": 0.7035699, "peri": 0.4677936, "ngpt": 0.8763024}
    for name, value in stated.items():
        assert abs(exact.normalized_equiangular(1.0, 8, 1.0, VARIANTS[name]).one_minus_rho - value) <= 5e-8
    t = np.array([0.5, 3.0, 7.0])
    post = exact.normalized_equiangular(t, 8, 1.0, "post").one_minus_rho
    # two adaptive integrations of one ODE (rtol 1e-13 each): 1.4e-13 measured
    assert np.max(np.abs(post - (1 - exact.equiangular(t, 8, 1.0)))) <= 2e-12


def test_reduction_of_mix_is_post_then_pre_from_unit_radius():
    """Mix-LN with t_0 = 2: post-LN's 1 − ρ and r = 1 up to t_0; after it, pre-LN from ρ(t_0) and r = 1 (the
    reduction's ODE started there by hand)."""
    from scipy.integrate import solve_ivp

    mix = exact.normalized_equiangular([1.0, 2.0, 5.0], 8, 1.0, VARIANTS["mix"])
    post = exact.normalized_equiangular([1.0, 2.0], 8, 1.0, "post")
    assert np.allclose(mix.one_minus_rho[:2], post.one_minus_rho, rtol=1e-12, atol=0)
    assert np.all(mix.r[:2] == 1.0)
    n, beta = 8, 1.0

    def pre(_, z):  # ρ̇ = F/r, ṙ = a, written from MATH.md §10
        rho, r = z
        Z = np.exp(beta) + (n - 1) * np.exp(beta * rho)
        p, q = np.exp(beta) / Z, np.exp(beta * rho) / Z
        return [2 * q * (1 - rho) * (1 + (n - 1) * rho) / r, p + (1 - p) * rho]

    z = solve_ivp(pre, (2.0, 5.0), [1 - post.one_minus_rho[1], 1.0], method="DOP853", rtol=1e-13, atol=1e-15).y[:, -1]
    assert abs(mix.one_minus_rho[2] - (1 - z[0])) <= 1e-11 and abs(mix.r[2] - z[1]) <= 1e-11


@pytest.mark.parametrize("method, options", [("rk4", {"dt": 0.01}), ("rk45", {"rtol": 1e-12, "atol": 1e-14}),
                                             ("dop853", {"rtol": 1e-12, "atol": 1e-14})])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_orthonormal_tokens_follow_the_reduction(name, method, options):
    """n = d = 8 orthonormal tokens, β = 1, α = 0.2, r(0) = 1: every pair's 1 − ρ and every radius at t = 1, 5, 20
    within 1e-9 of the reduction, with each integrator (Mix-LN: t_0 = 2, a breakpoint inside the run)."""
    t = [0.0, 1.0, 5.0, 20.0]
    model = Transformer(SelfAttention(1.0), normalization=VARIANTS[name])
    tr = pt.simulate(model, np.eye(8), t, method=method, **options)
    ref = exact.normalized_equiangular(t, 8, 1.0, VARIANTS[name])
    assert np.max(np.abs(one_minus_rho(tr.x) - ref.one_minus_rho[:, None])) <= 1e-9
    assert np.max(np.abs(tr.radius - ref.r[:, None])) <= 1e-9
    if name in ("pre", "peri"):  # the radius grows: 1 − ρ is slowed down, not the post-LN value
        assert ref.r[-1] > 15 and ref.one_minus_rho[-1] > 1e-3


@pytest.mark.parametrize("name", ["pre", "peri"])
def test_a_batch_of_radii_follows_the_reduction_of_each(name):
    """Three systems in one batch, orthonormal tokens scaled to r(0) = 1, 2, 0.5: each follows the reduction with its
    r(0) (the direction's speed is 1/r: a longer token turns more slowly)."""
    r0 = np.array([1.0, 2.0, 0.5])
    x0 = r0[:, None, None] * np.eye(8)[None]
    t = [0.0, 1.0, 5.0]
    tr = pt.simulate(Transformer(SelfAttention(1.0), normalization=name), x0, t, method="dop853", rtol=1e-12,
                     atol=1e-14)
    for b in range(3):
        ref = exact.normalized_equiangular(t, 8, 1.0, name, r0=r0[b])
        assert np.max(np.abs(one_minus_rho(tr.x[:, b]) - ref.one_minus_rho[:, None])) <= 1e-9
        assert np.max(np.abs(tr.radius[:, b] - ref.r[:, None])) <= 1e-9
    assert one_minus_rho(tr.x[-1, 1])[0] > one_minus_rho(tr.x[-1, 0])[0] > one_minus_rho(tr.x[-1, 2])[0]


@pytest.mark.parametrize("name, times, law, rate", [
    ("post", [8.0, 10.0, 12.0], "exp", -2.0),
    ("ngpt", [40.0, 50.0, 60.0], "exp", -2.0 * ALPHA),
    ("pre", [500.0, 1000.0, 2000.0], "power", -2.0),
    ("peri", [500.0, 1000.0, 2000.0], "power", -2.0),
])
def test_asymptotic_rates_from_long_runs(name, times, law, rate):
    """The particles' 1 − ρ decays like e^{−2t} (post), e^{−2αt} (nGPT), t^{−2} (pre, peri: r ~ t slows the
    direction): the local rate between the last two times within 2e-3 of the law's (the corrections are
    O(1 − ρ) for the exponentials, O(1/t) for the powers), and within 1e-6 of the reduction's own."""
    model = Transformer(SelfAttention(1.0), normalization=VARIANTS[name])
    tr = pt.simulate(model, np.eye(8), [0.0] + times, method="dop853", rtol=1e-12, atol=1e-14)
    s = np.mean(one_minus_rho(tr.x[1:]), axis=-1)
    ref = exact.normalized_equiangular(times, 8, 1.0, VARIANTS[name]).one_minus_rho
    scale = np.log(times) if law == "power" else np.array(times)
    measured = np.diff(np.log(s)) / np.diff(scale)
    assert np.all(np.abs(measured - np.diff(np.log(ref)) / np.diff(scale)) <= 1e-6), measured
    assert abs(measured[-1] - rate) <= 2e-3, measured
    if law == "power":  # r ~ t
        assert abs(tr.radius[-1, 0] / times[-1] - 1) <= 0.01


# ------------------------------------------------------------------ the average, not the projected field
@pytest.mark.parametrize("strategy", ["pairwise", "quadrature"])
def test_variants_move_tokens_by_the_average_at_their_directions(rng, strategy):
    """20 tokens of S² with radii in [0.3, 3], general Q, K, V, β = 2: ẋ equals A (pre), A/|A| (peri), α P_θ A/|A|
    (nGPT, at the unit tokens θ), P_θ A (post) of the brute-force average at θ = x/|x| to 1e-12; pre's radial part
    ⟨θ, ẋ⟩ = ⟨θ, A⟩ is not 0 (the projected field's would be); rescaling every radius changes nothing (the sums see
    θ, not x)."""
    d, n, beta = 3, 20, 2.0
    Q, K, V = (np.eye(d) + 0.4 * rng.standard_normal((d, d)) for _ in range(3))
    att = SelfAttention(beta, Q, K, V)
    x = rng.standard_normal((n, d))
    x *= rng.uniform(0.3, 3.0, (n, 1)) / np.linalg.norm(x, axis=1, keepdims=True)
    A = brute_average(x, Q, K, V, beta)
    th = x / np.linalg.norm(x, axis=1, keepdims=True)
    PA = A - np.sum(th * A, axis=1, keepdims=True) * th
    lengths = np.linalg.norm(A, axis=1, keepdims=True)
    expected = {"pre": A, "peri": A / lengths, "ngpt": ALPHA * PA / lengths}
    for name, v in expected.items():
        model = Transformer(att, normalization=VARIANTS[name])
        tokens = th if name == "ngpt" else x  # nGPT's are unit vectors
        assert np.max(np.abs(pt.velocity(model, tokens, strategy=strategy) - v)) <= 1e-12, name
        if name != "ngpt":
            assert np.max(np.abs(pt.velocity(model, 2.5 * x, strategy=strategy) - v)) <= 1e-12, name
    radial = np.sum(th * pt.velocity(Transformer(att, normalization="pre"), x, strategy=strategy), axis=1)
    assert np.max(np.abs(radial - np.sum(th * A, axis=1))) <= 1e-12 and np.min(np.abs(radial)) > 1e-3
    unit = th  # post-LN: the heads' own field at unit tokens
    assert np.max(np.abs(pt.velocity(att, unit, strategy=strategy) - PA)) <= 1e-12


def test_the_compiled_average_is_the_reference_sum_and_refuses_what_it_does_not_sum(rng):
    """kernels.average is the heads' summed average (two heads, SA and USA) to round-off; the projected compiled field
    refuses a pre-LN Transformer, and the compiled sums refuse a head that is not softmax attention."""
    d, n = 3, 50
    heads = mf.MultiHeadAttention((SelfAttention(1.5, V=np.diag([1.0, -0.5, 2.0])),
                                   SelfAttention(0.7, normalized=False)))
    th = pt.uniform_sphere(n, d, rng=rng)
    w = np.full(n, 1 / n)
    ref = sum(h.average(th, w, th) for h in heads.heads)
    assert np.max(np.abs(kernels.average(heads, th, w, th) - ref)) <= 1e-13
    with pytest.raises(ValueError, match="post-LN"):
        kernels.field(Transformer(heads, normalization="pre"), th, w, th)
    with pytest.raises(TypeError, match="softmax self-attention"):
        kernels.average(mf.models.Hardmax(), th, w, th)


def test_post_ln_paths_and_density_solvers_refuse_the_variants(rng):
    """The spectral sums and the fused RK4 compute P_θA: refused by name for pre-LN (auto never takes them); the
    density solvers (grid and Lagrangian) refuse pre/peri/mix-LN, with the reason (they carry the radius); nGPT runs
    on the grid (quadrature) and the Lagrangian measure refuses it (its divergence would need that of A/|A|)."""
    x = pt.uniform_sphere(2000, 2, rng=rng)
    model = Transformer(SelfAttention(1.0), normalization="pre")
    for strategy in ("spectral", "fused"):
        with pytest.raises(ValueError, match="post-LN's field"):
            pt.simulate(model, x[:40] if strategy == "fused" else x, [0, 0.1], strategy=strategy)
    assert pt.simulate(model, x, [0, 0.01], dt=0.01).strategy == "pairwise"  # the post model would take spectral
    assert pt.simulate(SelfAttention(1.0), x, [0, 0.01], dt=0.01).strategy == "spectral"
    grid = mf.CircleGrid(32)
    mu0 = mf.Density(grid, (1 + 0.1 * np.cos(grid.angles)) / (2 * np.pi))
    why = {"pre": "carries the radius", "peri": "carries the radius", "mix": "carries the radius",
           "ngpt": r"would need div\(A/\|A\|\)"}
    for name, reason in why.items():
        model = Transformer(SelfAttention(1.0), normalization=VARIANTS[name])
        for representation in ("grid", "lagrangian"):
            if name == "ngpt" and representation == "grid":  # nGPT's densities: the grids' quadrature sums
                assert mf.solve(model, mu0, (0, 0.1), representation="grid").strategy == "quadrature"
                continue
            with pytest.raises(ValueError, match=reason):
                mf.solve(model, mu0, (0, 0.1), representation=representation)


def test_post_ln_is_todays_model_bit_for_bit(rng):
    """Transformer(attention) has normalization post (the default) and its particles are the head's bit for bit; a
    Mix-LN whose switch lies beyond the run is post-LN (to round-off: its sums are the averages')."""
    att = SelfAttention(2.0, V=np.diag([1.0, 0.5, -0.3]))
    x0 = pt.uniform_sphere(30, 3, rng=rng)
    t = [0.0, 0.5, 1.0]
    head = pt.simulate(att, x0, t)
    wrapped = pt.simulate(Transformer(att), x0, t)
    assert Transformer(att).normalization == Normalization("post")
    assert np.array_equal(head.x, wrapped.x)
    late = pt.simulate(Transformer(att, normalization=Normalization("mix", switch=5.0)), x0, t, dt=head.t[1] / 20)
    assert np.max(np.abs(late.x - pt.simulate(att, x0, t, dt=head.t[1] / 20).x)) <= 1e-13


# ------------------------------------------------------------------ discrete depth
@pytest.mark.parametrize("name", ["post", "pre", "peri", "ngpt", "mix"])
def test_layer_maps_are_first_order_in_h(rng, name):
    """12 tokens of R⁴ with radii in [0.5, 2] (unit ones for post and nGPT), β = 2, general V, T = 1.5: the layers'
    error against the continuous flow halves with h (orders within 0.06 of 1); Mix-LN's t_0 = 0.55 inside a layer
    for two of the three steps."""
    d, n, T = 4, 12, 1.5
    att = SelfAttention(2.0, V=np.eye(d) + 0.3 * rng.standard_normal((d, d)))
    norm = Normalization("mix", switch=0.55) if name == "mix" else VARIANTS[name]
    model = Transformer(att, normalization=norm)
    x0 = rng.standard_normal((n, d))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    if name in ("pre", "peri"):
        x0 *= rng.uniform(0.5, 2.0, (n, 1))
    ref = pt.simulate(model, x0, [0.0, T], method="dop853", rtol=1e-12, atol=1e-14).x[-1]
    err = [np.max(np.abs(pt.discrete_depth(model, x0, T / K, K).x[-1] - ref)) for K in (30, 60, 120)]
    orders = np.log2(np.array(err[:-1]) / np.array(err[1:]))
    assert np.all(np.abs(orders - 1) <= 0.06), (err, orders)


def test_layer_maps_are_the_stated_maps(rng):
    """One layer of each variant is MATH.md §10's map written out: pre x + hA(N(x)), peri x + hN(A(N(x))), nGPT
    N(θ + hα(N(A) − θ)); post-LN's today's N(x + hP_xA)."""
    d, n, h = 3, 10, 0.1
    att = SelfAttention(1.5, K=np.diag([1.0, 0.7, 1.2]))
    x = rng.standard_normal((n, d))
    A = brute_average(x, np.eye(d), np.diag([1.0, 0.7, 1.2]), np.eye(d), 1.5)
    th = x / np.linalg.norm(x, axis=1, keepdims=True)
    N = lambda y: y / np.linalg.norm(y, axis=1, keepdims=True)  # noqa: E731
    expected = {"pre": x + h * A, "peri": x + h * N(A), "ngpt": N(th + h * ALPHA * (N(A) - th)),
                "post": N(th + h * (A - np.sum(th * A, axis=1, keepdims=True) * th))}
    for name, y in expected.items():
        start = x if name in ("pre", "peri") else th
        got = pt.discrete_depth(Transformer(att, normalization=VARIANTS[name]), start, h, 1).x[-1]
        assert np.max(np.abs(got - y)) <= 1e-13, name
    assert np.array_equal(pt.discrete_depth(Transformer(att), th, h, 2).x, pt.discrete_depth(att, th, h, 2).x)


# ------------------------------------------------------------------ noise
def test_pre_ln_noise_is_brownian_motion_of_the_residual_stream():
    """pre-LN with V = 0 (A ≡ 0) and noise D: x(t) = x(0) + √(2D) B_t in R³, so E|x(t) − x(0)|² = 2dDt (4000 tokens:
    within 4 standard errors) and the radius leaves 1; reproducible from its seed."""
    d, n, D, T = 3, 4000, 0.05, 1.0
    model = Transformer(SelfAttention(1.0, V=np.zeros((d, d)), noise=D), normalization="pre")
    x0 = pt.uniform_sphere(n, d, rng=1)
    tr = pt.simulate(model, x0, [0.0, T], rng=2, dt=0.1)
    sq = np.sum((tr.x[-1] - x0) ** 2, axis=-1)
    assert abs(sq.mean() - 2 * d * D * T) <= 4 * sq.std() / np.sqrt(n)
    assert np.std(tr.radius[-1]) > 0.1
    assert np.array_equal(tr.x, pt.simulate(model, x0, [0.0, T], rng=2, dt=0.1).x)


def test_ngpt_noise_stays_on_the_sphere_and_mix_refuses_noise(rng):
    """nGPT's directions diffuse on S^{d-1} (unit tokens to round-off); Mix-LN, whose tokens change space at t_0,
    refuses noise and says why."""
    x0 = pt.uniform_sphere(50, 3, rng=rng)
    tr = pt.simulate(Transformer(SelfAttention(1.0, noise=0.1), normalization=VARIANTS["ngpt"]), x0, [0, 1], rng=3)
    assert np.max(np.abs(tr.radius - 1)) <= 1e-14 and np.max(np.abs(tr.x[-1] - x0)) > 0.1
    with pytest.raises(ValueError, match="change space at t_0"):
        pt.simulate(Transformer(SelfAttention(1.0, noise=0.1), normalization=VARIANTS["mix"]), x0, [0, 1], rng=3)


# ------------------------------------------------------------------ bad input
def test_tokens_of_radius_zero_are_refused_with_their_index():
    x0 = np.eye(3)
    x0[1] = 0.0
    for name in ("pre", "peri", "mix"):
        model = Transformer(SelfAttention(1.0), normalization=VARIANTS[name])
        for run in (lambda: pt.simulate(model, x0, [0, 1]), lambda: pt.discrete_depth(model, x0, 0.1, 2),
                    lambda: pt.velocity(model, x0)):
            with pytest.raises(ValueError, match=r"token 1 has radius r = \|x\| = 0"):
                run()


def test_normalization_parameters_are_checked():
    for alpha in (0.0, -0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"`alpha`.*> 0"):
            Normalization("ngpt", alpha=alpha)
    with pytest.raises(ValueError, match="needs its α"):
        Transformer(SelfAttention(1.0), normalization="ngpt")
    with pytest.raises(ValueError, match="needs the depth t_0"):
        Normalization("mix")
    with pytest.raises(ValueError, match="`alpha` belongs to nGPT"):
        Normalization("pre", alpha=0.3)
    with pytest.raises(ValueError, match=r"one of \('post', 'pre', 'peri', 'mix', 'ngpt'\), got 'layer'"):
        Transformer(SelfAttention(1.0), normalization="layer")
    with pytest.raises(TypeError, match="`normalization` must be one of"):
        Transformer(SelfAttention(1.0), normalization=3)


def test_variants_refuse_what_they_do_not_normalise(rng):
    ff = mf.models.FeedForward(rng.standard_normal((3, 2)), rng.standard_normal((2, 3)))
    with pytest.raises(ValueError, match="feed-forward blocks is not implemented"):
        Transformer(SelfAttention(1.0), ff, normalization="pre")
    with pytest.raises(ValueError, match="on the sphere's tokens"):
        Transformer(mf.models.Softmax(), normalization="peri")
    with pytest.raises(ValueError, match="on the sphere's tokens"):
        Transformer(SelfAttention(1.0, causal=True), normalization="pre")
    with pytest.raises(ValueError, match="add the heads first"):
        Transformer(SelfAttention(1.0), normalization="pre") + SelfAttention(2.0)


def test_peri_ln_with_a_vanishing_average_says_so():
    """Two antipodal tokens at β = 0: A = their mean = 0, and A/|A| is undefined."""
    x0 = np.array([[1.0, 0.0, 0.0], [-2.0, 0.0, 0.0]])
    with pytest.raises(FloatingPointError, match="A = 0 at token"):
        pt.velocity(Transformer(SelfAttention(0.0), normalization="peri"), x0)


def test_causal_particles_without_positions_name_with_positions():
    x0 = pt.uniform_sphere(5, 3, rng=0)
    for x in (x0, np.abs(x0) / np.linalg.norm(x0, axis=1, keepdims=True)):  # positions out of [0, 1], or "in" it
        with pytest.raises(ValueError, match=r"without positions.*particles\.with_positions"):
            pt.simulate(SelfAttention(1.0, causal=True), x, [0, 1])
