"""Models describe themselves (issue 39, item 4): short words and symbols for a figure's title, from the model's
own fields — the figures never parse a repr."""

import numpy as np
import pytest

from meanfield.models import FeedForward, SelfAttention, Transformer, layers

FF = FeedForward(np.ones((3, 4)) / 4, np.ones((4, 3)) / 3)


@pytest.mark.parametrize("model, words", [
    (SelfAttention(4.0), "SA, β = 4"),
    (SelfAttention(3.0, normalized=False, noise=0.5), "USA, β = 3, noise D = 0.5"),
    (SelfAttention(2.0, causal=True), "causal SA, β = 2"),
    (SelfAttention(1.0, Q=np.array([[0.5, 0.2], [0.0, 0.3]])), "SA, β = 1, Q = [0.5, 0.2; 0, 0.3]"),
    (SelfAttention(1.0, K=2 * np.eye(3), V=-np.eye(3)), "SA, β = 1, K = 2I, V = −I"),
    (SelfAttention(1.0, Q=3 * np.eye(3), K=3 * np.eye(3)), "SA, β = 1, Q = K = 3I"),
    (SelfAttention(1.0, Q=np.diag([1.0, 2, 3, 4])), "SA, β = 1, Q = general 4×4"),
    (SelfAttention(layers([1.0, 2.0, 3.0]), Q=layers([np.eye(3)] * 3)), "SA with per-layer Q, β"),
    (SelfAttention(2.0, V=lambda t: np.eye(2)), "SA, β = 2, V(t)"),
    (Transformer(SelfAttention(4.0), (FF, FF)), "Transformer (SA, β = 4; 2 GELU feed-forward blocks)"),
    (Transformer(SelfAttention(1.0), FF, splitting="lie", depth=[1.0, 1.0]),
     "2-layer Transformer (SA, β = 1; a GELU feed-forward block; Lie splitting)"),
    (Transformer(SelfAttention(layers([1.0, 2.0, 3.0]), V=layers([np.eye(3)] * 3)), FF),
     "3-layer Transformer (SA with per-layer V, β; a GELU feed-forward block)"),
    (Transformer(SelfAttention(1.0), normalization="pre"), "Transformer (pre-LN; SA, β = 1)"),
])
def test_models_describe_themselves(model, words):
    assert model.describe() == words
    assert not any(code in words for code in ("SelfAttention(", "layers(", "array(", "beta=", "FeedForward("))


def test_a_transformer_of_several_heads_describes_itself():
    """Found by the check ⇔ run property test: a pre-LN Transformer of multi-head attention (a study with
    [model] heads = 2, normalization = 'pre') raised AttributeError in describe()."""
    from meanfield.models import MultiHeadAttention, SelfAttention, Transformer

    model = Transformer(MultiHeadAttention((SelfAttention(1.0), SelfAttention(2.0))), normalization="pre")
    assert model.describe().startswith("Transformer (pre-LN")
