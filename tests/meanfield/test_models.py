"""The attention models: the field's definition, invariances, energy and input checks."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import special_ortho_group

import meanfield as mf
from meanfield.domains.sphere import project_tangent


def sphere_points(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def naive_field(beta, Q, K, V, x, w, q, normalized):
    """The definition of MATH.md §1–2 written out with loops."""
    out = np.zeros_like(q)
    for i, qi in enumerate(q):
        e = np.array([np.exp(beta * (Q @ qi) @ (K @ xj)) for xj in x])
        v = sum(wj * ej * (V @ xj) for wj, ej, xj in zip(w, e, x))
        Z = w @ e if normalized else 1.0
        u = v / Z
        out[i] = u - (u @ qi) * qi
    return out


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("d", [2, 3, 5])
def test_field_matches_definition(rng, d, normalized):
    x, q = sphere_points(rng, 7, d), sphere_points(rng, 5, d)
    w = rng.uniform(0.1, 1, 7)
    w /= w.sum()
    Q, K, V = (rng.standard_normal((d, d)) for _ in range(3))
    model = mf.SelfAttention(1.3, Q, K, V, normalized=normalized)
    np.testing.assert_allclose(model.field(x, w, q), naive_field(1.3, Q, K, V, x, w, q, normalized), rtol=1e-12, atol=1e-14)


def test_field_is_tangent_and_sa_is_bounded(rng):
    x = sphere_points(rng, 50, 4)
    w = np.full(50, 1 / 50)
    X = mf.SelfAttention(3.0).field(x, w, x)
    np.testing.assert_allclose(np.sum(X * x, axis=-1), 0, atol=1e-14)
    # SA moves by a convex combination of unit vectors: |X| <= 1
    assert np.max(np.linalg.norm(X, axis=-1)) <= 1 + 1e-14


def test_beta_zero_is_projected_mean(rng):
    x, q = sphere_points(rng, 30, 3), sphere_points(rng, 4, 3)
    w = rng.uniform(0, 1, 30)
    m = w @ x
    np.testing.assert_allclose(mf.SelfAttention(0.0, normalized=False).field(x, w, q), project_tangent(q, m), atol=1e-15)
    np.testing.assert_allclose(mf.SelfAttention(0.0).field(x, w, q), project_tangent(q, m / w.sum()), atol=1e-15)


def test_sa_large_beta_is_finite_and_tends_to_nearest_point(rng):
    x = sphere_points(rng, 20, 3)
    w = np.full(20, 1 / 20)
    X = mf.SelfAttention(1e9).field(x, w, x)
    assert np.all(np.isfinite(X))
    # at β → ∞ the softmax picks y = x itself, whose projection vanishes
    np.testing.assert_allclose(X, 0, atol=1e-12)


def test_usa_overflow_is_an_error(rng):
    x = sphere_points(rng, 5, 3)
    with pytest.raises(OverflowError, match="USA"):
        mf.SelfAttention(800.0, normalized=False).field(x, np.full(5, 0.2), x)


def test_multihead_is_sum_of_heads(rng):
    d = 3
    x = sphere_points(rng, 12, d)
    w = np.full(12, 1 / 12)
    heads = [mf.SelfAttention(b, rng.standard_normal((d, d)), rng.standard_normal((d, d)), rng.standard_normal((d, d)))
             for b in (0.5, 2.0)] + [mf.SelfAttention(1.0, normalized=False)]
    total = sum(h.field(x, w, x) for h in heads)
    np.testing.assert_allclose(mf.MultiHeadAttention(heads).field(x, w, x), total, rtol=1e-13, atol=1e-14)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 5), beta=st.floats(0, 20), normalized=st.booleans())
def test_rotation_equivariance(seed, d, beta, normalized):
    """Q = K = V = I: X[R#μ](Rx) = R X[μ](x) for every rotation R."""
    rng = np.random.default_rng(seed)
    x, q = sphere_points(rng, 9, d), sphere_points(rng, 4, d)
    w = rng.uniform(0.05, 1, 9)
    R = special_ortho_group.rvs(d, random_state=rng)
    model = mf.SelfAttention(beta, normalized=normalized)
    scale = max(1.0, np.exp(beta)) if not normalized else 1.0
    np.testing.assert_allclose(model.field(x @ R.T, w, q @ R.T), model.field(x, w, q) @ R.T, atol=1e-12 * scale)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 4), beta=st.floats(0, 10))
def test_permutation_invariance(seed, d, beta):
    """The field depends on the measure, not on the order of its atoms."""
    rng = np.random.default_rng(seed)
    x, q = sphere_points(rng, 11, d), sphere_points(rng, 3, d)
    w = rng.uniform(0.05, 1, 11)
    p = rng.permutation(11)
    Q = rng.standard_normal((d, d))
    model = mf.SelfAttention(beta, Q=Q)
    np.testing.assert_allclose(model.field(x[p], w[p], q), model.field(x, w, q), rtol=1e-12, atol=1e-13)


def test_batched_points(rng):
    x = np.stack([sphere_points(rng, 6, 3) for _ in range(4)])
    w = np.full((4, 6), 1 / 6)
    model = mf.SelfAttention(2.0)
    batched = model.field(x, w, x)
    for b in range(4):
        np.testing.assert_allclose(batched[b], model.field(x[b], w[b], x[b]), rtol=1e-14)


def test_energy_definition_and_beta_zero_limit(rng):
    x = sphere_points(rng, 15, 3)
    w = rng.uniform(0, 1, 15)
    w /= w.sum()
    beta = 2.5
    G = x @ x.T
    assert mf.SelfAttention(beta).energy(x, w) == pytest.approx(w @ np.exp(beta * G) @ w / (2 * beta), rel=1e-14)
    # β → 0: E_β − 1/(2β) → ½|m|², the value returned at β = 0
    m = w @ x
    small = 1e-6
    assert mf.SelfAttention(small).energy(x, w) - 1 / (2 * small) == pytest.approx(0.5 * m @ m, abs=1e-5)
    assert mf.SelfAttention(0.0).energy(x, w) == pytest.approx(0.5 * m @ m, rel=1e-14)
    # only for zonal kernels
    with pytest.raises(ValueError, match="zonal"):
        mf.SelfAttention(1.0, Q=np.diag([1.0, 2.0, 3.0])).energy(x, w)


def test_energy_maximised_by_dirac_minimised_by_uniform():
    """GLPR Prop. 3.4 on the circle: uniform < any other < Dirac."""
    n = 64
    th = 2 * np.pi * np.arange(n) / n
    pts = np.stack([np.cos(th), np.sin(th)], -1)
    model = mf.SelfAttention(3.0)
    uniform = model.energy(pts, np.full(n, 1 / n))
    w = 1 + 0.3 * np.cos(th)
    other = model.energy(pts, w / w.sum())
    dirac = model.energy(pts[:1], np.ones(1))
    assert uniform < other < dirac
    assert dirac == pytest.approx(np.exp(3.0) / 6.0, rel=1e-15)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("beta", [np.nan, np.inf])  # β < 0 is repulsive attention (tests/particles/test_repulsion.py)
def test_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        mf.SelfAttention(beta)


def test_beta_wrong_type():
    with pytest.raises(TypeError, match="beta"):
        mf.SelfAttention("hot")


@pytest.mark.parametrize("M", [np.ones((2, 3)), np.ones(3), np.ones((1, 1)), np.array([[1.0, np.nan], [0, 1]])])
def test_bad_matrix(M):
    with pytest.raises(ValueError, match="`Q`"):
        mf.SelfAttention(1.0, Q=M)


def test_matrices_of_different_sizes():
    with pytest.raises(ValueError, match="one dimension"):
        mf.SelfAttention(1.0, Q=np.eye(2), V=np.eye(3))


def test_field_input_checks(rng):
    x = sphere_points(rng, 5, 3)
    model = mf.SelfAttention(1.0)
    with pytest.raises(ValueError, match="unit vectors"):
        model.field(2 * x, np.full(5, 0.2), x)
    with pytest.raises(ValueError, match="non-finite"):
        model.field(np.where(x > 0.5, np.nan, x), np.full(5, 0.2), x)
    with pytest.raises(ValueError, match="weights"):
        model.field(x, np.full(4, 0.25), x)
    with pytest.raises(ValueError, match="different dimensions"):
        model.field(x, np.full(5, 0.2), sphere_points(rng, 2, 4))
    with pytest.raises(ValueError, match="3×3|2×2"):
        mf.SelfAttention(1.0, Q=np.eye(2)).field(x, np.full(5, 0.2), x)
    with pytest.raises(ValueError, match="positive mass"):
        model.field(x, np.zeros(5), x)


def test_multihead_checks():
    with pytest.raises(ValueError, match="non-empty"):
        mf.MultiHeadAttention([])
    with pytest.raises(TypeError, match="heads\\[1\\]"):
        mf.MultiHeadAttention([mf.SelfAttention(1.0), "head"])
    with pytest.raises(ValueError, match="different dimensions"):
        mf.MultiHeadAttention([mf.SelfAttention(1.0, Q=np.eye(2)), mf.SelfAttention(1.0, Q=np.eye(3))])


def test_models_are_immutable():
    from dataclasses import FrozenInstanceError

    m = mf.SelfAttention(1.0, Q=np.eye(2))
    with pytest.raises(FrozenInstanceError):
        m.beta = 2.0
    with pytest.raises(ValueError):
        m.Q[0, 0] = 5.0


@pytest.mark.parametrize("value", ["4", b"4", " 4.0", True, np.array("4")])
def test_numeric_text_is_not_a_beta(value):
    """`SelfAttention("4")` used to be read as β = 4 by float(): a number typed as text (or a bool) is refused in the
    shared check, the message naming `beta` and the value; the R^d models share it (Softmax, Masked)."""
    from meanfield.models import Masked, Softmax

    for make in (lambda b: mf.SelfAttention(b), lambda b: mf.SelfAttention(beta=b), lambda b: Softmax(beta=b),
                 lambda b: Masked(beta=b)):
        with pytest.raises(TypeError, match=r"`beta` must be a real number, got .*4|`beta`.*True") as e:
            make(value)
        assert repr(value) in str(e.value)


@pytest.mark.parametrize("value", [4, 4.0, np.float64(4), np.float32(4), np.int64(4), np.int8(4), np.array(4.0)])
def test_numpy_numbers_are_still_a_beta(value):
    assert mf.SelfAttention(value).beta == 4.0 and type(mf.SelfAttention(value).beta) is float
