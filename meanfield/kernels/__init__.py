"""The kernel layer: sums of the attention kernel over point sets, compiled (the fast strategies).

=========================  ===============================================================
:func:`pairwise_sums`      Σ_j w_j e^{β⟨Qx_i, Ky_j⟩} (V y_j, 1), fused, row-shifted (``pairwise``)
:func:`field`              X[μ] of any sphere model from those sums (``pairwise``; :func:`grid_field` on grids)
:func:`average`            A = Σ_h u_h, the same sums unprojected: the normalisation variants' (MATH.md §10)
:class:`NGPTField`         nGPT's α P_θA/|A| from those averages (:func:`grid_field` of an nGPT density)
:func:`euclidean_field`    Γ[μ] of R^d softmax, L2, masked, sigmoid and Sinkhorn attention, compiled rows (``pairwise``)
:func:`pairwise_field`     whichever of the two the model's compiled sums are (the particles' ``pairwise``)
:func:`energy`             E_β of point sets (no n×n array)
:func:`circle_spectral_field`  the circle's O((n + m)L) field of an empirical measure (``spectral``)
=========================  ===============================================================

Each is tested against the model's reference sum (``quadrature``). The grids
and the particles both use this layer (the particles through
:func:`particles.simulate`'s strategies), so ``meanfield`` needs nothing from
``particles`` to be fast. The spectral sums of point sets belong to their domains
(``Domain.point_sums``: ``meanfield.domains.circle.point_sums``, ``meanfield.domains.sphere.point_sums``);
the circle's are re-exported here. May import numba, the domain layer, the models and
:mod:`meanfield.core.numerics`.
"""

from functools import partial

from ..domains import of_model
from ..domains.circle.point_sums import circle_degree, circle_spectral_field
from ..models import heads
from .energy import energy
from .euclidean import ROWS, compiled_models, euclidean_field
from ..models.normalization import normalization_of
from .pairwise import average, field, NGPTField, pairwise_sums

__all__ = ["pairwise_sums", "field", "average", "NGPTField", "grid_field", "euclidean_field", "compiled_models",
           "pairwise_refusal", "energy",
           "circle_degree", "circle_spectral_field", "pairwise_field", "single_precision_refusal"]


def pairwise_refusal(model) -> str | None:
    """None where compiled pairwise sums exist for every head of ``model`` (a head of the exponential kernel on
    spheres, ``exp_kernel``, :func:`field`; an R^d head whose ``compiled_rows`` are of :data:`ROWS`,
    :func:`euclidean_field`), else why not."""
    missing = [h for h in heads(model) if not h.exp_kernel and h.compiled_rows not in ROWS]
    if missing:
        return (f"no compiled sums for {type(missing[0]).__name__} (the compiled models are self-attention and the "
                f"R^d kinds {compiled_models})")
    return next((h.compiled_refusal for h in heads(model) if h.compiled_refusal is not None), None)


def pairwise_field(model, points, weights, queries, precision: str = "double"):
    """X[μ](queries) by the compiled pairwise sums of ``model`` (the particles' ``pairwise`` strategy), the same
    contract as ``model.field``: :func:`field` for attention on the sphere and on tokens with positions,
    :func:`euclidean_field` for the R^d models (``precision`` is theirs to refuse: :func:`single_precision_refusal`)."""
    if not of_model(model).on_sphere:  # points of R^d
        return euclidean_field(model, points, weights, queries)
    return field(model, points, weights, queries, precision)


def single_precision_refusal(model) -> str | None:
    """None where the compiled pairwise sums of ``model`` run in float32 too (:func:`pairwise_sums`: attention on
    the sphere, on tokens with positions, the normalisations' averages), else why not."""
    if not of_model(model).on_sphere:  # points of R^d
        return f"the compiled rows of the R^d models ({', '.join(compiled_models)}) sum in double precision only"
    return None


def grid_field(model):
    """The quadrature strategy's sums on a grid through the compiled pairwise kernel (:func:`field`, tested equal
    to ``model.field``) for self-attention on spheres (any Q, K, V, several heads), nGPT's α P_θA/|A| through the
    compiled averages (:class:`NGPTField`, which records min |A|) for a Transformer normalised by nGPT; None (the
    model's own sum, the finite volumes' in R^d) otherwise."""
    if not normalization_of(model).heads_field:  # on the sphere by a function of A (the grids refuse radial ones)
        return NGPTField(model)
    return partial(field, model) if all(h.exp_kernel for h in heads(model)) else None
