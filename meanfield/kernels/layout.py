"""Arrays laid out for the compiled kernels' SIMD loops: C order, starting on a 64-byte boundary.

The kernels stream their inner arrays (keys, values, weights) in vectors of
eight doubles (AVX-512). NumPy aligns its buffers to 16 bytes only, so three
loads in four straddle two cache lines; on the S² particle field (n = 4096,
d = 3) that costs 10–15 % (6.8 ms aligned against 7.7–8.0 ms at offsets 8–48,
measured on AMD Zen 5; benchmarks/bench_table.py --rows particles).
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["ALIGNMENT", "aligned", "borrowed"]

#: bytes: one AVX-512 vector, one cache line
ALIGNMENT = 64


def aligned(a, dtype=np.float64) -> np.ndarray:
    """A C-contiguous array equal to ``a`` whose data start on an :data:`ALIGNMENT` boundary.

    ``a`` itself when it already is one (of ``dtype``) or is empty, otherwise a copy.
    """
    a = np.asarray(a, dtype=dtype)
    if a.size == 0 or (a.flags.c_contiguous and a.ctypes.data % ALIGNMENT == 0):
        return np.ascontiguousarray(a)  # an empty array has nothing to align
    buf = np.empty(a.nbytes + ALIGNMENT, dtype=np.uint8)
    start = -buf.ctypes.data % ALIGNMENT
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


@intrinsic
def borrowed(typingctx, a):
    """Inside a compiled kernel: the array ``a`` (the same data, shape and strides) without its owner.

    Every view numba takes of an array (``a[i]``, ``a[i, j0:j1]``) increments and later decrements the reference
    count of the array's owner, an atomic operation on one shared cache line: threads that take views of the same
    array contend for it (the pair sums on two threads: 1.61x one at d = 3 with a view per query, 1.85x without).
    Views of the borrowed array carry no owner (a null ``meminfo``, which numba's reference counting skips), so they
    cost no atomic operation. The caller keeps ``a`` alive for the call (the kernels' arguments are), and no view
    may outlive it (none is returned or stored)."""
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, signature, args):
        # numba's array structure: (meminfo, parent, nitems, itemsize, data, shape, strides)
        fields = args[0].type.elements
        out = builder.insert_value(args[0], cgutils.get_null_value(fields[0]), 0)
        return builder.insert_value(out, cgutils.get_null_value(fields[1]), 1)

    return a(a), codegen
