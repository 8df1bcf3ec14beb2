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
