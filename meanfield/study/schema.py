"""The study-file schema: every key a study file may hold, by section, with its type, default and range.

:data:`SCHEMA` is the reference of every key (and the documentation site's "Study file reference", whose tables
are :func:`meanfield.study.reference.reference_markdown`). Nothing here asks which domain or model a study has: the
domains' choices, their grid keys, dimensions and initial laws are the domain's own attributes
(:class:`meanfield.domains.Domain`: ``grid_parameters``, ``check_dimension``, ``initial_laws``, ...), and the
[model] section is generated from the model registry (:mod:`meanfield.models.registry`) whenever it is read, so a
kind registered later is a study kind at once. Checking a study against it is :mod:`meanfield.study.reading`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import domains
from ..models import ACTIVATIONS, SPLITTINGS, registry
from ..models.feedforward import DEFAULT_ACTIVATION
from ..models import normalization as variants

__all__ = ["StudyError", "SCHEMA", "Key", "REQUIRED", "MODEL_KEYS", "normalization_keys", "show_default", "DOMAINS", "INITIAL_KINDS",
           "DEFAULT_INITIAL", "GRID_LAWS", "METHODS", "PARTICLE_METHODS", "FIGURE_FORMATS", "DEFAULT_DPI",
           "MIN_DPI", "MAX_DPI", "COMMON_NOISE_KINDS", "COMMON_NOISE_DT"]

DOMAINS = tuple(d.name for d in domains.DOMAINS)
#: Every initial law of some domain (its ``initial_laws``), and values read from a file on any grid.
INITIAL_KINDS = tuple(dict.fromkeys(law for d in domains.DOMAINS for law in d.initial_laws)) + ("file",)
#: The initial law a study gets by default where its domain has it (else the domain's first law).
DEFAULT_INITIAL = "uniform-noise"
#: Laws given by their values on a grid: a particles-only study cannot sample them.
GRID_LAWS = ("uniform-noise", "file")
METHODS = ("rk4", "ssprk3", "rk45", "dop853")
PARTICLE_METHODS = ("rk4", "rk45", "dop853")
#: The figures' file formats ([output] format, ``--format``): raster PNG, or vector PDF and SVG for print.
FIGURE_FORMATS = ("png", "pdf", "svg")
#: [common_noise] kind: the matrices Σ_k of a common noise (MATH.md §13)
COMMON_NOISE_KINDS = ("rotation", "matrices")
#: [common_noise] dt's default: the largest path step h <= this that divides the output steps
COMMON_NOISE_DT = 0.01
#: [output] dpi's default and range: 150 dpi draws the smallest text (7 pt) 15 pixels high on screen (110, the
#: default before, 11); print asks for 300
DEFAULT_DPI, MIN_DPI, MAX_DPI = 150, 50, 1200


class StudyError(ValueError):
    """A study file that cannot be run: the message names the key and the problem."""


#: The default of a key that a study must give (no default is filled in).
REQUIRED = object()


@dataclass(frozen=True)
class Key:
    """One key of the schema: its type, default and range."""

    kind: str  # "str", "int", "float", "bool", "floats", "ints", "matrix", "matrices", "vectors", "bounds", "shape",
    # "path"
    default: Any = None
    doc: str = ""
    choices: tuple | None = None
    minimum: float | None = None  # inclusive
    positive: bool = False  # strictly > 0


def _grid_key(name: str, key: Key) -> Key:
    """A [grid] key documented with the domains that take it (their ``grid_parameters``)."""
    takes = [f"{d.name}{' (required)' if d.grid_parameters[name] else ''}" for d in domains.DOMAINS
             if name in d.grid_parameters]
    return Key(key.kind, key.default, f"{', '.join(takes)}: {key.doc}", key.choices, key.minimum, key.positive)


#: The [grid] keys: a domain's ``grid_parameters`` name those it takes (and which it needs).
_GRID = {
    "n": Key("int", None, "number of nodes", minimum=4),
    "lmax": Key("int", None, "spherical-harmonic degree", minimum=2),
    "backend": Key("str", None, "transform library", choices=("ducc0", "pyshtools", "shtns")),
    "bounds": Key("bounds", None, "[[a1, b1]] or [[a1, b1], [a2, b2]] (the dimension is their number)"),
    "shape": Key("shape", None, "cells per dimension (an integer or one per dimension)"),
    "positions": Key("int", None, "rows s_k = k/(positions − 1) of the [0, 1] × S¹ grid (default 33)", minimum=2),
}

_SECTIONS: dict[str, dict[str, Key]] = {
    "": {
        "name": Key("str", None, "label of the study (default: the file name)"),
        "domain": Key("str", REQUIRED, "where the tokens live", choices=DOMAINS),
        "dimension": Key("int", None, "ambient dimension d (circle 2; sphere 3, or more for particles only; "
                         "zonal: S^{d-1} for any d >= 2, required, densities up to d = 316; euclidean: from [grid] "
                         "bounds, else 2)", minimum=1),
        "seed": Key("int", 0, "seed of every random draw (initial noise, random matrices, particles)", minimum=0),
    },
    "model": {},  # generated from the model registry (:func:`_model_keys`)
    "grid": {name: _grid_key(name, key) for name, key in _GRID.items()},
    "initial": {
        "kind": Key("str", None, f"the initial law (default {DEFAULT_INITIAL} where the domain has it, else its "
                    "first: gaussian in R^d); the domains' laws: "
                    + "; ".join(f"{d.name}: {', '.join(d.initial_laws)}" for d in domains.DOMAINS)
                    + "; file on any grid", choices=INITIAL_KINDS),
        "amplitude": Key("float", 0.05, "uniform-noise: size of the perturbation (< 1 keeps it positive)", minimum=0.0),
        "modes": Key("int", 6, "uniform-noise: Fourier modes (circle) or bumps (sphere)", minimum=1),
        "twist": Key("float", 0.0, "uniform-noise and von-mises-fisher with [model] causal = true: turns of the law "
                     "along the positions (the law at s turned by 2π·twist·s in the first two coordinates; 0: the "
                     "same at every s)"),
        "centres": Key("vectors", None, "von-mises-fisher: mean directions (normalised), one row each"),
        "angles": Key("floats", None, "von-mises-fisher on the circle: mean angles, instead of centres"),
        "kappa": Key("floats", [4.0], "von-mises-fisher: concentrations κ >= 0 (one, or one per centre)", minimum=0.0),
        "weights": Key("floats", None, "von-mises-fisher: mixture weights (default equal; normalised)", minimum=0.0),
        "a": Key("floats", None, "poisson: the point a (|a| < 1) of the Poisson kernel / Möbius family"),
        "mean": Key("floats", None, "gaussian: mean (default 0)"),
        "cov": Key("matrix", None, "gaussian: covariance (a number times I, or d×d; default 0.1 I)"),
        "path": Key("path", None, "file: .npz with an array 'values' on the study grid, or a results .nc "
                    "(its last density)"),
    },
    "time": {
        "t_end": Key("float", 1.0, "final time", positive=True),
        "frames": Key("int", 11, "number of equally spaced output times in [0, t_end]", minimum=2),
        "t_eval": Key("floats", None, "explicit output times (instead of frames), increasing from 0", minimum=0.0),
        "method": Key("str", None, "density integrator (default rk4; ssprk3 in R^d)", choices=METHODS),
        "dt": Key("float", None, "fixed step of rk4/ssprk3 (default: CFL step)", positive=True),
        "refine": Key("bool", None, "refine the grid when resolution is lost (default meanfield.solve's: true on the "
                      "circle and S², false in R^d)"),
        "max_n": Key("int", None, "cap of refinement on n (circle) or lmax (sphere): refinement doubles the "
                     "resolution, so it stops at the largest n·2^k (lmax·2^k) <= max_n (lmax 24 with max_n = 128 "
                     "reaches 96; `meanfield check` says what is reachable)", minimum=4),
        "representation": Key("str", None, "the chain of representations (meanfield.solve's representation): auto "
                              "(default) grid → panels → nodes for zonal models on the circle and S², else the grid "
                              "alone; grid: stop where the grid's cap is reached; lagrangian: panels → nodes (or "
                              "nodes) from t = 0; panels, nodes: that one alone",
                              choices=("grid", "auto", "lagrangian", "panels", "nodes")),
        "lagrangian_tol": Key("float", None, "the Lagrangian panels' moment tolerance (meanfield.solve's "
                              "lagrangian_tol, default 1e-14 on the circle, 1e-10 on S²): a run stops rather than let the moments err by "
                              "more than 1e3 × it", positive=True),
        "lagrangian_nodes": Key("str", None, "the Lagrangian measure's characteristics with representation = "
                                "'lagrangian': panels (adaptive Gauss panels, the default for zonal models on the circle "
                                "and S²) or grid (the grid's nodes, fixed: a weighted-particle system whose cluster "
                                "masses agree to a few 1e-4 at 5·10³–4·10⁴ nodes, without a clean order, for runs through separatrices on "
                                "S², where panels refine without end)", choices=("panels", "grid")),
        "tail_tol": Key("float", None, "resolution monitor: largest spectral tail of a resolved density (circle, "
                        "sphere; default 1e-10, meanfield.integrate.monitor.ResolutionMonitor)", positive=True),
        "neg_tol": Key("float", None, "resolution monitor: most negative value, relative to the mean (default 1e-8)",
                       positive=True),
        "energy_rtol": Key("float", None, "resolution monitor: relative round-off allowed in the monotone energy "
                           "(default 1e-10)", positive=True),
        "rtol": Key("float", None, "relative tolerance of the adaptive steps (default meanfield.solve's, 1e-10)",
                    positive=True),
        "atol": Key("float", None, "absolute tolerance of the adaptive steps (default meanfield.solve's, 1e-12)",
                    positive=True),
        "max_points": Key("int", None, "the Lagrangian panels' most points before the chain goes on with fixed nodes "
                          "(default meanfield.solve's: 2^20 on the circle, 2^16 on S²)", minimum=1),
    },
    "particles": {
        "n": Key("ints", None, "particle numbers N (one or several; no particles when absent)", minimum=1),
        "repeats": Key("int", 1, "independent realisations per N", minimum=1),
        "method": Key("str", "rk4", "particle integrator", choices=PARTICLE_METHODS),
        "dt": Key("float", None, "largest rk4 step (default dt_factor / rate scale)", positive=True),
        "dt_factor": Key("float", None, "rk4 step dt_factor / rate_scale(model), e.g. c/(1 + β) for SA "
                         "(default 0.05; see meanfield.models.rate_scale)", positive=True),
        "delta": Key("float", 1e-3, "clustering tolerance: pairs with ⟨x_i, x_j⟩ >= 1 − δ", positive=True),
        "save_positions": Key("bool", True, "store the trajectories (variables positions_N)"),
    },
    "distances": {
        "p": Key("floats", [], "orders of W_p(density, particles) at every output time (needs [grid] "
                 "and [particles])", minimum=1.0),
    },
    "stationary": {
        "noise": Key("floats", None, "noise strengths D at which the stationary states are listed and the "
                     "particles ([particles], from [initial], to [time] t_end) are run (a bifurcation study: zonal "
                     "models on the circle or the sphere; no density solve, [grid] is where stability is "
                     "checked)", positive=True),
        "points": Key("int", 100, "points of the single-cluster branch, equally spaced in the order parameter r",
                      minimum=4),
        "r_max": Key("float", 0.95, "the branch is followed to this order parameter", positive=True),
        "average": Key("float", 0.5, "the particles' order parameter is averaged over this last fraction of the "
                       "output times", positive=True),
        "betas": Key("floats", [], "a transition diagram over these β (increasing): D_c(β) and the single-cluster "
                     "fold D_f(β) of the model's kind (SA/USA, V = cI) with β_* (meanfield.solvers.transitions; variables "
                     "diagram_critical, diagram_fold on 'beta')", positive=True),
    },
    "common_noise": {
        "kind": Key("str", None, "the matrices Σ_k of the common noise Σ_k P_x(Σ_k x) ∘ dW^k (MATH.md §13): rotation "
                    "(σ(e_a e_bᵀ − e_b e_aᵀ), one per coordinate plane a < b of the tokens: σJ on S¹, a Brownian "
                    "rotation on S^{d-1}), or matrices (given; default where [common_noise] matrices is given, else "
                    "rotation)", choices=COMMON_NOISE_KINDS),
        "sigma": Key("float", 1.0, "the noise's strength σ >= 0 (rotation: the matrices' scale; matrices: their "
                     "factor); 0 is no common noise (the study's results unchanged, bit for bit)", minimum=0.0),
        "matrices": Key("matrices", None, "matrices: the d×d matrices Σ_k (one, or an array of them), d the tokens' "
                        "dimension"),
        "seed": Key("int", None, "seed of the common path W (default: stream 6 of the top-level seed); a given seed s "
                    "is CommonPath(m, dt, t_end, seed=s) of the Python API", minimum=0),
        "dt": Key("float", None, "step h of the common path, on whose grid t_j = jh the density and every particle "
                  "system are moved (every output time a multiple of it; default: the largest h <= 0.01 that divides "
                  "the equal output steps of [time] frames; required with [time] t_eval)", positive=True),
    },
    "output": {
        "path": Key("path", None, "results file (.nc or .zarr), relative to the working directory; "
                    "default <name>.nc"),
        "plot": Key("bool", False, "write the figures next to the results file"),
        "animation": Key("str", None, "also write an animation: 'gif' or 'mp4'", choices=("gif", "mp4")),
        "format": Key("str", "png", "the figures' file format: 'png', or vector 'pdf' or 'svg' for print "
                      "(`--format` replaces it)", choices=FIGURE_FORMATS),
        "dpi": Key("int", DEFAULT_DPI, f"resolution of PNG figures, of the images inside vector ones (dense "
                   f"scatters) and of the animation, dots per inch, {MIN_DPI} to {MAX_DPI} (`--dpi` replaces it)",
                   minimum=MIN_DPI),
    },
}

#: The [model] keys every kind has (the matrices and heads); a kind's own parameters come from the registry.
MODEL_KEYS = {
    "Q": Key("matrix", None, "query matrix: a number (times I), a d×d array, 'identity' or 'random'"),
    "K": Key("matrix", None, "key matrix, as Q"),
    "V": Key("matrix", None, "value matrix, as Q"),
    "heads": Key("int", 1, "number of heads; with 'random' matrices each head draws its own", minimum=1),
    "random_scale": Key("float", 1.0, "entries of 'random' matrices are N(0, random_scale²/d)", positive=True),
    "seed": Key("int", None, "seed of the 'random' matrices (default: the top-level seed), so the "
                "particles' seed can change with the model fixed", minimum=0),
    "weights": Key("path", None, "per-layer weights, as a trained network's (relative to the study file): an .npz "
                   "with any of Q, K, V (layers×d×d, or d×d for all layers), beta (layers), the feed-forward "
                   "block's W (layers×d×m), A (layers×m×d), b (layers×m), and depths (one per layer, or one for "
                   "all; default 1); replaces [model] Q, K, V"),
    "activation": Key("str", DEFAULT_ACTIVATION, "the feed-forward block's σ (with W and A in [model] weights)",
                      choices=tuple(ACTIVATIONS)),
    "splitting": Key("str", "sum", "attention and feed-forward per layer: 'sum' (their continuous-depth limit), "
                     "'lie' (GLPR (2.8)) or 'strang'", choices=SPLITTINGS),
}


def show_default(value) -> str:
    """A default as a study file writes it (true, 1, "rk4", [4.0])."""
    return json.dumps(value)


def _model_keys() -> dict[str, Key]:
    """The [model] section from the registry: ``kind`` (the study kinds), then every parameter of some kind
    (default None: the chosen kind's default is filled in at validation), then the matrices and heads."""
    names = [d.name for d in domains.DOMAINS]
    kinds = registry.kinds(study=True)
    moves = {k.name: tuple(d.name for d in domains.DOMAINS if d.moved_by(k)) or (k.manifold,) for k in kinds}
    kinds = sorted(kinds, key=lambda k: names.index(moves[k.name][0]) if moves[k.name][0] in names  # domains' order
                   else len(names))
    by_domain = "; ".join(f"{', '.join(group)}: " + ", ".join(k.name for k in kinds if moves[k.name] == group)
                          for group in dict.fromkeys(moves[k.name] for k in kinds))
    out = {"kind": Key("str", None, f"the attention model (default: the domain's first). {by_domain}. "
                       + "; ".join(f"{k.name}: {k.doc}" for k in kinds), choices=tuple(k.name for k in kinds))}
    params: dict[str, list] = {}
    for k in kinds:
        for p in k.parameters:
            params.setdefault(p.name, []).append((k, p))
    for name, owners in params.items():
        types = {p.type for _, p in owners}
        if len(types) > 1:
            raise TypeError(f"the model kinds {', '.join(k.name for k, _ in owners)} give [model] {name} different "
                            f"types ({', '.join(sorted(types))}); rename one parameter.")
        groups: dict[tuple, list] = {}  # kinds with the same meaning and default share one line
        for k, p in owners:
            groups.setdefault((p.doc, show_default(p.default)), []).append(k.name)
        doc = "; ".join(f"{', '.join(names)}: {text} (default {default})" for (text, default), names in groups.items())
        minima = [p.minimum for _, p in owners]
        out[name] = Key(types.pop(), None, doc,  # the loosest range here; the chosen kind's own at validation
                        minimum=None if None in minima else min(minima),
                        positive=all(p.positive for _, p in owners))
    norm = normalization_keys()
    clash = set(out) & (set(MODEL_KEYS) | set(norm))
    if clash:
        raise TypeError(f"a model kind's parameter shadows the [model] key(s) {', '.join(sorted(clash))}.")
    return out | MODEL_KEYS | norm


def normalization_keys() -> dict[str, Key]:
    """[model] normalization and its variants' parameters (by name), from the variants' table
    (:data:`meanfield.models.normalization.VARIANTS`, so that a variant registered later is a study value at once):
    each parameter belongs to its variant, required there where it has no default, refused elsewhere."""
    out = {"normalization": Key("str", "post", variants.study_doc(), choices=tuple(variants.VARIANTS))}
    owned = sorted(((p, v) for v in variants.VARIANTS.values() for p in v.parameters), key=lambda pv: pv[0].name)
    for p, v in owned:
        if p.name in out:
            raise TypeError(f"the normalisation variants' parameter {p.name!r} is given twice (by {v.name!r}); "
                            "rename one.")
        there = "required there" if p.default is None else f"default {show_default(p.default)} there"
        out[p.name] = Key(p.type, None, f"normalization = {v.name!r}: {p.doc} ({there}, refused elsewhere)",
                          minimum=p.minimum, positive=p.positive)
    return out


class _Schema(Mapping):
    """The schema, section → key → :class:`Key`: fixed sections, and [model] generated from the model registry
    each time it is read (:func:`_model_keys`)."""

    def __getitem__(self, section: str) -> dict[str, Key]:
        return _model_keys() if section == "model" else _SECTIONS[section]

    def __iter__(self):
        return iter(_SECTIONS)

    def __len__(self) -> int:
        return len(_SECTIONS)

    def __repr__(self) -> str:
        return f"<study schema: {', '.join(s or 'top level' for s in self)}>"


#: Every key of a study file, by section ("" the top level); [model] is generated from the model registry.
SCHEMA: Mapping[str, dict[str, Key]] = _Schema()
