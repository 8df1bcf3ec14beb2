"""Field strategies: how the sums of X[μ] are computed, and the one place that chooses among them.

Every strategy computes the same velocity field X[μ] (MATH.md §2, §5); the
reference is ``quadrature`` and each fast one is tested against it. ``solve``,
``particles.simulate`` and the Lagrangian measure take these names as ``strategy``;
what applies to a target is listed, best first, by :func:`for_grid` (the domain's
right-hand sides), :func:`for_nodes` (the Lagrangian measure) and :func:`for_particles`,
and :func:`resolve` is the only code that turns ``"auto"`` into a strategy (or refuses a
named one, saying why it does not apply).

================  =========================================================  ===========================
name              what is summed, how                                        offered by
================  =========================================================  ===========================
``quadrature``    ``model.field`` over the measure's atoms: grid nodes ×     every grid, every point set
                  quadrature weights, or points × their weights (NumPy,       (the reference)
                  row chunks)
``pairwise``      the same sums fused in compiled code (numba), no n×m       particles on S^{d-1}; R^d
                  array, exact row maxima where the bound is loose            models with compiled rows
``spectral``      multipliers of the kernel: Bessel I_k (circle),            zonal models on the circle
                  Funk–Hecke i_l (S²), FFT convolution (R^d, L2 with Q = K),  and S² (grids, Lagrangian
                  Fourier / harmonic moments of a point set                  nodes, particles); L2 grids
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

from ..domains.zonal import zonal_refusal
from . import pairwise_refusal
from ..models import attention_of, repulsive
from ..models.normalization import density_refusal, normalization_of

__all__ = ["STRATEGIES", "resolve", "for_grid", "for_nodes", "for_particles", "FUSED_UP_TO"]

STRATEGIES = ("auto", "quadrature", "pairwise", "spectral", "separable", "moments", "fused")

#: 'auto' runs batches of at most this many particles per system fully compiled (RK4, one head).
FUSED_UP_TO = 64
#: (n, d) from which 'auto' sums the particles' field with BLAS products (``quadrature``) rather than pairwise loops.
BLAS_FROM = (1000, 64)


def resolve(requested: str, offered: dict[str, str | None], where: str) -> str:
    """The strategy for ``requested`` among ``offered`` (name → None where it applies, else why not; best first).

    ``"auto"`` is the first that applies; a named strategy must apply (``ValueError`` saying why not, or
    listing what ``where`` offers).
    """
    if requested not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}, got {requested!r}.")
    if requested == "auto":
        applies = [name for name, why in offered.items() if why is None]
        if not applies:
            whys = "; ".join(f"{name}: {why}" for name, why in offered.items())
            raise ValueError(f"no field strategy applies to {where}: {whys}.")
        return applies[0]
    if requested not in offered:
        raise ValueError(f"`strategy` {requested!r} does not apply to {where}; it offers {('auto',) + tuple(offered)}.")
    why = offered[requested]
    if why is not None:
        raise ValueError(f"`strategy` {requested!r} does not apply to {where}: {why}.")
    return requested


def for_grid(model, grid) -> dict[str, str | None]:
    """The right-hand sides ``grid``'s domain has for ``model``'s attention (``Domain.grid_strategies``; a
    Transformer's feed-forward blocks are a fixed drift added to any of them, and alone need no sums: "quadrature").
    nGPT's field αP_θA/|A| (docs/MATH.md §10): the quadrature sums of domains that sum any field
    (``Domain.quadrature_of_any_field``) and the S² moments (which sum the unprojected average A), every other
    strategy refused with why."""
    if not normalization_of(model).heads_field:  # nGPT's (density_refusal refuses the radial variants there)
        return _ngpt_grid(model, grid)
    att = attention_of(model)
    return {"quadrature": None} if att is None else grid.domain.grid_strategies(att, grid)


def _ngpt_grid(model, grid) -> dict[str, str | None]:
    why = density_refusal(model, grids=True)  # hardmax heads under nGPT: refused like any density
    if why is not None:
        raise ValueError(f"{model!r}: {why}.")
    domain, words = grid.domain, model.normalization.words
    offered = domain.grid_strategies(model.attention, grid)
    if not domain.quadrature_of_any_field:
        return {name: (f"the {domain.name}'s right-hand sides sum post-LN's P_θA (its quadrature included), not "
                       f"{words}'s field of A; {words} densities run on the circle and S²") for name in offered}
    # the moments (S²) sum the unprojected average A itself; the spectral sums give P_θA alone
    return {name: (offered[name] if name in ("moments", "quadrature") else
                   f"{words}'s field of A needs |A|, the average's length (its normal part included), which the {name} "
                   "sums do not give") for name in offered}


def _spectral_refusal(model, domain, d: int) -> str | None:
    if domain.point_sums(d) is None:
        return f"the {domain.name} has no spectral sums of points in R^{d} (the circle and S² have)"
    if repulsive(model) and domain.repulsion_refusal is not None:  # β < 0: the circle's sums only (MATH.md §13)
        return domain.repulsion_refusal
    return zonal_refusal(model)


def for_nodes(model, domain, d: int) -> dict[str, str | None]:
    """The Lagrangian measure's field and divergence at its points: spectral sums where the domain has them and the
    model's attention is zonal, else the model's own sums (feed-forward blocks, :class:`~meanfield.models.Transformer`,
    are added to the attention's sums; alone they have nothing to sum: "quadrature")."""
    att = attention_of(model)
    if att is None:
        return {"quadrature": None}
    return {"spectral": _spectral_refusal(att, domain, d), "quadrature": None}


def for_particles(model, domain, n: int, d: int, *, method: str, batched: bool, weighted: bool,
                  noisy: bool = False, weights=None) -> dict[str, str | None]:
    """Particles: spectral sums where they pay off (``PointSums.pays_off`` for these ``weights``: their error bound
    rests on the smallest weight's share; ``weighted`` without ``weights`` takes none under "auto"), the fused RK4 of
    small batches, the compiled pairwise sums, the model's own sums (before the pairwise sums from :data:`BLAS_FROM`
    on: many points in high dimension); applicable strategies that do not pay off come last."""
    att = attention_of(model)  # the sums are the attention's; feed-forward blocks are added to them
    if att is None:
        return {"quadrature": None}
    spectral = _spectral_refusal(att, domain, d)
    single = model.exp_kernel and domain.unit_vectors and not model.time_dependent
    fused = None if method == "rk4" and single and not weighted and not noisy else (
        "the fused path runs RK4 for a single SelfAttention head with constant weights on a sphere (no feed-forward "
        f"block), equal weights and no noise; got method {method!r}, {model!r}, weights "
        f"{'given' if weighted else 'equal'}")
    pays = spectral is None and (weights is not None or not weighted) and \
        domain.point_sums(d).pays_off(n, att.zonal.beta, weights)
    small = fused is None and batched and n <= FUSED_UP_TO
    # many points in high dimension on spheres: the BLAS products of the model's own sums beat the compiled pairwise
    # loops (measured SA, n = 4000: 1.6× at d = 64, 3.4× at d = 128; n = 1000, d = 128: 1.3×); R^d's rows block theirs
    blas = domain.unit_vectors and n >= BLAS_FROM[0] and d >= BLAS_FROM[1]
    order = (["spectral"] if pays else []) + (["fused"] if small else []) + \
        (["quadrature", "pairwise"] if blas else ["pairwise", "quadrature"]) + ["spectral", "fused"]
    why = {"spectral": spectral, "fused": fused, "pairwise": pairwise_refusal(att), "quadrature": None}
    return {name: why[name] for name in dict.fromkeys(order)}
