"""The one vocabulary of field strategies: how the sums of X[μ] are computed.

Every strategy computes the same velocity field X[μ] (MATH.md §2, §5); the
reference is ``quadrature`` and each fast path is tested against it.
``solve(path=...)`` and ``particles.simulate(path=...)`` take these names; a
target offers the ones that apply to it and ``"auto"`` picks the fastest.

================  =========================================================  ===========================
name              what is summed, how                                        offered by
================  =========================================================  ===========================
``quadrature``    ``model.field`` over the measure's atoms: grid nodes ×     every grid, every particle
                  quadrature weights, or particles × their weights (NumPy,    system (the reference)
                  row chunks)
``pairwise``      the same sums fused in compiled code (numba), no n×m       particles on S^{d-1}
                  array, exact row maxima where the bound is loose
``spectral``      multipliers of the kernel: Bessel I_k (circle),            zonal models on the circle
                  Funk–Hecke i_l (S²), FFT convolution (R^d, L2 with Q = K),  and S² (grids; circle
                  Fourier moments of an empirical measure (circle)           particles); L2 grids in R^d
``separable``     softmax sums factorised on a tensor grid,                  softmax on R^d grids
                  e^{β⟨Ax,y⟩} = Π_k e^{β(Ax)_k y_k}
``moments``       the moment generating function of the density: one        self-attention on S² grids,
                  precomputed matrix per head from its coefficients to       any Q, K, V, several heads
                  those of Z(x) = ∫e^{β⟨Qx,Ky⟩}ρ(y)dy and of ∫e^{…}yρ(y)dy    (where its degree and size
                                                                             allow)
``fused``         whole RK4 step sequences of small systems in compiled      batches of small particle
                  code                                                       systems, one head
================  =========================================================  ===========================
"""

from __future__ import annotations

__all__ = ["STRATEGIES", "check"]

STRATEGIES = ("auto", "quadrature", "pairwise", "spectral", "separable", "moments", "fused")


def check(path: str, offered: tuple[str, ...], where: str) -> str:
    """``path`` if ``where`` offers it (``"auto"`` always), else ``ValueError`` listing the offered names."""
    choices = ("auto",) + tuple(offered)
    if path not in STRATEGIES:
        raise ValueError(f"`path` must be one of {STRATEGIES}, got {path!r}.")
    if path not in choices:
        raise ValueError(f"`path` {path!r} does not apply to {where}; it offers {choices}.")
    return path
