r"""Particles through discrete layers: x ↦ N(x + h X[μ^n](x)) per layer (GLPR §2.1–2.2; :mod:`meanfield.solvers.depth`).

The continuous-depth flow (:func:`particles.simulate`) is the limit h → 0 of this map, at first order in h with
the constant of docs/MATH.md §8.3. A Transformer's normalisation other than post-LN has its own layer (pre-LN
x ↦ x + hA(N(x)), peri-LN x ↦ x + hN(A(N(x))), nGPT θ ↦ N(θ + hα(N(A) − θ)), Mix-LN post's then pre's; docs/MATH.md
§10), first order in h to its flow too; hardmax attention the map of Alcalde, Fantuzzi & Zuazua (MATH.md §11).
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from meanfield.core import checks
from meanfield.solvers import depth as layer_maps
from meanfield.models import as_model, at_context, heads
from meanfield.models.normalization import normalization_of
from meanfield.domains import SPHERE

from .system import Trajectory, domain_of, initial_points

__all__ = ["discrete_depth"]


def discrete_depth(model, x0, depth: float, layers: int, projection: str = "auto", weights=None, t0: float = 0.0,
                   rng=None, progress: bool = False, **old) -> Trajectory:
    r"""Push n tokens through ``layers`` layers of depth ``depth`` (:mod:`meanfield.solvers.depth`).

    Parameters
    ----------
    model : an attention model, a Transformer (split by Lie or Strang: its blocks pushed in turn), a FeedForward
        Layer k (from ``t0 + k·depth``) uses the model of its start: a schedule's layer k.
    x0 : array_like, shape (n, d), or tuple
        Unit vectors on the sphere, points of R^d, non-zero vectors x = rθ for pre-, peri- and Mix-LN (a Mix-LN
        stack that starts before t_0 normalises them: its first layers are post-LN's); or ``(density, n)`` drawn with
        ``rng``.
    depth : float
        h > 0 (hardmax attention: AFZ's γ <= 1).
    layers : int
        K >= 1.
    projection : {"auto", "sphere", "rms", "none"}
        The projection after each layer (``meanfield.solvers.depth.PROJECTIONS``; the keyword was ``normalization=``):
        x/|x| on the sphere ("auto" there), x/RMS(x) = √d x/|x| or nothing ("auto") in R^d. "auto" for a Transformer
        normalised otherwise than post-LN and for hardmax attention, whose layers are their own (module docstring).
    weights : array_like, shape (n,), optional
        Token weights (1/n by default).

    Returns
    -------
    Trajectory
        Positions after each layer, ``t = t0 + k·depth``, k = 0..K (``method`` "layers").
    """
    layer_maps.renamed("discrete_depth", old)
    model = as_model(model)
    heads(model)
    if model.noise:
        raise ValueError(f"`model` has noise = {model.noise:g}: the layer map is deterministic (noisy particles: "
                         "particles.simulate).")
    depth, layers = layer_maps.check_depth(depth, layers)
    norm = normalization_of(model)
    x = initial_points(x0, rng, domain_of(model, 3), norm.radial)  # R^d, tokens x = rθ, or unit vectors
    if norm.unit_until is not None and t0 < norm.unit_until:  # Mix-LN's post-LN layers first: the stream is normalised
        x = SPHERE.retract(x)
    if x.ndim != 2:
        raise ValueError(f"`x0` must have shape (n, d), got {x.shape}.")
    n, d = x.shape
    model = at_context(model, n)  # β_n for these n tokens (MATH.md §13): every layer sees the same n
    checks.matrices_act_on(model.dim, d, "the particles live in")
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"`weights` must be finite, non-negative, of shape ({n},).")
    out = [x]
    for k in tqdm(range(layers), disable=not progress, desc="layers"):
        x = layer_maps.steps(model, x, w, depth, projection, t0 + k * depth)
        if not np.all(np.isfinite(x)):
            raise FloatingPointError(f"the tokens became non-finite in layer {k} (t = {t0 + k * depth:g}).")
        out.append(x)
    return Trajectory(t=t0 + depth * np.arange(layers + 1), x=np.stack(out), nfev=layers * len(layer_maps.blocks(model, t0)),
                      nsteps=layers, method="layers", strategy="quadrature", field_error_bound=0.0,
                      domain=domain_of(model, d), weights=w, noise=0.0, normalization=norm)
