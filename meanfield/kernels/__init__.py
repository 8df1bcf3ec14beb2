"""The kernel layer: sums of the attention kernel over point sets, compiled (the fast strategies).

=========================  ===============================================================
:func:`pairwise_sums`      Σ_j w_j e^{β⟨Qx_i, Ky_j⟩} (V y_j, 1), fused, row-shifted (``pairwise``)
:func:`field`              X[μ] of any sphere model from those sums (``pairwise``)
:func:`euclidean_field`    Γ[μ] of R^d softmax, L2, masked, sigmoid and Sinkhorn attention, compiled rows (``pairwise``)
:func:`energy`             E_β of point sets (no n×n array)
:func:`circle_spectral_field`  the circle's O((n + m)L) field of an empirical measure (``spectral``)
=========================  ===============================================================

Each is tested against the model's reference sum (``quadrature``). The grids
and the particles both use this layer (the particles through
:func:`particles.simulate`'s strategies), so ``meanfield`` needs nothing from
``particles`` to be fast. May import numba, the domain layer, the models and
:mod:`meanfield.numerics`.
"""

from .circle import circle_degree, circle_spectral_field
from .energy import energy
from .euclidean import compiled_models, euclidean_field
from .pairwise import field, pairwise_sums

__all__ = ["pairwise_sums", "field", "euclidean_field", "compiled_models", "energy", "circle_degree", "circle_spectral_field"]
