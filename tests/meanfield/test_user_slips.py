"""What a newcomer who reads the docs trips on: an ambiguous argument refused with both readings spelled out, a short
repr of a solution, a package namespace without its import helpers."""

import re

import numpy as np
import pytest

import meanfield as mf
from meanfield.models import Masked, Softmax


@pytest.mark.parametrize("kind", [Softmax, Masked])
@pytest.mark.parametrize("q", [2.0, 3, np.float64(0.5), np.array(2.0)])
def test_a_bare_number_as_q_is_refused_with_both_readings(kind, q):
    """Softmax(2.0) read Q = [[2]] with β = 1 where SelfAttention(2.0) means β = 2: the 0-d Q is refused (TypeError),
    the message giving both spellings; each spelling builds the model it names (β = 2 with Q = I; a 1 × 1 Q)."""
    name, v = kind.__name__, float(q)
    words = (f"{name}(Q, K, V, beta): Q is a matrix (d × d); for the inverse temperature write {name}(beta={v!r}), "
             f"for a 1 × 1 Q write Q=[[{v!r}]]")
    with pytest.raises(TypeError, match=re.escape(words)):
        kind(q)
    assert kind(beta=v).beta == v and kind(beta=v).Q is None
    np.testing.assert_array_equal(kind(Q=[[v]]).Q, [[v]])
