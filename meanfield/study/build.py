r"""The objects a checked study describes: model, grid, initial density, initial particles.

Random draws use independent streams of one seed (NumPy ``SeedSequence``
entropy ``[seed, stream, ...]``): 1 the random matrices (``[model] seed`` when given), 2 the initial noise,
3 the particles (``[seed, 3, N]`` for N particles, all repeats drawn together), 4 their Brownian increments
(``[seed, 4, N]``, noisy models; ``[seed, 5, N, k]`` at the k-th noise of a [stationary] study),
so a study gives the same numbers wherever and in whatever order its parts run.

Everything here asks the study's domain (``domains.get(cfg["domain"])``) and the model registry
(:mod:`meanfield.models.registry`), never which domain or kind it has: the grid is the domain's
``make_grid``, the model the registered kind's ``build``, the laws those of :mod:`meanfield.laws`.

Initial laws (all normalised to mass 1; which a domain takes is its ``initial_laws``)
-------------------------------------------------------------------------------------
uniform           1/|S^{d-1}|.
uniform-noise     :func:`meanfield.laws.uniform_noise`: circle 1 + Σ_{k=1}^{m} a_k cos(kθ + φ_k),
                  a_k ~ U(½A, A), φ_k ~ U(0, 2π); sphere 1 + A Σ_{j=1}^{m} a_j e^{2(⟨x,u_j⟩ − 1)},
                  u_j uniform, a_j ~ U(½, 1).
von-mises-fisher  Σ_j w_j C_d(κ_j) e^{κ_j⟨x, c_j⟩}, C_d(κ) = κ^{d/2−1} / ((2π)^{d/2} I_{d/2−1}(κ))
                  (Mardia & Jupp, *Directional Statistics*, (9.3.4)); C_d(0) = 1/|S^{d-1}|.
poisson           :func:`meanfield.laws.poisson`, the Poisson kernel: wrapped Cauchy f_a on the circle,
                  the Möbius family p_a/|S^{d-1}| on the sphere (MATH.md §3, :mod:`meanfield.analysis.exact`);
                  sampled exactly without a grid (:func:`meanfield.laws.sample_poisson`).
gaussian          N(mean, cov) in R^d (cell values, :func:`meanfield.analysis.gaussian.gaussian_density`).
file              values on the study grid from an ``.npz`` (array ``values``) or the last density
                  of a results file.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

import particles

from .. import domains, laws
from ..density import Density
from ..domains.sequence import turn
from ..analysis.gaussian import gaussian_density
from ..core.io import load
from ..models import FeedForward, MultiHeadAttention, Transformer, layers, registry
from ..models.bounds import rate_scale_over
from ..models.normalization import Normalization, density_refusal
from ..integrate.monitor import ResolutionMonitor
from .config import WEIGHT_ARRAYS, StudyError, layer_weights
from .schema import normalization_keys

__all__ = ["build_model", "common_noise", "common_sigmas", "normalization", "build_grid", "build_monitor", "solve_options", "solver_error",
           "SOLVER_KEYS", "particle_step", "token_dimension", "initial_density", "initial_particles"]


def _stream(cfg, *keys) -> np.random.Generator:
    return np.random.default_rng([cfg["seed"], *keys])


# ------------------------------------------------------------------- model
def _matrix(spec, d, rng, scale):
    if spec is None or spec == "identity":
        return None
    if spec == "random":
        return rng.standard_normal((d, d)) * (scale / math.sqrt(d))
    if isinstance(spec, float):
        return spec * np.eye(d)
    return np.array(spec, dtype=float)


def token_dimension(cfg) -> int:
    """The dimension of the tokens, which the model's matrices act on: the study's ``dimension``, less the position
    coordinate where the tokens carry positions (causal studies, whose points (s, x) have 1 + d coordinates)."""
    return cfg["dimension"] - 1 if domains.get(cfg["domain"]).has_positions else cfg["dimension"]


def build_model(cfg):
    """The attention model of [model]: one head of the registered kind (``registry.get(kind).build``, with the
    kind's parameters as checked), or ``MultiHeadAttention`` of ``heads`` heads."""
    m, d = cfg["model"], token_dimension(cfg)  # the matrices act on the tokens, not on their positions
    rng = np.random.default_rng([cfg["seed"] if m["seed"] is None else m["seed"], 1])
    try:
        kind = registry.get(m["kind"])
    except ValueError as exc:
        raise StudyError(f"[model] kind: {exc}") from None
    parameters = {p.name: m[p.name] for p in kind.parameters}
    # the noise belongs to the dynamics: one head carries it, several heads leave it to MultiHeadAttention
    noise = parameters.pop("noise", None) if m["heads"] > 1 else None
    arrays = layer_weights(m["weights"], d) if m.get("weights") else {}
    if "beta" in arrays:
        parameters["beta"] = _layered(arrays, "beta", float)

    def head():
        Q, K, V = (_layered(arrays, k) if k in arrays else _matrix(m[k], d, rng, m["random_scale"])
                   for k in ("Q", "K", "V"))
        return kind.build(Q=Q, K=K, V=V, **parameters)

    try:
        heads = [head() for _ in range(m["heads"])]
        attention = heads[0] if len(heads) == 1 else MultiHeadAttention(tuple(heads), noise=noise or 0.0)
        norm = normalization(cfg)
        if not norm.heads_field:  # post-LN stays the bare attention (bit for bit today's model)
            return Transformer(attention, normalization=norm)
        if "W" not in arrays:
            return attention
        block = FeedForward(_layered(arrays, "W"), _layered(arrays, "A"), _layered(arrays, "b") if "b" in arrays
                            else None, m["activation"], kind.manifold)
        return Transformer(attention, block, m["splitting"],
                           depth=None if arrays["layers"] > 1 else float(np.ravel(arrays.get("depths", 1.0))[0]))
    except (ValueError, TypeError, OverflowError) as exc:
        raise StudyError(f"[model]: {exc}") from None


def normalization(cfg) -> Normalization:
    """The :class:`~meanfield.models.Normalization` of [model] normalization and its variant's parameters (nGPT's
    alpha, Mix-LN's switch, ...: :func:`meanfield.study.schema.normalization_keys`)."""
    m = cfg["model"]
    given = {key: m.get(key) for key in normalization_keys() if key != "normalization"}
    try:
        return Normalization(m.get("normalization", "post"), **given)
    except (ValueError, TypeError) as exc:
        raise StudyError(f"[model] normalization: {exc}") from None


def _layered(arrays, name, convert=np.asarray):
    """A [model] weights array as the model takes it: a schedule of its layers (:func:`meanfield.models.layers`,
    with the file's depths) where it has a layer axis, else the constant."""
    a = arrays[name]
    per_layer = a.ndim == len(WEIGHT_ARRAYS[name]) + 1
    if not per_layer:
        return convert(a)
    return layers([convert(v) for v in a], arrays.get("depths", 1.0))


# -------------------------------------------------------------------- grid
def build_grid(cfg):
    """The grid of [grid] (the domain's ``make_grid`` of its ``grid_parameters``), or None for a particles-only
    study."""
    g = cfg["grid"]
    if g is None:
        return None
    domain = domains.get(cfg["domain"])
    try:  # the dimension too: the zonal sphere's grids need it
        return domain.make_grid({key: g[key] for key in domain.grid_parameters} | {"dimension": cfg["dimension"]})
    except (ValueError, TypeError, ImportError) as exc:
        raise StudyError(f"[grid]: {exc}") from None
    except MemoryError:
        raise StudyError(f"[grid]: {g} is too large for this machine's memory") from None


# ------------------------------------------------------------ the solve
#: The [time] keys that are :func:`meanfield.solve`'s options of the same name (None: solve's default).
SOLVER_KEYS = ("method", "dt", "refine", "max_n", "rtol", "atol", "lagrangian_tol", "max_points")


def solve_options(cfg) -> dict:
    """The keyword arguments of :func:`meanfield.solve` (and :func:`meanfield.solvers.solve.prepare`) that the [time] table
    asks: ``representation`` ('nodes' where [time] lagrangian_nodes = 'grid': the grid's nodes as fixed
    characteristics), ``monitor`` (:func:`build_monitor`) and every :data:`SOLVER_KEYS` given (solve's own defaults
    where the study says nothing). ``meanfield check`` and ``meanfield run`` both hand these to solve."""
    tm = cfg["time"]
    representation = "nodes" if tm["lagrangian_nodes"] == "grid" else tm["representation"]
    return {"representation": representation, "monitor": build_monitor(cfg),
            **{k: tm[k] for k in SOLVER_KEYS if tm[k] is not None}}


def solver_error(exc: Exception, model=None) -> StudyError:
    """A refusal of :func:`meanfield.solve` as a study error naming the key it is about: solve's options are the
    [time] keys of the same names and its messages start with the argument's name ("[time] method: 'dop853' cannot
    step a noisy model ..."; ``monitor`` is [time] tail_tol, neg_tol, energy_rtol); its other refusals are about the
    model, the grid or the initial density ("[model]/[grid]/[initial]: USA on the circle with β = 800 ..."). ``model``: the study's; where
    solve refused it as a model no density solver takes (:func:`meanfield.models.normalization.density_refusal`: a
    normalisation other than post-LN), the error names [model] normalization, with the solvers' reason."""
    text = str(exc)
    why = density_refusal(model) if model is not None else None
    if why is not None:
        value = getattr(getattr(model, "normalization", None), "kind", "post")
        return StudyError(f"[model] normalization: {value!r} has no density solver for [grid] (drop [grid] to run "
                          f"its particles only): {why}")
    named = re.match(r"`(\w+)`\s*", text)
    key = named.group(1) if named else None
    if key in SOLVER_KEYS + ("representation",):
        return StudyError(f"[time] {key}: {text[named.end():]}")
    if key == "common_noise":
        return StudyError(f"[common_noise]: {text[named.end():]}")
    if key == "monitor":
        return StudyError(f"[time] tail_tol/neg_tol/energy_rtol (the resolution monitor): {text[named.end():]}")
    return StudyError(f"[model]/[grid]/[initial]: {text}")


# ------------------------------------------------------ the common noise
def common_sigmas(cfg) -> np.ndarray:
    """The matrices Σ_k of [common_noise], shape (m, d, d) with d the tokens' dimension: kind 'rotation' gives
    σ(e_a e_bᵀ − e_b e_aᵀ) for every coordinate plane a < b (σJ on the circle), kind 'matrices' σ times those given."""
    cn, d = cfg["common_noise"], token_dimension(cfg)
    sigma = cn["sigma"]
    if cn["kind"] == "rotation":
        out = []
        for a in range(d):
            for b in range(a + 1, d):
                S = np.zeros((d, d))
                S[b, a], S[a, b] = sigma, -sigma
                out.append(S)
        return np.array(out)
    return sigma * np.array(cn["matrices"], dtype=float)


def common_noise(cfg, grid=None):
    r"""The study's common noise (:class:`meanfield.models.common_noise.CommonNoise`: [common_noise]'s matrices,
    :func:`common_sigmas`, on one :class:`~meanfield.models.common_noise.CommonPath` of step [common_noise] dt over
    [0, t_end], seeded by [common_noise] seed or else stream 6 of the top-level seed), or None without a
    [common_noise] table. The one place a study reads it: the density's solve and every particle system get this
    object, so one realisation of the density and the N particles of every repeat ride the same path, and
    W_p(density, particles) is measured path by path (MATH.md §13).

    Raises
    ------
    StudyError
        Naming [common_noise], with the library's reason, where the study's particles are not unit vectors (R^d; the
        rows (s, x) of causal tokens) or its ``grid`` has no push-forward by a linear map (R^d, zonal, causal grids).
    """
    cn = cfg.get("common_noise")
    if cn is None:
        return None
    from ..models.common_noise import CommonNoise, CommonPath

    sigmas = common_sigmas(cfg)
    moved = cn["sigma"] > 0 and np.any(sigmas)  # σ = 0: no common noise, the results those without the table
    why = grid.linear_transport_refusal() if moved and grid is not None else None
    if why is not None:
        raise StudyError(f"[common_noise]: {why}")
    if sigmas.shape[0] == 0:
        raise StudyError(f"[common_noise] kind: 'rotation' turns the coordinate planes of the tokens; tokens of "
                         f"dimension {token_dimension(cfg)} have none")
    seed = [cfg["seed"], 6] if cn["seed"] is None else cn["seed"]
    try:
        noise = CommonNoise(sigmas, CommonPath(sigmas.shape[0], cn["dt"], cfg["time"]["t_eval"][-1], seed=seed))
        d = cfg["dimension"]
        why = noise.refusal(domains.get(cfg["domain"]).particle_domain(d), d) \
            if moved and cfg["particles"] is not None else None
    except ValueError as exc:  # the matrices' size (checked at reading: a safeguard)
        raise StudyError(f"[common_noise]: {exc}") from None
    if why is not None:
        raise StudyError(f"[common_noise]: {why}")
    return noise


# ------------------------------------------------------- the particles
def particle_step(cfg, model) -> float | None:
    """The largest RK4 step of the study's particles, as :func:`particles.simulate` takes it: [particles] dt, or
    dt_factor / the largest rate scale of ``model`` over [0, t_end] (:func:`meanfield.models.bounds.rate_scale_over`:
    over the layers of per-layer weights), or None where neither is given (simulate's default: 0.05 / that scale
    for unit vectors, 0.01 in R^d; adaptive methods choose their own). ``meanfield check`` and the run both ask it.

    Raises
    ------
    StudyError
        Naming the key, where the step cannot be formed: a model without a speed bound for every measure (R^d
        models) given dt_factor, or a rate scale that overflows (USA with a huge β) without [particles] dt.
    """
    pc = cfg["particles"]
    if pc["dt"] is not None or pc["method"] != "rk4":
        return pc["dt"]
    key = "dt_factor" if pc["dt_factor"] is not None else "dt"
    t_eval = cfg["time"]["t_eval"]
    scales = []

    def rate_scale() -> float:
        try:
            scales.append(rate_scale_over(model, t_eval[0], t_eval[-1]))
        except (ValueError, TypeError, OverflowError) as exc:  # R^d models have no speed bound for every measure
            raise StudyError(f"[particles] {key}: {exc}") from None
        return scales[-1]

    if pc["dt_factor"] is None:  # simulate's default: the domain's own rule, which reads the rate scale or not
        domains.get(cfg["domain"]).particle_domain(cfg["dimension"]).particle_step(rate_scale)
        if not scales:
            return None  # a fixed default (R^d)
    scale = scales[0] if scales else rate_scale()
    if not np.isfinite(scale):
        raise StudyError(f"[particles] dt: the rate scale of {' '.join(repr(model).split())} overflows (USA with a huge "
                         "β), so no step follows from it; give [particles] dt")
    return None if pc["dt_factor"] is None else pc["dt_factor"] / max(scale, 1e-300)


# --------------------------------------------------------- initial laws
def build_monitor(cfg) -> ResolutionMonitor | None:
    """The resolution monitor of [time] tail_tol, neg_tol, energy_rtol (its defaults where not given); None where
    none is given (solve's default)."""
    tm = cfg["time"]
    given = {k: tm[k] for k in ("tail_tol", "neg_tol", "energy_rtol") if tm[k] is not None}
    return ResolutionMonitor(**given) if given else None


def _from_file(grid, path):
    p = Path(path)
    try:
        if p.suffix == ".npz":
            with np.load(p) as data:
                if "values" not in data:
                    raise StudyError(f"[initial] path: {path!r} has no array 'values' (it has {', '.join(data)})")
                values = np.array(data["values"], dtype=float)
        else:
            ds = load(p)
            if "density" not in ds:
                raise StudyError(f"[initial] path: {path!r} holds no density")
            last = ds["density"].dropna("time", how="all")
            values = np.array(last.isel(time=-1).values, dtype=float)
    except StudyError:
        raise
    except Exception as exc:  # noqa: BLE001 -- any unreadable file: report it and why, in one line
        raise StudyError(f"[initial] path: cannot read {path!r}: {exc}") from None
    if values.shape != grid.shape:
        raise StudyError(f"[initial] path: values of shape {values.shape} do not fit the grid {grid!r} "
                         f"(shape {grid.shape})")
    bad = ~np.isfinite(values)
    if np.any(bad):
        where = np.argwhere(bad)[0]
        what = "'values'" if p.suffix == ".npz" else "the last density frame"
        raise StudyError(f"[initial] path: {what} of {str(p)!r} holds {int(np.sum(bad))} non-finite "
                         f"value(s) (NaN or inf; the first at index {tuple(int(i) for i in where)} of shape "
                         f"{values.shape}); an initial density must be finite")
    return values


def initial_density(cfg, grid) -> Density | None:
    """The initial density of [initial] on ``grid`` (mass 1), or None without a grid."""
    if grid is None:
        return None
    ini = cfg["initial"]
    kind = ini["kind"]
    try:
        if kind == "uniform":
            return Density.uniform(grid)
        if kind == "file":  # a bad file is named by _from_file; a law that is no density, here with its path
            values = _from_file(grid, ini["path"])
            try:
                return Density(grid, values).unit_mass()
            except (ValueError, TypeError) as exc:
                raise StudyError(f"[initial] path: {ini['path']!r}: {exc}") from None
        if kind == "uniform-noise":
            f = laws.uniform_noise(grid, ini["amplitude"], ini["modes"], _stream(cfg, 2), twist=ini["twist"])
        elif kind == "von-mises-fisher":
            f = lambda x: laws.von_mises_fisher(x, ini["centres"], ini["kappa"], ini["weights"])  # noqa: E731
            if grid.domain.has_positions:
                f = laws.along_positions(f, ini["twist"])
        elif kind == "poisson":
            f = laws.poisson(grid, ini["a"])
        else:
            return gaussian_density(grid, np.array(ini["mean"]), _covariance(ini["cov"], cfg["dimension"]))
        return Density.from_function(grid, f).unit_mass()
    except StudyError:  # already one line naming its key
        raise
    except (ValueError, TypeError) as exc:
        raise StudyError(f"[initial]: {exc}") from None


def _covariance(spec, d):
    return spec * np.eye(d) if isinstance(spec, float) else np.array(spec, dtype=float)


def initial_particles(cfg, density, n: int) -> np.ndarray:
    """``repeats`` iid draws of n initial particles, shape (repeats, n, d).

    From the grid density when there is one (exact for its interpolant, see
    :func:`particles.sample`), else from the law of [initial] directly.
    """
    rng = _stream(cfg, 3, n)
    R, d = cfg["particles"]["repeats"], cfg["dimension"]
    ini = cfg["initial"]
    if density is not None:
        return particles.sample(density, n, rng=rng, batch=R)
    kind = ini["kind"]
    if kind == "uniform" and domains.get(cfg["domain"]).has_positions:  # iid uniform positions and tokens
        y = particles.uniform_sphere(n, d - 1, rng=rng, batch=R)
        return np.concatenate([rng.uniform(size=y.shape[:-1] + (1,)), y], axis=-1)
    if kind == "uniform":
        return particles.uniform_sphere(n, d, rng=rng, batch=R)
    if kind == "gaussian":
        return rng.multivariate_normal(np.array(ini["mean"]), _covariance(ini["cov"], d), size=(R, n))
    if kind == "poisson":  # uniform draws pushed by the Möbius map (exact)
        return laws.sample_poisson(cfg["domain"], ini["a"], (R, n), rng)
    # von Mises–Fisher mixture: a component by weight, then scipy's exact sampler (Wood 1994)
    y = laws.sample_von_mises_fisher(n, ini["centres"], ini["kappa"], ini["weights"], rng=rng, batch=R)
    if not domains.get(cfg["domain"]).has_positions:
        return y
    s = rng.uniform(size=y.shape[:-1])  # iid uniform positions, each token's law turned by 2π·twist·s
    return np.concatenate([s[..., None], turn(y, 2.0 * np.pi * ini["twist"] * s)], axis=-1)
