"""Arrays laid out for the compiled kernels' SIMD loops: C order, starting on a 64-byte boundary.

The kernels stream their inner arrays (keys, values, weights) in vectors of
eight doubles (AVX-512). NumPy aligns its buffers to 16 bytes only, so three
loads in four straddle two cache lines; on the S² particle field (n = 4096,
d = 3) that costs 10–15 % (6.8 ms aligned against 7.7–8.0 ms at offsets 8–48,
measured on AMD Zen 5; benchmarks/bench_table.py --rows particles).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ALIGNMENT", "aligned"]

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
