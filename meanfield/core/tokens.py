r"""Tokens dense or sparse: the row operations the layer map and the heads' average need besides products.

n tokens of R^d are a float ndarray (..., n, d), or, where most of their coordinates are 0, a 2-D ``scipy.sparse``
array (CSR). The case in view (docs/MATH.md §13): n equiangular unit tokens θ_i = √ρ e_0 + √(1 − ρ) e_i
(⟨θ_i, θ_j⟩ = ρ > 0) need d = n + 1 dimensions (their Gram matrix (1 − ρ)I + ρ11ᵀ has rank n), so a dense array
holds n(n + 1) floats (80 GB at n = 10⁵), while they have 2n non-zeros. The softmax average at m queries,
A(q) = Σ_j w_j e^{β⟨q, k_j⟩} k_j / Σ_j w_j e^{β⟨q, k_j⟩}, needs the keys only through K q and Kᵀ p: O(m · nnz(K))
work with sparse keys (:meth:`meanfield.models.SelfAttention.average`, whose code is the dense one; a head says
whether it takes sparse keys, ``sparse_refusal``).

On a dense array each function here is the expression the library used before sparse tokens existed, bit for bit.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

__all__ = ["is_sparse", "as_tokens", "transposed", "directions", "rows", "check_rows", "DENSE_ROWS_MAX"]

#: The most floats :func:`rows` makes dense out of sparse tokens (2 GiB of float64): sparse tokens exist because
#: their dense array would not fit (n equiangular tokens in d = n + 1: 80 GB at n = 10⁵), so the layer's queries are
#: taken densely only up to this size, and beyond it the caller is told to pass ``at``.
DENSE_ROWS_MAX = 2**28


def is_sparse(x) -> bool:
    """Whether ``x`` is a scipy.sparse matrix or array."""
    return sparse.issparse(x)


def as_tokens(x):
    """A float ndarray of ``x`` (``np.asarray(x, dtype=float)``), or, for a scipy.sparse matrix or array, a float
    CSR array (2-D: the tokens are its rows)."""
    if not sparse.issparse(x):
        return np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"sparse tokens must be a 2-D (n, d) scipy.sparse array, got shape {x.shape}.")
    return _canonical(sparse.csr_array(x, dtype=float))


def _canonical(x):
    """The CSR array ``x`` with each entry stored once, sorted (a copy where it was not: ``x`` may share the
    caller's arrays). A CSR array built from (data, indices, indptr) may store an entry twice, which stands for
    their sum; the row operations here that read the stored values one by one (the squares of a row's norm) need
    each entry once."""
    if x.has_canonical_format:
        return x
    x = x.copy()
    x.sum_duplicates()
    return x


def transposed(a):
    """``a`` with its last two axes swapped: ``np.swapaxes(a, -1, -2)``, ``a.T`` for a 2-D array (sparse included;
    on a dense 2-D array the two are the same view)."""
    return a.T if a.ndim == 2 else np.swapaxes(a, -1, -2)


def directions(x):
    """θ = x/|x| row by row: dense in, dense out (no check for |x| = 0, as before); sparse in, a sparse CSR array out
    (the norms from the stored entries; ``ValueError`` naming the first row with |x| = 0, which has no direction)."""
    if not sparse.issparse(x):
        return x / np.linalg.norm(x, axis=-1, keepdims=True)
    x = _canonical(sparse.csr_array(x))  # |x|² = Σ of the stored squares needs each entry stored once
    counts = np.diff(x.indptr)
    r = np.zeros(x.shape[0])
    full = counts > 0
    r[full] = np.sqrt(np.add.reduceat(x.data * x.data, x.indptr[:-1][full]))  # each row's stored squares
    if np.any(r == 0.0):
        raise ValueError(f"token {int(np.argmax(r == 0.0))} has |x| = 0: no direction x/|x|.")
    return sparse.csr_array((x.data / np.repeat(r, counts), x.indices, x.indptr), shape=x.shape)


def check_rows(at, n: int) -> np.ndarray:
    """``at`` as a 1-D array of row indices of n tokens (integers in [0, n)), or ``ValueError`` naming it."""
    a = np.asarray(at)
    if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer) or np.any(a < 0) or np.any(a >= n):
        raise ValueError(f"`at` must be a non-empty 1-D array of token indices, integers in [0, {n}), got {at!r}.")
    return a


def rows(x, at) -> np.ndarray:
    """The tokens ``x[..., at, :]`` as a dense array (all of them for ``at`` None: ``x`` itself when dense)."""
    if not sparse.issparse(x):
        return x if at is None else x[..., at, :]
    m = x.shape[0] if at is None else len(at)
    if m * x.shape[1] > DENSE_ROWS_MAX:
        raise ValueError(f"{m} of the sparse {x.shape[0]}×{x.shape[1]} tokens as dense queries would hold "
                         f"{m * x.shape[1] * 8 / 1e9:.3g} GB (more than DENSE_ROWS_MAX = 2^28 floats): pass `at`, "
                         "the indices of the few tokens where the layer is wanted.")
    return (x if at is None else x[at]).toarray()
