"""A hint to LLVM for numba kernels: vectorise at the machine's widest vectors.

Kept in the core layer so that every compiled kernel can take it: the pair sums (:mod:`meanfield.kernels`) and the
domains' point sums (:mod:`meanfield.domains.circle.point_sums`) alike.
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic

__all__ = ["wide_vectors", "default_vectors"]


@intrinsic
def wide_vectors(typingctx):
    """Ask LLVM to vectorise the calling kernel's loops at the machine's widest vectors (512 bits on AVX-512).

    LLVM's x86 cost model compiles for 256-bit vectors on AVX-512 cores unless told otherwise (the tuning flag
    ``prefer-256-bit`` of Skylake-X, Ice Lake, Sapphire Rapids: a guard against the clock drop of 512-bit code in
    mixed scalar work). The compiled pair sums are long runs of vector arithmetic, where twice the lanes pay: this
    sets the function attribute ``"prefer-vector-width"="512"`` on the kernel that calls it (a no-op at run time).
    Machines without AVX-512 keep their widest legal vectors (LLVM caps the preference at the legal width).
    Measured on an AVX-512 Xeon (2 cores, under load): the d = 3 pair sums 1.4x faster in double precision and
    1.5x in single (benchmarks/bench_pairs.py, the rows '256-bit')."""

    def codegen(context, builder, signature, args):
        # llvmlite's FunctionAttributes (a set) knows enumerated attributes only; a string attribute "key"="value"
        # added past its check is written into the function's definition as it is. Should a later llvmlite store
        # attributes otherwise, the hint is skipped (LLVM's own width), never a failed compile.
        attrs = builder.function.attributes
        if isinstance(attrs, set):
            set.add(attrs, '"prefer-vector-width"="512"')
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def default_vectors(typingctx):
    """The no-op counterpart of :func:`wide_vectors`: LLVM's own choice of width (the benchmark's comparison)."""

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(), codegen
