"""Reading a study file: each key checked against :data:`~meanfield.study.schema.SCHEMA`, the rules between keys,
and every default filled in.

A study file names the domain, the grid, the model, the initial condition, the
output times, the particle systems and the distances to compute. Reading it
gives a plain nested ``dict`` with every default filled in (JSON-serialisable,
stored in the results file so a run can be repeated: :func:`to_json`). Anything not in the
schema, or of the wrong type, or out of range, raises :class:`~meanfield.study.schema.StudyError`
naming the key, e.g. ``[model] beta: must be >= 0, got -1``.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import tomllib
from pathlib import Path

import numpy as np

from .. import domains
from ..models import registry
from ..models.normalization import Normalization, ParameterError, variant
from ..models.common_noise import GRID_TOL
from .schema import (
    COMMON_NOISE_DT, DEFAULT_INITIAL, GRID_LAWS, MAX_DPI, MODEL_KEYS, REQUIRED, SCHEMA, Key, StudyError, normalization_keys,
)
from .weights import layer_weights

__all__ = ["read", "read_raw", "validate", "to_json", "MAX_FRAMES"]

#: the most output times [time] frames may ask for (each is a stored frame; the list of times is built at once)
MAX_FRAMES = 10 ** 6


class _CausalGrid(ValueError):
    """The sequence domain refused the dimension of a causal study with a [grid] (:func:`validate` words it)."""


def _parameter_key(p: registry.Parameter) -> Key:
    """The schema key of one kind's parameter, with that kind's type and range."""
    return Key(p.type, None, p.doc, minimum=p.minimum, positive=p.positive)


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
    if k == "matrices":  # one d×d matrix, or an array of them
        stack = v if isinstance(v, list) and v and isinstance(v[0], list) and v[0] and isinstance(v[0][0], list) \
            else [v]
        out = [_rows(m, where) for m in stack]
        for m in out:
            if len(m) != len(m[0]):
                raise StudyError(f"{where}: must be square d×d matrices, got shape {len(m)}×{len(m[0])}")
        if len({len(m) for m in out}) != 1:
            raise StudyError(f"{where}: the matrices must have one size, got {[len(m) for m in out]}")
        return out
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
            elif key.default is REQUIRED:
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
    if not dom.moved_by(kind):
        fits = ", ".join(k.name for k in registry.kinds(dom.manifold, study=True))
        raise StudyError(f"[model] kind: {kind.name!r} moves points of the {kind.manifold} manifold but domain "
                         f"{dom.name!r} is on the {dom.manifold} manifold (use {fits})")
    m["kind"] = kind.name
    own = {p.name: p for p in kind.parameters}
    for key in SCHEMA["model"]:
        if key in MODEL_KEYS or key == "kind" or key in normalization_keys():
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
    """[model] normalization and its variant's parameters, by the variant's own rules (its class in
    meanfield.models.normalization checks them — each parameter belongs to its variant and is required there where it
    has no default —, named here by key and value); a variant other than post-LN normalises non-causal self-attention
    on the sphere, alone (no feed-forward block), and takes noise where it defines it (its ``noise_refusal``: Mix-LN's
    tokens change space at t_0, which particles.simulate refuses too)."""
    name = m["normalization"]
    given = {key: m[key] for key in normalization_keys() if key != "normalization"}
    try:
        norm = Normalization(name, **given)
    except ParameterError as exc:
        raise StudyError(f"[model] {exc.parameter}: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise StudyError(f"[model] normalization: {exc}") from None
    if norm.heads_field:
        return
    if not domains.SPHERE.moved_by(kind):  # the variants normalise tokens on the unit sphere
        raise StudyError(f"[model] normalization: {name!r} normalises the tokens of self-attention on the sphere; "
                         f"kind {kind.name!r} moves points of R^d (use normalization = 'post')")
    if m.get("causal"):
        raise StudyError(f"[model] normalization: {name!r} takes non-causal heads, got [model] causal = true")
    if m["weights"] is not None and "W" in layer_weights(m["weights"], d):
        raise StudyError(f"[model] normalization: {name!r} with a feed-forward block ([model] weights holds W, A) "
                         "is not implemented (docs/MATH.md §10 states the variants for the attention block)")
    why = norm.noise_refusal()
    if why is not None and m.get("noise"):
        raise StudyError(f"[model] noise: {why}, got noise = {m['noise']:g}")


def _check_repulsion(m: dict, dom, d: int, solves: bool) -> None:
    """β < 0 (repulsive attention, MATH.md §13; [model] beta, or a layer's beta in [model] weights) where a density is
    solved: refused with the domain's own reason (:attr:`meanfield.domains.Domain.repulsion_refusal`: the circle's
    grid takes it, for SA and USA; the others' spectral sums and bounds assume β >= 0). Particles on spheres take any
    real β; a [stationary] study's linearisation says its own reason when it is built."""
    if not solves or dom.repulsion_refusal is None:
        return
    values = [] if m.get("beta") is None else [m["beta"]]
    if m["weights"] is not None:
        values += [float(b) for b in np.ravel(layer_weights(m["weights"], d).get("beta", []))]
    negative = [b for b in values if b < 0]
    if negative:
        raise StudyError(f"[model] beta: {negative[0]:g} < 0 (repulsive attention) with a [grid] on domain {dom.name!r}: "
                         f"{dom.repulsion_refusal} (drop [grid] to run the particles alone)")


def _check_common_noise(cfg: dict, raw: dict, d: int) -> None:
    """[common_noise] in place (None where the study has none): its kind, its matrices d×d (``d`` the tokens'
    dimension), the path's step ``dt`` (default filled: the largest h <= :data:`COMMON_NOISE_DT` dividing the equal
    output steps) with every output time on its grid, and the rules of the split scheme that particles and densities
    share (fixed RK4 steps for the particles; no [stationary] study). What the domain and the grid take (tokens on
    spheres; grids with a linear transport) their own objects say when the study is built
    (:func:`meanfield.study.build.common_noise`)."""
    cn = cfg["common_noise"]
    if raw.get("common_noise") is None:
        cfg["common_noise"] = None
        return
    kind = cn["kind"] = cn["kind"] or ("matrices" if cn["matrices"] is not None else "rotation")
    if kind == "matrices" and cn["matrices"] is None:
        raise StudyError("[common_noise] matrices: missing (kind 'matrices' takes the d×d matrices Σ_k)")
    if kind != "matrices" and cn["matrices"] is not None:
        raise StudyError(f"[common_noise] matrices: given with kind {kind!r}, whose matrices are its own; use kind = "
                         "'matrices'")
    if cn["matrices"] is not None and len(cn["matrices"][0]) != d:
        size = len(cn["matrices"][0])
        raise StudyError(f"[common_noise] matrices: must be {d}×{d} (the tokens' dimension), got {size}×{size}")
    if cfg["stationary"] is not None:
        raise StudyError("[common_noise]: a [stationary] study lists stationary states of the deterministic equation; "
                         "a common noise has none (drop one of the two tables)")
    pt, tm = cfg["particles"], cfg["time"]
    if pt is not None and pt["method"] != "rk4":
        raise StudyError(f"[particles] method: particles under a common noise are advanced by the split scheme on the "
                         f"path's grid with fixed steps, method = 'rk4'; got {pt['method']!r}")
    t_eval = tm["t_eval"]
    if cn["dt"] is None:
        steps = [b - a for a, b in itertools.pairwise(t_eval)]
        if (raw.get("time") or {}).get("t_eval") is not None and max(steps) - min(steps) > 1e-12 * t_eval[-1]:
            raise StudyError("[common_noise] dt: missing (the common path's step; with unequal [time] t_eval every "
                             "output time must be a multiple of it)")
        step = t_eval[-1] / (len(t_eval) - 1)
        cn["dt"] = step / math.ceil(step / COMMON_NOISE_DT - 1e-9)
    h = cn["dt"]
    off = [t for t in t_eval if abs(t / h - round(t / h)) > GRID_TOL * max(1.0, t / h)]
    if off:
        raise StudyError(f"[common_noise] dt: every output time must be a multiple of the path's step {h:g} (the "
                         f"density and the particles are moved on its grid), got the time(s) {off[:3]}")


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
    _check_repulsion(m, dom, token_d, has_grid and not has_stationary)
    if has_stationary and not variant(m["normalization"]).heads_field:
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
        if tm["frames"] > MAX_FRAMES:  # before the list of times is built (2^40 of them would exhaust the memory)
            raise StudyError(f"[time] frames: at most {MAX_FRAMES} output times (each a stored frame), got "
                             f"{tm['frames']}")
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

    _check_common_noise(cfg, raw, token_d)

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


def to_json(cfg: dict) -> str:
    """A checked study as the results file stores it (JSON, keys sorted)."""
    return json.dumps(cfg, sort_keys=True)
