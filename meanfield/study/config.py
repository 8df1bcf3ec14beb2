"""Study files: the TOML schema, its validation, and dotted-key overrides.

A study file names the domain, the grid, the model, the initial condition, the
output times, the particle systems and the distances to compute. Reading it
gives a plain nested ``dict`` with every default filled in (JSON-serialisable,
stored in the results file so a run can be repeated). Anything not in the
schema, or of the wrong type, or out of range, raises :class:`StudyError`
naming the key, e.g. ``[model] beta: must be >= 0, got -1``.

The reference of every key is :data:`SCHEMA` (and README, "Study file reference", whose tables are
:func:`reference_markdown`). Nothing here asks which domain or model a study has: the domains' choices,
their grid keys, dimensions and initial laws are the domain's own attributes
(:class:`meanfield.domains.Domain`: ``grid_parameters``, ``check_dimension``, ``initial_laws``, ...), and
the [model] section is generated from the model registry (:mod:`meanfield.models.registry`) whenever it
is read, so a kind registered later is a study kind at once.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import domains
from ..models import ACTIVATIONS, SPLITTINGS, registry
from ..models.feedforward import DEFAULT_ACTIVATION
from ..models.normalization import NORMALIZATIONS

__all__ = ["StudyError", "SCHEMA", "Key", "read", "read_raw", "validate", "override", "parse_over", "to_json",
           "reference_markdown"]

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
#: [output] dpi's default and range: 150 dpi draws the smallest text (7 pt) 15 pixels high on screen (110, the
#: default before, 11); print asks for 300
DEFAULT_DPI, MIN_DPI, MAX_DPI = 150, 50, 1200


class StudyError(ValueError):
    """A study file that cannot be run: the message names the key and the problem."""


class _CausalGrid(ValueError):
    """The sequence domain refused the dimension of a causal study with a [grid] (:func:`validate` words it)."""


_REQUIRED = object()


@dataclass(frozen=True)
class Key:
    """One key of the schema: its type, default and range."""

    kind: str  # "str", "int", "float", "bool", "floats", "ints", "matrix", "vectors", "bounds", "shape", "path"
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
        "domain": Key("str", _REQUIRED, "where the tokens live", choices=DOMAINS),
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
                        "sphere; default 1e-10, meanfield.monitor.ResolutionMonitor)", positive=True),
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
                     "fold D_f(β) of the model's kind (SA/USA, V = cI) with β_* (meanfield.transitions; variables "
                     "diagram_critical, diagram_fold on 'beta')", positive=True),
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
_MODEL = {
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
    "normalization": Key("str", "post", "where the tokens are normalised (meanfield.models.Normalization, docs/MATH.md "
                         "§10; self-attention on the sphere, non-causal, attention alone): post (post-LN, tokens on "
                         "S^{d-1}; every density solver's model); pre (ẋ = A), peri (ẋ = A/|A|) and mix (post-LN "
                         "before [model] switch, pre-LN after) carry a radius, tokens x = rθ started at r = 1; ngpt "
                         "(θ̇ = αP_θA/|A|, needs [model] alpha). Other than post: particles only (a [grid] density is "
                         "refused with the solvers' reason)", choices=NORMALIZATIONS),
    "alpha": Key("float", None, "normalization = 'ngpt': nGPT's α > 0, the speed of the direction (required there, "
                 "refused elsewhere)", positive=True),
    "switch": Key("float", None, "normalization = 'mix': the depth t_0 where post-LN hands over to pre-LN (required "
                  "there, refused elsewhere)"),
}

#: The arrays of a [model] weights file, and their shapes without the layer axis (d the dimension, m free).
WEIGHT_ARRAYS = {"Q": ("d", "d"), "K": ("d", "d"), "V": ("d", "d"), "beta": (), "W": ("d", "m"), "A": ("m", "d"),
                 "b": ("m",), "depths": ()}


def layer_weights(path, d: int) -> dict:
    """The arrays of a [model] weights file, checked: each with or without a leading layer axis (one length L for
    all), d×d matrices, W/A/b chaining through one hidden width m, depths positive; returns name → array and
    ``"layers"`` → L (1 where nothing is per layer)."""
    import numpy as np

    where = "[model] weights"
    try:
        with np.load(path) as data:
            arrays = {k: np.array(data[k], dtype=float) for k in data}
    except Exception as exc:  # noqa: BLE001 -- any unreadable file: report it and why, in one line
        raise StudyError(f"{where}: cannot read {str(path)!r}: {exc}") from None
    unknown = set(arrays) - set(WEIGHT_ARRAYS)
    if unknown:
        raise StudyError(f"{where}: unknown arrays {', '.join(sorted(unknown))} in {str(path)!r} "
                         f"(it may hold {', '.join(WEIGHT_ARRAYS)})")
    if not arrays.keys() - {"depths"}:
        raise StudyError(f"{where}: {str(path)!r} holds no weights")
    lengths, m = set(), None
    for name, a in arrays.items():
        if not np.all(np.isfinite(a)):
            raise StudyError(f"{where}: array {name} has non-finite entries")
        rank = len(WEIGHT_ARRAYS[name])
        if a.ndim == rank + 1 and name != "depths" or name == "depths" and a.ndim == 1:
            lengths.add(a.shape[0])
            shape = a.shape[1:]
        elif a.ndim == rank:
            shape = a.shape
        else:
            raise StudyError(f"{where}: array {name} must have {rank} or {rank + 1} axes (with the layer axis), got "
                             f"shape {a.shape}")
        for size, symbol in zip(shape, WEIGHT_ARRAYS[name]):
            if symbol == "d" and size != d:
                raise StudyError(f"{where}: array {name} of shape {a.shape} does not act on dimension {d}")
            if symbol == "m":
                if m not in (None, size):
                    raise StudyError(f"{where}: W, A and b must share one hidden width m, got {m} and {size} "
                                     f"(array {name}, shape {a.shape})")
                m = size
    if len(lengths) > 1:
        raise StudyError(f"{where}: the per-layer arrays have different numbers of layers: {sorted(lengths)}")
    if ("W" in arrays) != ("A" in arrays) or "b" in arrays and "W" not in arrays:
        raise StudyError(f"{where}: a feed-forward block needs both W and A (b optional)")
    if "depths" in arrays and np.any(arrays["depths"] <= 0):
        raise StudyError(f"{where}: depths must be positive, got {arrays['depths']}")
    arrays["layers"] = lengths.pop() if lengths else 1
    return arrays


def _show(value) -> str:
    """A default as a study file writes it (true, 1, "rk4", [4.0])."""
    return json.dumps(value)


def _parameter_key(p: registry.Parameter) -> Key:
    """The schema key of one kind's parameter, with that kind's type and range."""
    return Key(p.type, None, p.doc, minimum=p.minimum, positive=p.positive)


def _model_keys() -> dict[str, Key]:
    """The [model] section from the registry: ``kind`` (the study kinds), then every parameter of some kind
    (default None: the chosen kind's default is filled in at validation), then the matrices and heads."""
    order = list(dict.fromkeys(d.manifold for d in domains.DOMAINS))  # the domains' order, then any other
    kinds = sorted(registry.kinds(study=True), key=lambda k: order.index(k.manifold) if k.manifold in order
                   else len(order))
    by_domain = "; ".join(
        f"{', '.join(d.name for d in domains.DOMAINS if d.manifold == manifold) or manifold}: "
        + ", ".join(k.name for k in kinds if k.manifold == manifold)
        for manifold in dict.fromkeys(k.manifold for k in kinds))
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
            groups.setdefault((p.doc, _show(p.default)), []).append(k.name)
        doc = "; ".join(f"{', '.join(names)}: {text} (default {default})" for (text, default), names in groups.items())
        minima = [p.minimum for _, p in owners]
        out[name] = Key(types.pop(), None, doc,  # the loosest range here; the chosen kind's own at validation
                        minimum=None if None in minima else min(minima),
                        positive=all(p.positive for _, p in owners))
    clash = set(out) & set(_MODEL)
    if clash:
        raise TypeError(f"a model kind's parameter shadows the [model] key(s) {', '.join(sorted(clash))}.")
    return out | _MODEL


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


def _where(section: str, key: str) -> str:
    return f"[{section}] {key}" if section else key


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(v, where, key: Key):
    if not _is_number(v):
        raise StudyError(f"{where}: must be a number, got {v!r}")
    v = float(v)
    if not math.isfinite(v):
        raise StudyError(f"{where}: must be finite, got {v!r}")
    if key.positive and not v > 0:
        raise StudyError(f"{where}: must be > 0, got {v:g}")
    if key.minimum is not None and v < key.minimum:
        raise StudyError(f"{where}: must be >= {key.minimum:g}, got {v:g}")
    return v


def _integer(v, where, key: Key):
    if isinstance(v, bool) or not isinstance(v, int):
        raise StudyError(f"{where}: must be an integer, got {v!r}")
    if key.minimum is not None and v < key.minimum:
        raise StudyError(f"{where}: must be >= {key.minimum:g}, got {v}")
    return v


def _rows(v, where):
    if not isinstance(v, list) or not v or not all(isinstance(r, list) and r for r in v):
        raise StudyError(f"{where}: must be a non-empty array of arrays of numbers, got {v!r}")
    for r in v:
        for x in r:
            if not _is_number(x) or not math.isfinite(x):
                raise StudyError(f"{where}: entries must be finite numbers, got {x!r}")
    if len({len(r) for r in v}) != 1:
        raise StudyError(f"{where}: rows must have equal lengths, got {[len(r) for r in v]}")
    return [[float(x) for x in r] for r in v]


def _check_value(v, where: str, key: Key):
    k = key.kind
    if k == "str":
        if not isinstance(v, str):
            raise StudyError(f"{where}: must be a string, got {v!r}")
        if key.choices and v not in key.choices:
            raise StudyError(f"{where}: must be one of {', '.join(key.choices)}; got {v!r}")
        return v
    if k == "path":
        if not isinstance(v, str) or not v:
            raise StudyError(f"{where}: must be a path (a non-empty string), got {v!r}")
        return v
    if k == "bool":
        if not isinstance(v, bool):
            raise StudyError(f"{where}: must be true or false, got {v!r}")
        return v
    if k == "int":
        return _integer(v, where, key)
    if k == "float":
        return _number(v, where, key)
    if k in ("floats", "ints"):
        items = v if isinstance(v, list) else [v]
        check = _integer if k == "ints" else _number
        return [check(x, where, key) for x in items]
    if k == "matrix":
        if isinstance(v, str):
            if v not in ("identity", "random"):
                raise StudyError(f"{where}: must be a number, a d×d array, 'identity' or 'random'; got {v!r}")
            return v
        if _is_number(v):
            return _number(v, where, Key("float"))
        m = _rows(v, where)
        if len(m) != len(m[0]):
            raise StudyError(f"{where}: must be a square d×d matrix, got shape {len(m)}×{len(m[0])}")
        return m
    if k == "vectors":
        if isinstance(v, list) and v and all(_is_number(x) for x in v):
            v = [v]
        return _rows(v, where)
    if k == "bounds":
        b = _rows(v if (isinstance(v, list) and v and isinstance(v[0], list)) else [v], where)
        if len(b[0]) != 2 or len(b) not in (1, 2) or any(lo >= hi for lo, hi in b):
            raise StudyError(f"{where}: must be [[a, b]] or [[a1, b1], [a2, b2]] with a < b, got {v!r}")
        return b
    if k == "shape":
        items = v if isinstance(v, list) else [v]
        return [_integer(x, where, Key("int", minimum=4)) for x in items]
    raise AssertionError(k)  # pragma: no cover


def _check_keys(raw: dict) -> dict:
    """Types and ranges of every key, unknown keys refused; defaults filled."""
    if not isinstance(raw, dict):
        raise StudyError(f"a study must be a table of keys, got {type(raw).__name__}")
    sections = {s for s in SCHEMA if s}
    out: dict = {}
    raw = {k: v for k, v in raw.items() if not (k in sections and v is None)}  # None: a section left out
    for name, value in raw.items():
        if name in sections:
            if not isinstance(value, dict):
                raise StudyError(f"[{name}]: must be a table, got {value!r}")
        elif name not in SCHEMA[""]:
            known = ", ".join(sorted(set(SCHEMA[""]) | sections))
            raise StudyError(f"{name}: unknown key (the top level knows {known})")
    for section, keys in SCHEMA.items():
        given = raw if not section else raw.get(section, {})
        if section:
            for name in given:
                if name not in keys:
                    raise StudyError(f"[{section}] {name}: unknown key ([{section}] knows {', '.join(keys)})")
        table = {}
        for name, key in keys.items():
            where = _where(section, name)
            if given.get(name) is not None:  # None (dicts only; TOML has no null) means "not given"
                table[name] = _check_value(given[name], where, key)
            elif key.default is _REQUIRED:
                raise StudyError(f"{where}: missing (one of {', '.join(key.choices)})")
            else:
                table[name] = copy.deepcopy(key.default)
        if section:
            out[section] = table
        else:
            out.update(table)
    return out


def _matrix_size(m):
    return len(m) if isinstance(m, list) else None


def _check_model(m: dict, dom, d: int) -> None:
    """[model] in place: the kind (default the domain's first, :func:`registry.default_kind`) must move the
    domain's manifold; its parameters get its defaults and ranges, other kinds' parameters are refused; the
    matrices must be d×d."""
    kind = registry.get(m["kind"]) if m["kind"] is not None else registry.default_kind(dom.manifold)
    if kind.manifold != dom.manifold:
        fits = ", ".join(k.name for k in registry.kinds(dom.manifold, study=True))
        raise StudyError(f"[model] kind: {kind.name!r} moves points of the {kind.manifold} manifold but domain "
                         f"{dom.name!r} is on the {dom.manifold} manifold (use {fits})")
    m["kind"] = kind.name
    own = {p.name: p for p in kind.parameters}
    for key in SCHEMA["model"]:
        if key in _MODEL or key == "kind":
            continue
        if key in own:
            p = own[key]
            m[key] = copy.deepcopy(p.default) if m[key] is None else _check_value(m[key], f"[model] {key}",
                                                                                   _parameter_key(p))
        elif m[key] is not None:
            takes = ", ".join(own) or "no parameters"
            raise StudyError(f"[model] {key}: does not apply to kind {kind.name!r} (it takes {takes})")
    for key in ("Q", "K", "V"):
        size = _matrix_size(m[key])
        if size is not None and size != d:
            raise StudyError(f"[model] {key}: must be {d}×{d} for dimension {d}, got {size}×{size}")
    if m["weights"] is not None:
        arrays = layer_weights(m["weights"], d)
        given = [k for k in ("Q", "K", "V") if k in arrays and m[k] is not None]
        if given:
            raise StudyError(f"[model] {', '.join(given)}: given both here and in [model] weights; keep one")
        if m["heads"] != 1:
            raise StudyError("[model] heads: a weights file holds one head per layer (heads = 1)")
        if "beta" in arrays and "beta" not in {p.name for p in registry.get(m["kind"]).parameters}:
            raise StudyError(f"[model] weights: kind {m['kind']!r} takes no beta")
        if m["splitting"] != "sum" and "W" not in arrays:
            raise StudyError(f"[model] splitting: {m['splitting']!r} alternates attention and a feed-forward block; "
                             "[model] weights holds no W, A")
    elif m["splitting"] != "sum":
        raise StudyError(f"[model] splitting: {m['splitting']!r} needs a feed-forward block (W, A in [model] weights)")
    _check_normalization(m, kind, d)


def _check_normalization(m: dict, kind, d: int) -> None:
    """[model] normalization, alpha and switch (meanfield.models.Normalization's rules, named by key and value):
    alpha belongs to 'ngpt' and switch to 'mix', each required there; a variant other than 'post' normalises
    non-causal self-attention on the sphere, alone (no feed-forward block); Mix-LN takes no noise (its tokens change
    space at t_0: particles.simulate refuses it)."""
    norm = m["normalization"]
    for key, owner, what in (("alpha", "ngpt", "nGPT's α > 0, the speed of the direction"),
                             ("switch", "mix", "Mix-LN's depth t_0 where post-LN hands over to pre-LN")):
        if norm == owner and m[key] is None:
            raise StudyError(f"[model] {key}: missing (normalization = {owner!r} needs {what})")
        if norm != owner and m[key] is not None:
            raise StudyError(f"[model] {key}: belongs to normalization = {owner!r} ({what}); normalization = "
                             f"{norm!r} takes none, got {m[key]:g}")
    if norm == "post":
        return
    if kind.manifold != "sphere":
        raise StudyError(f"[model] normalization: {norm!r} normalises the tokens of self-attention on the sphere; "
                         f"kind {kind.name!r} moves points of R^d (use normalization = 'post')")
    if m.get("causal"):
        raise StudyError(f"[model] normalization: {norm!r} takes non-causal heads, got [model] causal = true")
    if m["weights"] is not None and "W" in layer_weights(m["weights"], d):
        raise StudyError(f"[model] normalization: {norm!r} with a feed-forward block ([model] weights holds W, A) "
                         "is not implemented (docs/MATH.md §10 states the variants for the attention block)")
    if norm == "mix" and m.get("noise"):
        raise StudyError(f"[model] noise: normalization = 'mix' changes the tokens' space at t_0 = {m['switch']:g} "
                         f"(unit vectors before, points of R^d after): noise across it is not defined, got "
                         f"noise = {m['noise']:g}")


def validate(raw: dict, base: str | Path | None = None, name: str | None = None) -> dict:
    """Check a study (a dict as read from TOML) and return it with every default filled in.

    Parameters
    ----------
    raw : dict
        The study's tables.
    base : path, optional
        Directory against which a relative [initial] path is resolved; default
        the working directory. A relative [output] path is taken from the
        working directory (results go where the command runs).
    name : str, optional
        Default for the ``name`` key.

    Raises
    ------
    StudyError
        Naming the first key that is unknown, of the wrong type or out of range.
    """
    cfg = _check_keys(raw)
    base = Path.cwd() if base is None else Path(base)
    cfg["name"] = cfg["name"] or name or "study"
    dom = tokens = domains.get(cfg["domain"])  # the tokens' domain, and the study's: [0, 1] × it where causal
    m, g, ini, tm, pt = cfg["model"], cfg["grid"], cfg["initial"], cfg["time"], cfg["particles"]
    causal = bool(m.get("causal"))
    if causal:
        if dom.positions is None:
            raise StudyError(f"[model] causal: tokens with positions are studied on the circle or the sphere, not on "
                             f"the {dom.name} (in R^d causal attention is the masked kind, not in study files)")
        dom = domains.get(dom.positions)
    where = f"domain {dom.name!r}"
    has_grid = raw.get("grid") is not None  # a section given (None: left out, as in a checked study)
    has_particles = raw.get("particles") is not None
    if has_particles and pt["n"] is None:
        raise StudyError("[particles] n: missing (the particle numbers N, e.g. n = [100, 1000])")

    # --- dimension: the domain's rule; a box's intervals give d where its grids take bounds (R^d)
    d = cfg["dimension"]
    if "bounds" in dom.grid_parameters and g["bounds"] is not None:
        if d not in (None, len(g["bounds"])):
            raise StudyError(f"dimension: {d} differs from the {len(g['bounds'])} intervals of [grid] bounds")
        d = len(g["bounds"])
    try:
        d = token_d = tokens.check_dimension(d, has_grid and not causal)
        if causal:  # a position and a token: 1 + d coordinates, on [0, 1] × S^{d-1}
            try:
                d = dom.check_dimension(1 + token_d, has_grid)
            except ValueError as exc:  # densities with positions: on [0, 1] × the circle only
                raise _CausalGrid(str(exc)) from None
            cfg["domain"] = dom.name
        cfg["dimension"] = d
    except _CausalGrid:  # say it in the study's words: the token domain, and the dimension only where given
        key = "domain" if cfg["dimension"] is None else "dimension"
        given = f"the {tokens.name}" if cfg["dimension"] is None else f"tokens of dimension {cfg['dimension']}"
        raise StudyError(f"{key}: densities of tokens with positions ([model] causal = true with a [grid]) are solved "
                         f"for tokens on the circle only (dimension 2), not for {given}: use domain = 'circle', or "
                         "drop [grid] to run particles only") from None
    except ValueError as exc:
        raise StudyError(f"dimension: {exc}") from None

    # --- grid: the keys the domain's grids take, those they need
    takes = dom.grid_parameters
    for key, value in g.items():
        if value is not None and key not in takes:
            raise StudyError(f"[grid] {key}: does not apply to {where} (it takes {', '.join(takes)})")
    if has_grid:
        need = tuple(key for key, required in takes.items() if required)
        for key in need:
            if g[key] is None:
                raise StudyError(f"[grid] {key}: missing ({where} needs {', '.join(need)})")
        if g["bounds"] is not None and g["shape"] is not None and len(g["shape"]) not in (1, len(g["bounds"])):
            raise StudyError(f"[grid] shape: one integer or one per dimension ({len(g['bounds'])}), got {g['shape']}")
    else:
        cfg["grid"] = None
    has_stationary = raw.get("stationary") is not None
    if not has_grid and not has_particles and not has_stationary:
        raise StudyError("the study computes nothing: give a [grid] (densities), [particles] n, or both")

    # --- model: a registered kind of the domain's manifold, its own parameters with its defaults
    if m["weights"] is not None:  # relative to the study file, as [initial] path
        p = Path(m["weights"])
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            raise StudyError(f"[model] weights: cannot read {str(p)!r} (no such file)")
        m["weights"] = str(p.resolve())
    _check_model(m, tokens, token_d)
    if has_stationary and m["normalization"] != "post":
        raise StudyError(f"[model] normalization: a [stationary] study lists the stationary states of post-LN "
                         f"densities; normalization = {m['normalization']!r} has none here (run its particles without "
                         "[stationary])")

    # --- initial condition: a law the domain defines
    laws = tuple(dom.initial_laws) + ("file",)
    ik = ini["kind"] = ini["kind"] or (DEFAULT_INITIAL if DEFAULT_INITIAL in dom.initial_laws
                                       else next(iter(dom.initial_laws), "file"))
    if ik not in laws:
        raise StudyError(f"[initial] kind: {ik} is not a law on the {dom.name} (it takes {', '.join(laws)})")
    if not has_grid and ik in GRID_LAWS:
        raise StudyError(f"[initial] kind: {ik!r} needs a [grid] to sample particles from")
    if ini["twist"] and not (ik in ("uniform-noise", "von-mises-fisher") and dom.has_positions):
        raise StudyError("[initial] twist: turns the law along the tokens' positions: it needs kind = "
                         "'uniform-noise' or 'von-mises-fisher' and [model] causal = true")
    if ik == "von-mises-fisher":
        if (ini["centres"] is None) == (ini["angles"] is None):
            raise StudyError("[initial] centres: give the mean directions as centres (or angles on the circle)")
        if ini["angles"] is not None:
            if not (tokens.periodic and tokens.intrinsic_dimension(token_d) == 1):  # the circle: an angle is a point
                raise StudyError(f"[initial] angles: mean angles are points of a periodic domain of dimension 1 "
                                 f"(the circle), not of the {dom.name}; give centres")
            ini["centres"] = [[math.cos(a), math.sin(a)] for a in ini["angles"]]
            ini["angles"] = None
        c = ini["centres"]
        if len(c[0]) != token_d:  # the tokens' (without their positions)
            raise StudyError(f"[initial] centres: vectors must have {token_d} components, got {len(c[0])}")
        for row in c:
            norm = math.sqrt(sum(x * x for x in row))
            if norm == 0:
                raise StudyError("[initial] centres: a zero vector has no direction")
            row[:] = [x / norm for x in row]
        for key in ("kappa", "weights"):
            if ini[key] is not None and len(ini[key]) not in (1, len(c)):
                raise StudyError(f"[initial] {key}: one value or one per centre ({len(c)}), got {len(ini[key])}")
        if ini["weights"] is not None and not sum(ini["weights"]) > 0:
            raise StudyError("[initial] weights: must not all be zero")
    if ik == "poisson":
        a = ini["a"]
        if a is None or len(a) != d:
            raise StudyError(f"[initial] a: the Poisson kernel needs a point a with {d} components, got {a!r}")
        if not sum(x * x for x in a) < 1.0:
            raise StudyError(f"[initial] a: must lie inside the unit ball (|a| < 1), got {a}")
    if ik == "gaussian":
        if ini["mean"] is None:
            ini["mean"] = [0.0] * d
        if len(ini["mean"]) != d:
            raise StudyError(f"[initial] mean: must have {d} components, got {len(ini['mean'])}")
        cov = 0.1 if ini["cov"] is None else ini["cov"]
        if isinstance(cov, str):
            raise StudyError(f"[initial] cov: must be a number or a {d}×{d} array, got {cov!r}")
        if isinstance(cov, list) and len(cov) != d:
            raise StudyError(f"[initial] cov: must be {d}×{d}, got {len(cov)}×{len(cov)}")
        ini["cov"] = cov
    if ik == "file":
        if ini["path"] is None:
            raise StudyError("[initial] path: missing (kind 'file' reads the initial density from it)")
        p = Path(ini["path"])
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            raise StudyError(f"[initial] path: cannot read {str(p)!r} (no such file)")
        ini["path"] = str(p.resolve())

    # --- times
    if tm["t_eval"] is not None:
        te = tm["t_eval"]
        if len(te) < 2 or te[0] != 0.0 or any(b <= a for a, b in itertools.pairwise(te)):
            raise StudyError(f"[time] t_eval: must increase strictly from 0 with at least two times, got {te}")
        tm["t_end"], tm["frames"] = te[-1], len(te)
    else:
        tm["t_eval"] = [tm["t_end"] * i / (tm["frames"] - 1) for i in range(tm["frames"])]
    if tm["refine"] and dom.default_max_n is None:  # the domain says whether its grids refine
        raise StudyError(f"[time] refine: the grids of {where} are not refined (finite volumes); use a finer [grid]")
    if tm["dt"] is not None and tm["method"] in ("rk45", "dop853"):
        raise StudyError(f"[time] dt: fixes the step of rk4/ssprk3, not of {tm['method']!r}")
    if tm["lagrangian_nodes"] == "grid" and tm["representation"] != "lagrangian":
        raise StudyError(f"[time] lagrangian_nodes: 'grid' (the grid's nodes as fixed characteristics) needs "
                         f"representation = 'lagrangian', got {tm['representation']!r}")

    # --- particles and distances
    if not has_particles:
        cfg["particles"] = None
    else:
        if len(set(pt["n"])) != len(pt["n"]):
            raise StudyError(f"[particles] n: the particle numbers must differ, got {pt['n']}")
        for key in ("dt", "dt_factor"):
            if pt[key] is not None and pt["method"] != "rk4":
                raise StudyError(f"[particles] {key}: sets the step of rk4, not of {pt['method']!r}")
        if pt["dt"] is not None and pt["dt_factor"] is not None:
            raise StudyError("[particles] dt_factor: give dt or dt_factor, not both")
        noisy = "[model] noise" if m.get("noise") else "[stationary] noise" if has_stationary else None
        if noisy and pt["method"] != "rk4":  # particles.simulate's rule, named here by the key
            raise StudyError(f"[particles] method: noisy particles ({noisy}) are advanced by a splitting scheme with "
                             f"fixed steps, method = 'rk4'; got {pt['method']!r}")
    if cfg["distances"]["p"] and not (has_grid and has_particles):
        raise StudyError("[distances] p: distances compare a density with particles: give [grid] and [particles] n")
    st = cfg["stationary"]
    if not has_stationary:
        cfg["stationary"] = None
    else:
        if st["noise"] is None:
            raise StudyError("[stationary] noise: missing (the noise strengths D of the bifurcation study)")
        if cfg["distances"]["p"]:
            raise StudyError("[distances] p: a [stationary] study runs no density to compare the particles with")
        if not st["r_max"] < 1:
            raise StudyError(f"[stationary] r_max: must be < 1 (the order parameter of a point mass), got {st['r_max']}")
        if not st["average"] <= 1:
            raise StudyError(f"[stationary] average: a fraction of the output times, <= 1, got {st['average']}")
        if any(b <= a for a, b in zip(st["betas"], st["betas"][1:])):
            raise StudyError(f"[stationary] betas: must increase, got {st['betas']}")
        if not dom.bounded:
            raise StudyError(f"[stationary]: stationary states are computed on the circle and the sphere, not on "
                             f"{where}")

    # --- output
    out = cfg["output"]
    if out["dpi"] > MAX_DPI:
        raise StudyError(f"[output] dpi: at most {MAX_DPI} (300 is print quality), got {out['dpi']}")
    p = Path(out["path"] or f"{cfg['name']}.nc")
    out["path"] = str(p if p.is_absolute() else Path.cwd() / p)  # results go where the command runs
    if not (Path(out["path"]).parent.is_dir()):
        raise StudyError(f"[output] path: the directory of {out['path']!r} does not exist")
    return cfg


def read(source) -> dict:
    """Read and check a study: a path to a TOML file, or a dict of its tables.

    Relative paths inside a file are resolved against the file's directory.
    """
    raw, base, name = read_raw(source)
    try:
        return validate(raw, base=base, name=name)
    except StudyError as exc:
        if isinstance(source, dict):
            raise
        raise StudyError(f"{source}: {exc}") from None


def read_raw(source) -> tuple[dict, Path | None, str | None]:
    """The study's tables as written (no defaults), the directory of its paths, its name."""
    if isinstance(source, dict):
        return copy.deepcopy(source), None, None
    path = Path(source)
    try:
        text = path.read_text()
    except OSError as exc:
        raise StudyError(f"cannot read the study file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{path}: not valid TOML: {exc}") from None
    return raw, path.resolve().parent, path.stem


# ----------------------------------------------------------------- overrides
_SHORT = {"beta": "model.beta", "n": "particles.n", "d": "dimension", "repeats": "particles.repeats",
          "lmax": "grid.lmax", "seed": "seed", "t_end": "time.t_end", "noise": "model.noise"}


def resolve_key(name: str) -> tuple[str, str]:
    """(section, key) for a dotted or short name (beta, n, d, seed, lmax, repeats, t_end)."""
    dotted = _SHORT.get(name, name)
    section, _, key = dotted.rpartition(".")
    if section not in SCHEMA or key not in SCHEMA[section] or section == "" and key == "domain":
        raise StudyError(f"--over {name}: not a key that can be swept (try beta, n, d, seed, or section.key)")
    return section, key


def parse_over(spec: str) -> tuple[str, list]:
    """``key=start:stop:num`` (num values, both ends included), ``key=a,b,c`` or ``key=a``.

    Returns the dotted key and the list of values, typed by the schema.
    """
    name, eq, values = spec.partition("=")
    if not eq or not values:
        raise StudyError(f"--over {spec!r}: expected key=start:stop:num or key=a,b,c")
    section, key = resolve_key(name.strip())
    kind = SCHEMA[section][key].kind
    integer = kind in ("int", "ints")
    try:
        if ":" in values:
            start, stop, num = values.split(":")
            num = int(num)
            if num < 1:
                raise ValueError
            a, b = float(start), float(stop)
            vals = [a + (b - a) * i / (num - 1) for i in range(num)] if num > 1 else [a]
            if integer:
                vals = sorted({round(v) for v in vals})
        else:
            vals = [int(v) if integer else float(v) for v in values.split(",")]
    except ValueError:
        raise StudyError(f"--over {spec!r}: cannot read the values {values!r} "
                         f"({'integers' if integer else 'numbers'}, start:stop:num or a,b,c)") from None
    if len(set(vals)) != len(vals):
        raise StudyError(f"--over {spec!r}: repeated values")
    return (f"{section}.{key}" if section else key), vals


def override(raw: dict, dotted: str, value) -> dict:
    """A copy of the raw study tables with one key replaced (before validation)."""
    out = copy.deepcopy(raw)
    section, _, key = dotted.rpartition(".")
    table = out.setdefault(section, {}) if section else out
    table[key] = value
    return out


def to_json(cfg: dict) -> str:
    return json.dumps(cfg, sort_keys=True)


# ----------------------------------------------------------------- the reference
_TYPES = {"str": "string", "path": "string", "bool": "boolean", "int": "integer", "float": "number",
          "floats": "number or array", "ints": "integer or array", "matrix": "number, array or string",
          "vectors": "array of arrays", "bounds": "array of [a, b]", "shape": "integer or array"}


def _cell(text: str) -> str:
    """Text in a Markdown table cell (a bar would end the cell)."""
    return text.replace("|", "\\|")


def reference_markdown() -> str:
    """The README's "Study file reference" tables, one per section, generated from :data:`SCHEMA` (the [model]
    keys from the model registry): key, type (with its choices), default ("required", or — where none is
    filled in before validation) and meaning. tests/study/test_config.py checks that README.md holds this
    text, so a key that changes here and not there fails the tests."""
    out = []
    for section, keys in SCHEMA.items():
        out += [f"**[{section}]**" if section else "**top level**", "",
                "| key | type | default | meaning |", "|---|---|---|---|"]
        for name, key in keys.items():
            kind = _TYPES[key.kind] + (f": {', '.join(key.choices)}" if key.choices else "")
            default = "required" if key.default is _REQUIRED else "—" if key.default is None else _show(key.default)
            out.append(f"| `{name}` | {_cell(kind)} | {_cell(default)} | {_cell(key.doc)} |")
        out.append("")
    return "\n".join(out)
