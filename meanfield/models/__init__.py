"""Attention models: the velocity field X[μ] shared by particles and grids (MATH.md §1–2, §5).

=======================  ===========================================================
:class:`SelfAttention`   SA / USA on the sphere S^{d-1} (GLPR (2.3), (USA))
:class:`MultiHeadAttention`  sums of heads (GLPR (2.7))
:class:`FeedForward`     the MLP block P_x W σ(Ax + b) (GLPR §2.3.2)
:class:`Transformer`     attention + feed-forward, summed or split per layer (GLPR (2.8)), normalised
                         post-LN (default), pre-LN, peri-LN, Mix-LN or nGPT (:class:`Normalization`, MATH.md §10)
:class:`Hardmax`         hardmax attention, β = ∞, on S^{d-1} or in R^d (MATH.md §11)
:class:`Softmax`, :class:`L2`, :class:`Sinkhorn`, :class:`Sigmoid`, :class:`Masked`
                         the R^d variants of CACP
=======================  ===========================================================

Each model has ``field(points, weights, queries)`` (the reference sum),
``heads``, ``dim``, ``manifold``, ``zonal`` and ``kind``; each head class has its bounds
(``constants``, derived in :mod:`.bounds`, which also sums them over heads for step sizes and
stability estimates). Every kind is registered once in :mod:`.registry`, which the study files
read. What a kind offers beyond its field it states itself, and the layers above ask that, never which class or
kind they hold (:class:`~.base.Head`): ``gaussian_closure`` (or its ``gaussian_refusal``), ``compiled_rows``,
``exp_kernel``, ``translation_kernel``, ``tilt_matrix``, ``layer_map``, ``has_blocks``; its title words are its
``ModelKind``'s ``words``. May import the domain layer's geometry, :mod:`meanfield.core.checks` and :mod:`meanfield.core.numerics`.
"""

from . import registry
from .base import Head, Zonal, heads, repulsive
from .context import ContextScaling, at_context, context_dependent, context_refusal, parse_scaling
from .bounds import HeadConstants, head_constants, head_norms, lipschitz_constants, rate_scale
from .feedforward import ACTIVATIONS, FeedForward
from .hardmax import Hardmax
from .euclidean import EUCLIDEAN_MODELS, L2, EuclideanAttention, Masked, Sigmoid, Sinkhorn, Softmax
from .multihead import MultiHeadAttention
from .normalization import NORMALIZATIONS, Normalization, normalization_of
from .registry import KINDS, ModelKind, Parameter
from .schedule import Layers, layers
from .sphere import SelfAttention
from .transformer import SPLITTINGS, Transformer, as_model, attention_of

__all__ = ["SelfAttention", "MultiHeadAttention", "Softmax", "L2", "Sinkhorn", "Sigmoid", "Masked", "EuclideanAttention",
           "EUCLIDEAN_MODELS", "Head", "Zonal", "heads", "repulsive", "ContextScaling", "at_context",
           "context_dependent", "context_refusal", "parse_scaling", "head_norms", "rate_scale",
           "lipschitz_constants", "head_constants", "HeadConstants", "registry", "KINDS", "ModelKind", "Parameter", "Layers", "layers",
           "FeedForward", "ACTIVATIONS", "Transformer", "SPLITTINGS", "as_model",
           "attention_of", "Normalization", "NORMALIZATIONS", "normalization_of", "Hardmax"]
