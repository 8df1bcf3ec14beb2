"""What a user who starts from the docs gets for the usual slips: the error names the argument, what it got and what
it must be (the shape before the values; the weights' shape against the particles'; the accepted seeds)."""

import re

import numpy as np
import pytest

import meanfield as mf
import particles as pt


@pytest.mark.parametrize("x0", [np.ones(5), np.ones((2, 3, 4, 5)), np.ones(())])
def test_a_wrong_shape_is_named_before_the_unit_norm(x0):
    """A 1-D or 4-D x0 fails the shape check, not the unit-norm check (which it would also fail)."""
    shape = re.escape(str(np.shape(x0)))
    with pytest.raises(ValueError, match=f"`x0` must have shape \\(n, d\\) or \\(batch, n, d\\), got {shape}"):
        pt.simulate(mf.SelfAttention(1.0), x0, [0.0, 1.0])


def test_a_transposed_x0_is_legal_in_shape_and_told_how_to_normalise():
    """x0 of shape (50, 2) transposed is (n, d) = (2, 50): a legal shape whose rows are not unit vectors; the message
    names the row farthest from the sphere (the larger of the two row norms) and the normalisation to apply."""
    x0 = pt.uniform_sphere(50, 2, rng=0)
    far = int(np.argmax(np.abs(np.linalg.norm(x0.T, axis=-1) - 1.0)))
    with pytest.raises(ValueError, match=f"unit vectors.*at row {far}; .*"
                                         "x / np.linalg.norm\\(x, axis=-1, keepdims=True\\)"):
        pt.simulate(mf.SelfAttention(1.0), x0.T, [0.0, 1.0])


def test_weights_of_the_wrong_length_are_named_with_the_shape_required():
    """Ten weights for fifty particles: the error names `weights`, its shape (10,) and the (n,) = (50,) required (or
    the batch's (batch, n)), at every entry point that takes weights — not numpy's broadcast or reshape message."""
    from meanfield import kernels

    model, x = mf.SelfAttention(1.0), pt.uniform_sphere(50, 2, rng=0)
    xb, w = pt.uniform_sphere(50, 2, rng=0, batch=3), np.ones(10) / 10
    needs = "`weights` must have shape \\(n,\\) = \\(50,\\)"
    with pytest.raises(ValueError, match=f"{needs}, one weight per particle, got shape \\(10,\\)"):
        pt.simulate(model, x, [0.0, 1.0], weights=w)
    with pytest.raises(ValueError, match=f"{needs} or \\(3, 50\\), one weight per particle, got shape \\(10,\\)"):
        pt.simulate(model, xb, [0.0, 1.0], weights=w)
    with pytest.raises(ValueError, match=f"{needs}, one weight per particle, got shape \\(10,\\)"):
        pt.velocity(model, x, weights=w)
    with pytest.raises(ValueError, match="`weights` must have the particles' shape \\(50,\\).*got shape \\(10,\\)"):
        kernels.field(model, x, w, x)
    with pytest.raises(ValueError, match="`weights` must have the particles' shape \\(3, 50\\).*got shape \\(50,\\)"):
        kernels.field(model, xb, np.ones(50) / 50, xb)


def test_weights_that_fit_still_run():
    """(n,) weights broadcast over a batch: the run equals the one with the (batch, n) weights spelled out, and the
    field of the checked entry point is the kernel's at the same weights (the check changes no arithmetic)."""
    from meanfield import kernels

    model, xb = mf.SelfAttention(1.0), pt.uniform_sphere(20, 2, rng=1, batch=2)
    w = np.arange(1.0, 21.0) / 210.0
    a = pt.simulate(model, xb, [0.0, 0.5], weights=w, strategy="pairwise")
    b = pt.simulate(model, xb, [0.0, 0.5], weights=np.broadcast_to(w, (2, 20)), strategy="pairwise")
    np.testing.assert_array_equal(a.x, b.x)
    v = pt.velocity(model, xb, weights=w, strategy="pairwise")
    # the two may sum the 20 terms in another order: error <= n eps max|term| ~ 20 * 2.2e-16 ~ 4.4e-15 of max |v|;
    # 1e-13 keeps a 20x margin
    u = kernels.field(model, xb, np.broadcast_to(w, (2, 20)).copy(), xb)
    np.testing.assert_allclose(v, u, rtol=0, atol=1e-13 * np.abs(u).max())


@pytest.mark.parametrize("rng, error, numpys", [("abc", TypeError, "SeedSequence expects int"),
                                                (1.5, TypeError, "SeedSequence expects int"),
                                                (-1, ValueError, "expected non-negative integer")])
def test_a_bad_seed_is_named_with_what_rng_accepts(rng, error, numpys):
    """A string, a float or a negative number as `rng`: the error names `rng`, the value and what it accepts (numpy's
    own words follow in parentheses), at the samplers and the laws alike (one helper, checks.generator)."""
    from meanfield import laws

    words = f"`rng` must be None, a non-negative integer seed.*got {re.escape(repr(rng))}.*numpy: {numpys}"
    with pytest.raises(error, match=words):
        pt.uniform_sphere(5, 2, rng=rng)
    with pytest.raises(error, match=words):
        pt.orthogonal(2, 3, rng=rng)
    with pytest.raises(error, match=words):
        laws.sample_von_mises_fisher(5, [[1.0, 0.0]], 2.0, rng=rng)


def test_the_accepted_seeds_draw_what_numpy_draws():
    """An int, a sequence of ints, a SeedSequence and a Generator give numpy's own streams (the helper only checks)."""
    for seed in (3, [3, 1], np.random.SeedSequence(7)):
        drawn = pt.uniform_sphere(4, 3, rng=np.random.default_rng(seed))
        np.testing.assert_array_equal(pt.uniform_sphere(4, 3, rng=seed), drawn)
    g = np.random.default_rng(5)
    assert mf.core.checks.generator(g) is g
