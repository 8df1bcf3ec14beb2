"""Figures of a study's results Dataset (matplotlib only).

``write_figures(ds, path)`` writes every figure that applies next to the
results file: ``<stem>-density.png`` (circle and 1-D: space-time heat map, or
the profiles ρ(t_k, ·) where there are few output times; the zonal sphere's law of
the polar angle, after a collapse onto a pole the mass of each cell on an axis
logarithmic near it; sphere and 2-D: a full snapshot grid holding the first and
the last frame; particles overlaid),
``-energy.png``, ``-lagrangian.png`` (Lagrangian frames: the points coloured by
ρ, the cluster count and E_β, on one time axis), ``-wasserstein.png`` (titled with
what the distance is: on the zonal sphere W_p of the polar angles' laws, a lower
bound of W_p on S^{d−1}) and ``-rate.png`` (one panel per order p; the fit with its
95% band, the legend below the panel), ``-clusters.png`` (the particles' pair
fractions beside the density's own, :func:`density_pair_fraction`; of the directions θ = x/|x| where the tokens
carry a radius), ``-radius.png`` (pre-, peri-, Mix-LN: the radius law, mean and 10–90 % band of r), and for
sweeps ``-map.png`` (a heat map over the swept key and time, e.g. the clustering
phase diagram of GLPR Figure 3); an S² study also ``-density-column.png``, its
maps laid out for one column of a paper (3.5 in). Each ``plot_*`` function takes
the Dataset (and optionally an Axes) and returns the Axes or Figure.

Files: PNG, or vector PDF / SVG for print, at a resolution in dpi: the study's
[output] format and dpi, replaced by :func:`output_options` (the command line's
``--format``, ``--dpi``) and by ``write_figures``' own arguments
(:func:`figure_options`).

Conventions: titles are the model in its own words (its ``describe()``, stored by
the run as ``attrs['model_label']``) with its domain and grid (:func:`_title`),
never a repr; densities on the scales of
:func:`meanfield.domains.plotting.density_norm` with the scale in the colour-bar
label; every line and every ±1 sd band named in a legend, the band's swatch in its
own colour; layer boundaries drawn over the space-time maps; no text below 7 pt at
the figure's size, sub- and superscripts included (:func:`small_text` measures it):
a label carrying mathtext scripts is set at 10.5 pt (``SCRIPTED``), a smaller one
writes them out ('exponent −1/2', 'ℓmax'); mathtext for symbols; constrained
layout. The statistics of point sets come from :mod:`particles.clusters`.
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import numpy as np
from particles import clusters

from .. import domains
from ..core import interrupts
from ..domains.base import SUPERSCRIPT
from ..density import Density
from ..models import registry
from ..models.sphere import matrix_words, number_words
from ..models.normalization import VARIANTS
from ..domains.plotting import (
    ENERGY_LABEL, LAYOUTS, SCRIPTED, density_colormap, density_label, density_norm, for_norm, log_ticks,
    snapshot_frames,
)

__all__ = ["plot_density", "plot_snapshots", "plot_energy", "plot_lagrangian", "plot_wasserstein", "plot_rate",
           "plot_clusters", "plot_radius", "density_pair_fraction", "plot_sweep", "plot_overview", "animate", "plot_bifurcation",
           "write_figures", "output_options", "figure_options", "small_text"]

log = logging.getLogger("meanfield.study")


def _plt():
    import matplotlib.pyplot as plt  # the backend is the caller's (the command line uses Agg)

    return plt


def _overlay(ds, max_points: int = 200):
    """(N, positions (T, n, d) of at most ``max_points`` of its particles) of the smallest saved particle set,
    repeat 0, or None."""
    names = sorted((int(v[len("positions_"):]), v) for v in ds.data_vars if v.startswith("positions_"))
    if not names:
        return None
    n, name = names[0]
    x = ds[name].isel(repeat=0).values
    return n, x[:, :max_points]


def _particles_words(n: int, shown: int, every: int = 1) -> str:
    """'N = 256 particles, 200 drawn' / 'N = 100 particles' (cyan), with the output times drawn."""
    words = f"N = {n} particles" + (f", {shown} drawn" if shown < n else "")
    if every > 1:
        words += f" at every {_ordinal(every)} output time"
    return words + " (cyan)"


def _ordinal(k: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(k, f"{k}th")


# ------------------------------------------------------------------ titles in words
def _where(ds) -> str:
    """The domain in symbols (the Domain's ``symbol``: S¹, S², ℝ², [0, 1] × S¹), with [0, 1] × for a causal study."""
    name, d = ds.attrs.get("domain", ""), int(ds.attrs.get("dimension", 0) or 0)
    try:
        domain = domains.get(name)
    except (KeyError, ValueError):
        return name
    where = domain.symbol(d) if d else name
    causal = bool(_study(ds).get("model", {}).get("causal"))
    return f"[0, 1] × {where}" if causal and not where.startswith("[0, 1]") else where


def _matrix_words(value) -> str:
    """A [model] matrix in words, as the models write theirs (:func:`meanfield.models.sphere.matrix_words`: I, qI,
    [a, b; c, d], 'general d×d'), and 'random' (a string of the study file) as it is."""
    if isinstance(value, str):
        return "I" if value == "identity" else value
    return matrix_words(value)


def _model_words(ds) -> str:
    """The model in words and symbols, and where it moves points: 'SA, β = 4 on S¹', 'softmax attention, β = 1,
    Q = [0.5, 0.2; 0, 0.3] on ℝ²', '3-layer Transformer (SA with per-layer Q, K, V, β; a GELU feed-forward block)
    on S²'.

    The model's own words where the run stored them (``attrs['model_label']``, its ``describe()``); else — a
    sweep (its swept values written as a set or a range), 'random' matrices (named so, not as the numbers
    drawn), a model kind that does not describe itself, a file of before — words from the study's [model]
    table. Never the model's repr."""
    m = _study(ds).get("model", {})
    where = _where(ds)
    on = f" on {where}" if where else ""
    label = ds.attrs.get("model_label")
    swept = ds.attrs.get("sweep_dims", "").split()
    random = any(m.get(name) == "random" for name in ("Q", "K", "V"))
    if label and not swept and not random:
        return f"{label}{on}"
    if not m:  # neither the model's words nor its study: where it lives only
        return where
    parts = [registry.words(m.get("kind", registry.default_kind("sphere").name), m)]  # the kind's own words
    if m.get("causal"):
        parts[0] = "causal " + parts[0]
    for name, symbol in (("beta", "β"), ("tau", "τ"), ("b", "b"), ("noise", "noise D"), ("decay", "decay λ"),
                         ("rope", "RoPE ω"), ("rope_base", "RoPE base b")):
        if name in swept and name in getattr(ds, "coords", {}):
            values = [float(v) for v in np.asarray(ds[name].values).ravel()]
            parts.append(f"{symbol} ∈ {{{', '.join(number_words(v) for v in values)}}}" if len(values) <= 5 else
                         f"{symbol} from {number_words(min(values))} to {number_words(max(values))}")
        elif m.get(name) is not None and (name not in ("noise", "decay", "rope") or m[name]) and \
                not (m.get("weights") and name == "beta"):
            parts.append(f"{symbol} = {number_words(m[name])}")
    matrices = {name: _matrix_words(m.get(name)) for name in ("Q", "K", "V")}
    if "random" in matrices.values():
        names = [k for k, v in matrices.items() if v == "random"]
        parts.append(f"random {', '.join(names)} (scale {number_words(m.get('random_scale', 1.0))})")
        matrices = {k: v for k, v in matrices.items() if v != "random"}
    groups: dict[str, list] = {}
    for name, words in matrices.items():
        groups.setdefault(words, []).append(name)
    parts += [f"{' = '.join(names)} = {words}" for words, names in groups.items() if words != "I"]
    if int(m.get("heads") or 1) > 1:
        parts.append(f"{int(m['heads'])} heads")
    words = ", ".join(parts)
    if not m.get("weights"):
        return f"{words}{on}"
    layers = len(json.loads(ds.attrs.get("layer_boundaries", "[]"))) + 1
    split = {"lie": "; Lie splitting", "strang": "; Strang splitting"}.get(m.get("splitting"), "")
    return f"{f'{layers}-layer ' if layers > 1 else ''}Transformer ({words} with per-layer weights{split}){on}"


def _weights_words(ds) -> str:
    """'weights from layers.npz': the file of a study's per-layer weights ([model] weights), else ''."""
    weights = _study(ds).get("model", {}).get("weights")
    return f"weights from {Path(str(weights)).name}" if weights else ""


def _grid_words(ds) -> str:
    """The grid and its final resolution: 'grid n = 128 → 2048', 'grid ℓmax = 24 → 48', '96 × 96 cells on
    [−4, 4]²', or the Lagrangian representation it started from."""
    study = _study(ds)
    g = study.get("grid") or {}
    if not g or "resolution" not in ds.attrs:
        return "particles only" if not g else ""
    r0, r1 = ds.attrs.get("resolution"), ds.attrs.get("resolution_final", ds.attrs.get("resolution"))
    res = f"{r0}" if r0 == r1 else f"{r0} → {r1}"
    domain = domains.get(ds.attrs.get("domain"))
    if not domain.bounded:  # a box of cells in R^d
        bounds = g.get("bounds") or []
        shape = g.get("shape") or [r0]
        shape = list(shape) * (len(bounds) // len(shape)) if len(shape) < len(bounds) else list(shape)
        box = " × ".join(f"[{number_words(lo)}, {number_words(hi)}]" for lo, hi in bounds)
        if len(bounds) > 1 and all(b == bounds[0] for b in bounds):
            box = f"[{number_words(bounds[0][0])}, {number_words(bounds[0][1])}]" + \
                str(len(bounds)).translate(SUPERSCRIPT)
        words = f"{' × '.join(str(int(s)) for s in shape)} cells on {box}"
    elif domain.grid_type.resolution_name == "lmax":
        words = f"grid ℓmax = {res}"  # no subscript: a title's 8-pt script would print at 5.6 pt
    else:
        words = f"grid n = {res}"
    if g.get("positions"):
        words = f"{int(g['positions'])} positions × {words}"
    representation = ds.attrs.get("representation", "grid")
    if representation == "panels":
        words = f"Lagrangian panels from {words}"
    elif representation == "nodes":
        words = f"Lagrangian measure on the nodes of {words}"
    return words


def _title(ds, width: int = 95) -> str:
    """A figure title in words and symbols: the model, where it lives, its weights file, the grid with its final
    resolution ('SA, β = 4 on S¹ · grid n = 128 → 2048'), wrapped at ``width`` characters."""
    return _wrap([p for p in (_model_words(ds), _weights_words(ds), _grid_words(ds)) if p], width)


def _wrap(parts, width: int) -> str:
    """``parts`` joined by ' · ', a new line where a line would pass ``width`` characters: between two parts, else
    after a comma, colon or semicolon outside brackets, else after one inside them, else at a space outside them
    not beside '=', '→', '×' or '∈', else at any space (no line shorter than a third of ``width`` where a longer
    one can be had). A bracketed list or an equation stays on one line where it can: not 'Q, K,' / 'V, β', 'grid
    ℓmax =' / '100' or '[0.5, 0.2; 0,' / '0.3]'."""
    text = " · ".join(parts)
    width = max(int(width), 1)
    breaks = []  # (position of a space the line may end before, rank: lower is a better place)
    depth, math = 0, False
    for k, c in enumerate(text):
        depth += (c in "([{") - (c in ")]}")
        math ^= c == "$"
        if c == " " and k:
            before, after = text[k - 1], text[k + 1:k + 2]
            if math:  # inside $…$: a line of its own would print the dollars
                rank = 6
            elif before == "·":
                rank = 0
            elif before in ",:;":
                rank = 1 if depth == 0 else 2
            elif depth:
                rank = 5
            else:
                rank = 4 if {before, after} & set("=→×∈") else 3
            breaks.append((k, rank))
    lines, start = [], 0
    while start < len(text) and len(_visible(text[start:])) > width:
        fits = [(k, rank) for k, rank in breaks if k > start and len(_visible(text[start:k])) <= width]
        if not fits:  # one word longer than the line: break after it
            fits = [next(((k, r) for k, r in breaks if k > start), (len(text), 0))]
        late = [f for f in fits if len(_visible(text[start:f[0]])) >= width // 3] or fits
        k = min(late, key=lambda f: (f[1], -f[0]))[0]
        lines.append(text[start:k])
        start = k + 1
    return "\n".join(lines + [text[start:]] if text[start:] else lines)


def _visible(text: str) -> str:
    """``text`` roughly as long as it prints (mathtext commands dropped)."""
    import re

    return re.sub(r"\\[a-z]+|[${}_^]", "", text)


def _study(ds) -> dict:
    """The study's tables, as stored in the results file's attributes (empty where absent)."""
    import json

    return json.loads(ds.attrs.get("study", "{}"))


def _pi_ticks(axis) -> None:
    """Ticks at 0, π/2, π, 3π/2, 2π on an angle axis (``ax.xaxis`` or ``ax.yaxis``)."""
    axis.set_ticks(np.pi * np.array([0, 0.5, 1, 1.5, 2]), ["0", "π/2", "π", "3π/2", "2π"])


#: z-order of the layer lines: behind curves (0.5), or above a map's mesh and scatter (drawn at 1) and below its
#: legend (5) — at 0.5 a map hid them while its legend named them
_LAYER_Z = {False: 0.5, True: 2.5}


def _mark_layers(ax, ds, color="0.45", on_map: bool = False, axis: str = "x") -> None:
    """Dashed lines at the layer boundaries of a model with per-layer weights (``attrs['layer_boundaries']``, where
    the field jumps), across an axis of time (``axis``: "x", or "y" where time runs up a map); the first labelled
    for the legend. ``on_map``: thin lines drawn over a space-time map (its mesh or scatter), not behind it."""
    line = ax.axvline if axis == "x" else ax.axhline
    for k, t in enumerate(json.loads(ds.attrs.get("layer_boundaries", "[]"))):
        line(t, color=color, ls="--", lw=0.6 if on_map else 0.7, alpha=0.85 if on_map else 0.7,
             zorder=_LAYER_Z[on_map], gid="layer-boundary", label="layer boundaries" if k == 0 else None)


#: Size (points) of the refinement marks' words and values above a map, and the length and pad of their ticks
_MARK_SIZE, _MARK_TICK, _MARK_PAD = 7.0, 3.0, 1.0


def _mark_refinements(ax, ds) -> None:
    """Dotted white vertical lines at the times the grid was refined (the first labelled for the legend), the new
    resolution written on a second time axis above the plot (never clipped at its edge), the words 'grid refined to
    ℓmax =' on the same line just before the first value: 'grid refined to ℓmax = 96  192…768' reads as one line."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    refinements = json.loads(ds.attrs.get("refinements", "[]"))
    for k, (t, _, _) in enumerate(refinements):
        ax.axvline(t, color="w", ls=":", lw=0.9, alpha=0.9, label="grid refinements" if k == 0 else None)
    if refinements:
        # refinements closer than 6 % of the run share one label, "192…768" at the first (labels 0.01 apart overlap)
        times = ds["time"].values
        close = 0.06 * (float(times[-1] - times[0]) if times.size > 1 else 1.0)
        groups = []
        for t, _, new in refinements:
            if groups and t - groups[-1][0] < close:
                groups[-1][2] = int(new)
            else:
                groups.append([t, int(new), int(new)])
        values = [f"{a}" if a == b else f"{a}…{b}" for _, a, b in groups]
        top = ax.secondary_xaxis("top")
        top.set_xticks([g[0] for g in groups], values, fontsize=_MARK_SIZE)
        top.tick_params(length=_MARK_TICK, pad=_MARK_PAD)
        name = {"lmax": "ℓmax"}.get(domains.get(ds.attrs["domain"]).grid_type.resolution_name, "n")
        # The words end a space before the first value, on its line (the tick labels' offset above the axes, the
        # same font: the same bottom): centred over the map they read apart from values standing in its corner.
        half = TextToPath().get_text_width_height_descent(values[0], FontProperties(size=_MARK_SIZE), False)[0] / 2
        space = 0.5 * _MARK_SIZE
        at = blended_transform_factory(ax.transData, ax.transAxes) + ScaledTranslation(
            -(half + space) / 72, (_MARK_TICK + _MARK_PAD) / 72, ax.figure.dpi_scale_trans)
        top.set_xlabel(f"grid refined to {name} =", fontsize=_MARK_SIZE, ha="right", va="bottom")
        top.xaxis.set_label_coords(groups[0][0], 1.0, transform=at)


def _computed_frames(ds) -> np.ndarray:
    """Indices of the output times with a density (frames after a lost resolution are NaN)."""
    rho = ds["density"].values
    return np.flatnonzero(np.isfinite(rho).all(axis=tuple(range(1, rho.ndim))))


def _snapshot_frames(ds, max_panels: int = 9) -> tuple[np.ndarray, int]:
    """(frames, columns) of a snapshot grid: among the computed frames the first and the last, equally spaced
    where the output times allow, no empty panel (:func:`meanfield.domains.plotting.snapshot_frames`)."""
    valid = _computed_frames(ds)
    idx, ncols = snapshot_frames(ds["time"].values[valid], max_panels)
    return valid[idx], ncols


def _spatial_dims(ds):
    """The density's space dimensions (all but time), as its grid names them."""
    return list(ds["density"].dims[1:])


def _reference(domain) -> float | None:
    """The uniform density 1/volume of a compact domain (the reference of a density's colour scale), else None."""
    return 1.0 / domain.volume if domain.volume else None


def plot_density(ds, ax=None, cmap="magma", title: bool = True, max_columns: int = 24, max_points: int = 100,
                 profiles: int = 6):
    """Space-time heat map of ρ(t, θ) (circle) or ρ(t, x) (1-D), on a log scale where ρ reaches ten times the
    uniform density, with a labelled colour bar; particles overlaid as light dots at no more than ``max_columns``
    output times (at most ``max_points`` of them); grid refinements dotted with the new resolution above ('grid
    refined to ℓmax = 96…768', one line). The zonal sphere's Lagrangian frames on cells of the map's own
    (:func:`_lagrangian_law_cells`: after a collapse onto a pole, the mass of each cell on an axis logarithmic
    near it). With at most ``profiles`` output times, their profiles ρ(t_k, ·) instead (a heat map of a few
    columns is a row of blocks). With ``title``, the model's title above. Returns the Axes."""
    plt = _plt()
    dims = _spatial_dims(ds)
    if len(dims) != 1:
        raise ValueError(f"plot_density draws one space dimension; this density has {dims} (use plot_snapshots).")
    s = dims[0]
    domain = domains.get(ds.attrs["domain"])
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.4), layout="constrained")
    if _computed_frames(ds).size <= profiles:
        return _plot_profiles(ds, ax, domain, s, title)
    rho = ds["density"].transpose("time", s).values
    y = ds[s].values
    what = None
    d = int(ds.attrs.get("dimension", 0) or 0)
    coarse = _lagrangian_cells(ds, domain, y, rho)
    over = _overlay(ds, max_points)
    pos = None if over is None else np.reshape(domain.coordinates(over[1]), over[1].shape[:-1])  # θ, or x in R¹
    law = _lagrangian_law_cells(ds, domain, y, rho, d, points=pos) if coarse is None else None
    if coarse is not None:  # Lagrangian frames: cell averages over cells of several points each (no moiré)
        y, rho, what = coarse
    t = ds["time"].values
    edges = None
    if law is not None and "edges" in law:  # a collapse onto a pole: cell masses on a log axis of their own
        y, rho, what, edges = law["centres"], law["values"], law["what"], law["edges"]
        symbol, reference = law["symbol"], law["reference"]
    elif law is not None:  # the law of the coordinate on equal cells, already what the domain shows
        y, rho, what = law["centres"], law["values"], law["what"]
        symbol, reference = domain.shown(y, np.zeros_like(y), d)[1:]
    else:
        rho, symbol, reference = domain.shown(y, rho, d)
    if edges is None and domain.periodic:  # close the circle: θ = 2π (its length) is θ = 0
        y, rho = np.append(y, y[0] + domain.volume), np.hstack([rho, rho[:, :1]])
    elif edges is None and domain.bounded:  # the zonal sphere: the first and last rings' cells reach the poles
        y, rho = np.concatenate([[0.0], y, [np.pi]]), np.hstack([rho[:, :1], rho, rho[:, -1:]])
    norm = density_norm(rho, reference)
    style = {"cmap": density_colormap(cmap), "norm": norm}
    if edges is None:
        im = ax.pcolormesh(t, y, for_norm(rho.T, norm), shading="nearest", **style)
    else:  # the cells' own edges (halfway on a log axis is not halfway in θ); the times' as 'nearest' draws them
        im = ax.pcolormesh(_nearest_edges(t), edges, for_norm(rho.T, norm), shading="flat", **style)
    label = density_label(symbol, norm, what)
    if edges is not None:  # its cells and scale on a line of their own: one line is longer than the bar
        label = label.replace(" (", "\n(", 1)
    ax.figure.colorbar(im, ax=ax, label=label)
    note = ""
    if over is not None:
        n, x = over
        every = max(1, -(-t.size // max_columns))
        cols = np.unique(np.append(np.arange(0, t.size, every), t.size - 1))
        ax.plot(np.repeat(t[cols], pos.shape[1]), pos[cols].ravel(), ".", ms=2.4, color="c", alpha=0.8, mew=0,
                label=_particles_words(n, pos.shape[1], every))
        note = _noise_note(ds, n)
    _mark_refinements(ax, ds)
    _mark_layers(ax, ds, color="w", on_map=True)
    if title:
        ax.figure.suptitle(_title(ds, 85), fontsize=9)
    if note:
        ax.set_title(note, fontsize=7.5)
    ax.set_xlabel("t")
    ax.set_ylabel(domain.coordinate_label if edges is None else
                  f"{domain.coordinate_label}, log scale near {_pole_words(law['poles'])}")
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])
    if domain.periodic:
        _pi_ticks(ax.yaxis)
    elif edges is not None:  # the polar angle, logarithmic near the pole it collapses onto
        _pole_axis(ax, law["poles"], edges[0], edges[-1])
    elif domain.bounded:  # the zonal sphere's polar angle
        ax.set_ylim(0.0, np.pi)
    else:  # R¹
        ax.set_ylim(*_extent(y, (np.nan_to_num(rho) >= 1e-3 * np.nanmax(rho)).any(axis=0),
                             None if over is None else pos))
    if ax.get_legend_handles_labels()[0]:  # below the map, not over it
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=3, markerscale=3,
                  facecolor="0.3", edgecolor="none", labelcolor="white", framealpha=1.0)
    return ax


def _nearest_edges(t) -> np.ndarray:
    """The edges of cells centred on ``t`` (len(t) + 1): halfway between neighbours, the ends half a step out, as
    matplotlib's 'nearest' shading draws them (one cell of width 1 about a single time)."""
    t = np.asarray(t, dtype=float)
    if t.size == 1:
        return np.array([t[0] - 0.5, t[0] + 0.5])
    mid = 0.5 * (t[1:] + t[:-1])
    return np.concatenate([[2 * t[0] - mid[0]], mid, [2 * t[-1] - mid[-1]]])


def _cell_count(weights, per_cell: int, most: int) -> int | None:
    """The cells a figure bins Lagrangian frames into: the largest power of 2, at most ``most``, with ``per_cell``
    points of every frame (``weights`` (T, P), NaN where a frame has no point) per cell; None where a frame has
    fewer than 16 cells' worth."""
    counts = np.isfinite(weights).sum(axis=1)
    fewest = int(counts[counts > 0].min()) if (counts > 0).any() else 0
    if fewest < per_cell * 16:
        return None
    return min(most, 2 ** int(np.floor(np.log2(fewest / per_cell))))


def _lagrangian_cells(ds, domain, y, rho, per_cell: int = 4):
    """(cell centres, cell averages (T, m), what) of a 1-D density with Lagrangian frames on the circle: each frame
    as the mass in m equal cells over their width, m the largest power of 2 with at least ``per_cell`` points of every
    frame per cell (the runner's averages on the start grid hold 0, 1 or 2 points per cell: a moiré, and clusters
    between nodes vanish); grid frames (before a hand-over) averaged over the same cells. None otherwise."""
    if "lagrangian_points" not in ds or not domain.periodic or not hasattr(domain.chart, "cell_averages"):
        return None
    weights = ds["lagrangian_weight"].values
    m = _cell_count(weights, per_cell, y.size)
    if m is None:
        return None
    grid = domain.make_grid({"n": m})
    points = ds["lagrangian_points"].values
    out = np.full((rho.shape[0], m), np.nan)
    node_cell = np.mod(np.floor(np.mod(y, 2 * np.pi) / (2 * np.pi / m) + 0.5), m).astype(int)
    for i in range(rho.shape[0]):
        ok = np.isfinite(weights[i])
        if ok.any():
            out[i] = domain.chart.cell_averages(domain.chart.to_state(points[i][ok]), weights[i][ok], grid)
        elif np.isfinite(rho[i]).all():
            out[i] = np.bincount(node_cell, weights=rho[i], minlength=m) / np.bincount(node_cell, minlength=m)
    return np.asarray(grid.angles), out, f"cell averages on {m} cells"


def _lagrangian_law_cells(ds, domain, y, rho, d, per_cell: int = 4, most: int = 512, points=None):
    """The law that a space-time map of a 1-D density draws on cells of its own, for a bounded, non-periodic domain
    (the zonal sphere: the law of the polar angle θ ∈ [0, π]) with Lagrangian frames; None otherwise.

    After the hand-over the runner stores each frame as cell averages on the start grid's nodes, whose cells near
    the poles are wide in high dimension (d = 128, ℓmax = 48: the first node at θ = 0.45), so a cluster near a
    pole would be drawn spread over [0, 0.45]. Here the rings' masses are binned on cells of the map's own:

    - while no frame collapses onto a pole, m equal cells of [0, π] (m the largest power of 2, at most ``most``,
      with ``per_cell`` rings of every frame per cell), drawn as the law q(t, θ) (the grid frames' law
      interpolated at the cells' centres);
    - where a frame holds :data:`_COLLAPSED` of its mass within 4 equal cells of a pole, ``most`` cells equal on
      an axis logarithmic in the distance to that pole (u = ln θ; ln(π − θ) at θ = π; ln(θ/(π − θ)) at both)
      from a little below the least distance any frame's mass (or a drawn particle, ``points``) comes to it,
      drawn as the mass of each cell. The collapse of SA on S^127 takes the law to θ ~ e^{−t}: 10^{−8} by t = 17;
      on equal cells it sat in the first cell (θ < 0.025) from t ≈ 5 on, a line of pixels under a black map. On
      the log axis it stays a band of several cells whose position is the distance to the pole, and the mass of a
      cell (not its density per unit θ, which grows like 1/θ and would leave the early frames dark on any colour
      scale) keeps one colour scale for the whole run. The grid frames' cell masses are the law, interpolated
      (through ρ, as smooth as its nodes) at the cells' centres, times their widths.

    Returns
    -------
    dict or None
        ``centres``, ``values`` (T, m), ``what`` (the cells, for the colour bar), and for the log axis ``edges``
        (m + 1), ``poles`` (the subset of (0, 1): θ = 0, θ = π, on a log scale), ``symbol`` and ``reference``
        (the uniform law's largest cell mass).
    """
    if "lagrangian_points" not in ds or domain.periodic or not domain.bounded:
        return None
    weights = ds["lagrangian_weight"].values
    m = _cell_count(weights, per_cell, most)
    if m is None:
        return None
    points_all = ds["lagrangian_points"].values
    rings = {}
    for i in range(rho.shape[0]):
        ok = np.isfinite(weights[i])
        if ok.any():
            rings[i] = (np.reshape(domain.coordinates(points_all[i][ok]), -1), weights[i][ok] / weights[i][ok].sum())
    poles = _collapsed_poles(rings.values(), 4.0 * np.pi / m)
    if not poles:
        edges = np.linspace(0.0, np.pi, m + 1)
        centres = 0.5 * (edges[1:] + edges[:-1])
        out = np.full((rho.shape[0], m), np.nan)
        for i in range(rho.shape[0]):
            if i in rings:
                mass, _ = np.histogram(np.clip(rings[i][0], 0.0, np.pi), edges, weights=rings[i][1])
                out[i] = mass / (mass.sum() * np.diff(edges))
            elif np.isfinite(rho[i]).all():
                out[i] = np.interp(centres, y, domain.shown(y, rho[i], d)[0])
        return {"centres": centres, "values": out, "what": f"{m} equal cells"}
    drawn = None if points is None else np.ravel(points)  # the particles' angles: on the axis too
    least = [max(0.5 * _least_distance(rings.values(), pole, None if drawn is None else
                                       (drawn if pole == 0 else np.pi - drawn)), 1e-300) if pole in poles else 0.0
             for pole in (0, 1)]
    forward, inverse = _pole_scale(poles)
    edges = inverse(np.linspace(forward(least[0]), forward(np.pi - least[1]), most + 1))
    edges[0], edges[-1] = least[0], np.pi - least[1]  # exact ends: the inverse's round-off leaves them inside
    centres = inverse(0.5 * (forward(edges[1:]) + forward(edges[:-1])))
    out = np.full((rho.shape[0], most), np.nan)
    for i in range(rho.shape[0]):
        if i in rings:  # a ring nearer a pole than the axis reaches is counted in its end cell: every frame's mass 1
            out[i], _ = np.histogram(np.clip(rings[i][0], edges[0], edges[-1]), edges, weights=rings[i][1])
        elif np.isfinite(rho[i]).all():
            out[i] = domain.shown(centres, np.interp(centres, y, rho[i]), d)[0] * np.diff(edges)
    # the uniform law's cell masses: q is the domain's shown values of a constant ρ, scaled to its stated maximum
    fine = np.linspace(0.0, np.pi, 1025)
    shape, _, largest = domain.shown(fine, np.ones_like(fine), d)
    uniform = domain.shown(centres, np.ones_like(centres), d)[0] * largest / np.max(shape)
    reference = float(np.max(uniform * np.diff(edges)))
    axis = {(0,): "ln θ", (1,): "ln(π − θ)", (0, 1): "ln(θ/(π − θ))"}[poles]
    return {"centres": centres, "values": out, "what": f"{most} cells equal in {axis}", "edges": edges,
            "poles": poles, "symbol": "mass of each cell", "reference": reference}


#: The share of a frame's mass within 4 equal cells of a pole from which the map draws that pole on a log axis
_COLLAPSED = 0.1


def _collapsed_poles(rings, near: float) -> tuple:
    """The poles ((0,): θ = 0, (1,): θ = π, both, or ()) within ``near`` of which some frame of ``rings`` ((θ,
    probability weights) each) holds at least :data:`_COLLAPSED` of its mass."""
    rings = list(rings)
    return tuple(pole for pole in (0, 1)
                 if any(np.sum(w[(theta if pole == 0 else np.pi - theta) < near]) >= _COLLAPSED for theta, w in rings))


def _least_distance(rings, pole: int, extra=None, share: float = 1e-3) -> float:
    """The least distance to ``pole`` (0: θ = 0, 1: θ = π) below which a frame of ``rings`` holds ``share`` of its
    mass, over the frames, and the least of ``extra`` (other angles drawn, e.g. particles'; distances) above 0."""
    least = np.pi
    for theta, w in rings:
        distance = theta if pole == 0 else np.pi - theta
        order = np.argsort(distance)
        k = min(np.searchsorted(np.cumsum(w[order]), share), order.size - 1)
        least = min(least, float(distance[order][k]))
    if extra is not None:
        extra = np.asarray(extra, dtype=float)
        extra = extra[np.isfinite(extra) & (extra > 0)]
        if extra.size:
            least = min(least, float(extra.min()))
    return least


def _pole_scale(poles):
    """(forward, inverse) of the polar-angle axis logarithmic in the distance to ``poles``: u = ln θ (0,),
    −ln(π − θ) (1,), ln(θ/(π − θ)) (both); increasing in θ. Silent (±inf, NaN) where matplotlib asks beyond the
    ends, as it does while it lays out the axis."""
    low, high = 0 in poles, 1 in poles

    def forward(theta):
        theta = np.asarray(theta, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.log(theta) if low else 0.0 * theta) - (np.log(np.pi - theta) if high else 0.0 * theta)

    def inverse(u):
        u = np.asarray(u, dtype=float)
        with np.errstate(over="ignore"):
            if low and high:
                return np.pi / (1.0 + np.exp(-u))
            return np.exp(u) if low else np.pi - np.exp(-u)

    return forward, inverse


def _pole_words(poles) -> str:
    """'θ = 0', 'θ = π' or 'θ = 0 and π': the poles a polar-angle axis draws on a log scale."""
    return "θ = " + " and ".join(("0", "π")[pole] for pole in poles)


def _pole_axis(ax, poles, lo: float, hi: float) -> None:
    """Set the y axis of ``ax``, polar angles, from ``lo`` to ``hi`` on the scale of :func:`_pole_scale`,
    ticks at 10^k (θ or π − θ) near a logarithmic pole, at most 5 a side, and at π/2 (and at a linear end, 0 or
    π), labelled as numbers ('0.001', '$10^{-8}$', 'π − 0.01')."""
    from matplotlib.ticker import FixedLocator, FixedFormatter, NullLocator

    forward, inverse = _pole_scale(poles)
    ax.set_yscale("function", functions=(forward, inverse))
    ax.set_ylim(lo, hi)
    ticks = {np.pi / 2: "π/2"}  # in order of precedence: π/2, the decades, a linear end
    ends = {}
    for pole, end in ((0, lo), (1, np.pi - hi)):
        if pole not in poles:
            ends[0.0 if pole == 0 else np.pi] = "0" if pole == 0 else "π"
            continue
        decades = np.arange(int(np.ceil(np.log10(end) - 1e-9)), 0)  # 10^k inside the axis, below 1
        decades = decades[::-1][::max(1, -(-decades.size // 5))]  # the nearest to π/2 kept, every j-th beyond
        for k in decades:
            words = f"{10.0 ** k:g}" if k >= -3 else f"$10^{{{k}}}$"
            ticks[10.0 ** k if pole == 0 else np.pi - 10.0 ** k] = words if pole == 0 else f"π − {words}"
    ticks |= ends
    span = float(forward(hi) - forward(lo))
    kept = []
    for v in ticks:  # a tick within 6 % of the axis of one kept before it is dropped: labels apart, not stacked
        if lo <= v <= hi and all(abs(float(forward(v) - forward(k))) >= 0.06 * span for k in kept):
            kept.append(v)
    kept.sort()
    ax.yaxis.set_major_locator(FixedLocator(kept))
    ax.yaxis.set_major_formatter(FixedFormatter([ticks[v] for v in kept]))
    ax.yaxis.set_minor_locator(NullLocator())


def _plot_profiles(ds, ax, domain, s, title: bool):
    """ρ(t_k, ·) at each computed output time (a colour each, from dark to light), and a histogram of the particles
    at the last of them (the smallest N, repeat 0)."""
    import matplotlib as mpl

    frames = _computed_frames(ds)
    t = ds["time"].values
    y = ds[s].values
    rho, symbol, _ = domain.shown(y, ds["density"].transpose("time", s).values, int(ds.attrs.get("dimension", 0) or 0))
    if domain.periodic:
        y, rho = np.append(y, y[0] + domain.volume), np.hstack([rho, rho[:, :1]])
    colours = mpl.colormaps["viridis"](np.linspace(0.0, 0.85, frames.size))
    for c, i in zip(colours, frames):
        ax.plot(y, rho[i], color=c, lw=1.4, label=f"density, t = {t[i]:.3g}")
    names = sorted((int(v[len("positions_"):]), v) for v in ds.data_vars if v.startswith("positions_"))
    if names:
        n, name = names[0]
        x = ds[name].isel(repeat=0, time=int(frames[-1])).values
        pos = np.reshape(domain.coordinates(x), x.shape[:-1])
        lo, hi = (0.0, domain.volume) if domain.periodic else (0.0, np.pi) if domain.bounded else (y[0], y[-1])
        ax.hist(pos, bins=min(60, max(10, int(np.sqrt(n)) * 2)), range=(lo, hi), density=True, histtype="step",
                color="0.35", lw=1.0, label=f"N = {n} particles at t = {t[frames[-1]]:.3g} (histogram)")
    ax.set_xlabel(domain.coordinate_label)
    ax.set_ylabel(symbol)
    ax.set_ylim(bottom=0.0)
    if domain.periodic:
        ax.set_xlim(0.0, domain.volume)
        _pi_ticks(ax.xaxis)
    elif domain.bounded:  # the zonal sphere's polar angle
        ax.set_xlim(0.0, np.pi)
    else:
        ax.set_xlim(*_extent(y, (np.nan_to_num(rho[frames]) >= 1e-3 * np.nanmax(rho[frames])).any(axis=0)))
    _legend(ax, ds, fontsize=7)
    if title:
        ax.figure.suptitle(_title(ds, 85), fontsize=9)
    return ax


def _extent(coords, on, points=None) -> tuple[float, float]:
    """Axis limits around the nodes ``coords[on]`` (where the density matters) and ``points`` (particles'
    coordinates on this axis), with a 10 % margin, inside the grid's own range."""
    lo, hi = coords[on].min(), coords[on].max()
    if points is not None and np.size(points):
        lo, hi = min(lo, np.nanmin(points)), max(hi, np.nanmax(points))
    pad = 0.1 * (hi - lo) + 1e-12
    return max(lo - pad, coords[0]), min(hi + pad, coords[-1])


def _noise_note(ds, n: int) -> str:
    """Why N particles may cluster elsewhere than the density: their sampling noise, of size ~ N^{-1/2}
    in every Fourier mode, exceeds the study's initial perturbation (uniform-noise amplitude)."""
    initial = _study(ds).get("initial", {})
    amplitude = initial.get("amplitude")
    if initial.get("kind") == "uniform-noise" and amplitude is not None and n ** -0.5 > amplitude:
        return (f"the particles' sampling noise $N^{{-1/2}}$ = {n ** -0.5:.2g} exceeds the initial perturbation "
                f"{amplitude:g}: they need not follow the density's clusters")
    return ""


def _densities(ds):
    """(domain, frame i ↦ Density): the results' densities on the grid their coordinates describe."""
    domain = domains.get(ds.attrs["domain"])
    dims = _spatial_dims(ds)
    grid = domain.grid_type.from_coordinates({d: ds[d].values for d in dims} | {"dimension": ds.attrs.get("dimension")})
    return domain, lambda i: Density(grid, ds["density"].isel(time=i).transpose(*dims).values, check=False)


def _cell_frames(ds, domain, density):
    """Frame i ↦ its density for a map: a Lagrangian frame as cell averages (its chart's ``cell_averages``) on the
    domain's grid with about 50 of its points per cell (binned on the start grid itself the nodes alias into a
    moiré of 0, 1 or 2 points per cell), a grid frame as it is."""
    points, weights = ds["lagrangian_points"].values, ds["lagrangian_weight"].values
    k = domain.intrinsic_dimension(points.shape[-1])
    resolution = density(0).grid.resolution_name  # the parameter refinement doubles (lmax on S²)

    def frame(i):
        ok = np.isfinite(weights[i])
        if not ok.any():
            return density(i)
        grid = domain.make_grid({resolution: max(4, int((ok.sum() / 100.0) ** (1.0 / k)))})
        values = domain.chart.cell_averages(domain.chart.to_state(points[i][ok]), weights[i][ok], grid)
        return Density(grid, values, check=False)

    return frame


def _map_values(domain, density, cells: bool) -> np.ndarray:
    """The values a map of ``density`` draws (S²: its synthesis on the longitude–latitude grid, or its cells)."""
    return np.asarray(density.values) if cells else domain.map_values(density)


#: A figure at most this wide (inches) is laid out for one column of a two-column page; COLUMN is that column
NARROW, COLUMN = 5.0, 3.5


def plot_snapshots(ds, max_panels: int = 9, times=None, cmap="magma", energy: bool = False,
                   width: float | None = None):
    """Snapshot grid of the density (S²: Mollweide maps; R²: images on shared axes; [0, 1] × S¹: heat maps), the
    first and the last frame always among them and no empty panel, one colour scale (log where the density reaches
    ten times the uniform one) and one labelled colour bar, particles overlaid; with ``energy``, the energy curve
    in a last row. ``times``: output-time indices to draw instead.

    ``width``: the figure's width in inches (default: 3.7 in a panel). At most :data:`NARROW` (5 in; one column of
    a paper is ≈ 3.5 in), the grid is laid out to be read at that size: at most 4 snapshots (the first, the last
    and two between) in 2 × 2, the colour bar below them, every text 7 pt, the maps' degree labels left to their
    graticule, no energy row. Returns the Figure."""
    plt = _plt()
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import MaxNLocator

    narrow = width is not None and width <= NARROW
    if narrow:
        max_panels, energy = min(max_panels, 4), False
    if times is None:
        shown, ncols = _snapshot_frames(ds, max_panels)
    else:
        shown = np.asarray(times)
        ncols = LAYOUTS.get(shown.size, min(shown.size, 4))
    if narrow:
        shown = shown[:max_panels] if times is not None and len(shown) > max_panels else shown
        ncols = 2 if len(shown) in (2, 4) else len(shown)
    rows = -(-len(shown) // ncols)
    domain, density = _densities(ds)
    energy = energy and ("energy" in ds or "particle_energy" in ds)
    plane = domain.of_dim(density(shown[0]).grid.dim).plane
    over = _overlay(ds)
    extent = _union_extent(ds, {i: density(i) for i in shown}, over) if plane else None
    if domain.projection:
        height = 2.0
    elif extent is not None:  # equal axes: as high as the zoomed box is
        height = min(3.6, 3.0 * (extent[1][1] - extent[1][0]) / (extent[0][1] - extent[0][0])) + 0.45
    else:
        height = 3.0
    if narrow:  # panels as wide as the column allows, their height the map's (Mollweide: half its width)
        panel = (width - 0.1) / ncols
        height = panel / 2.0 + 0.25 if domain.projection else min(panel * height / 3.7, 2.0) + 0.25
        fig = plt.figure(figsize=(width, height * rows + 0.9), layout="constrained")
    else:
        fig = plt.figure(figsize=(width or 3.7 * ncols, height * rows + (2.6 if energy else 0) + 0.9),
                         layout="constrained")
    gs = fig.add_gridspec(rows + (1 if energy else 0), ncols)
    cells = bool(domain.projection) and "lagrangian_points" in ds and hasattr(domain.chart, "cell_averages")
    if cells:  # a Lagrangian map: cells drawn as they are (a spectral synthesis would ring), empty cells dark
        density = _cell_frames(ds, domain, density)
    frames = {i: density(i) for i in shown}
    values = np.concatenate([_map_values(domain, frames[i], cells).ravel() for i in shown])
    norm = density_norm(values, _reference(domain))
    style = {"norm": norm, "cmap": cmap} | ({"cells": True} if cells else {})
    axes = []
    for j, i in enumerate(shown):
        share = axes[0] if (plane and axes) else None
        ax = fig.add_subplot(gs[j // ncols, j % ncols], projection=domain.projection, sharex=share, sharey=share)
        domain.plot(frames[i], ax=ax, colorbar=False, **style)
        if over is not None:
            domain.plot_points(over[1][i], ax)
        if extent is not None:
            ax.set_xlim(*extent[0])
            ax.set_ylim(*extent[1])
        if not domain.projection:
            ax.label_outer()
        if domain.projection:  # the domain's degree labels, at no less than 7 pt (none where the map is small)
            ax.tick_params(labelsize=7)
            if narrow:
                ax.set_xticklabels([])
                ax.set_yticklabels([])
        elif narrow:
            ax.tick_params(labelsize=7)
        ax.set_title(f"t = {float(ds['time'][i]):.3g}", fontsize=7 if narrow else 9, pad=2 if narrow else None)
        axes.append(ax)
    what = "cell averages" if cells else None
    symbol = "f(s, θ)" if domain.bounded and not domain.projection else "ρ"  # [0, 1] × S¹: rows of positions
    if axes and axes[0].collections:
        if narrow:  # below the maps: the column's width is theirs
            bar = fig.colorbar(axes[0].collections[0], ax=axes, location="bottom", shrink=0.8, aspect=30)
            bar.set_label(density_label(symbol, norm, what), fontsize=7)
            if not isinstance(norm, LogNorm):  # 5 numbers fit under the column, 9 touch
                bar.ax.xaxis.set_major_locator(MaxNLocator(5))
                bar.ax.tick_params(labelsize=7)
            else:  # decades as numbers (0.001 … 100) at 7 pt; powers of ten beyond at SCRIPTED, for 7-pt exponents
                log_ticks(bar.ax.xaxis, decades=True)
                ticks = bar.ax.xaxis.get_major_locator().tick_values(norm.vmin, norm.vmax)
                labels = [bar.ax.xaxis.get_major_formatter()(v) for v in ticks if norm.vmin <= v <= norm.vmax]
                bar.ax.tick_params(labelsize=SCRIPTED if any("$" in x for x in labels) else 7)
        else:
            fig.colorbar(axes[0].collections[0], ax=axes, label=density_label(symbol, norm, what), shrink=0.85)
    if energy:
        plot_energy(ds, ax=fig.add_subplot(gs[rows, :]))
    note = [] if over is None else [_particles_words(over[0], over[1].shape[1])]
    chars = int(width * 72 / (7 * 0.55)) if narrow else 40 * ncols  # a 7-pt character is ≈ 0.55 × 7 pt wide
    title = fig.suptitle(_title(ds, chars) + ("\n" + note[0] if note else ""), fontsize=7 if narrow else 9)
    if narrow and domain.projection:
        _close_gaps(fig, axes, title)
    return fig


def _close_gaps(fig, maps, title, rounds: int = 3) -> None:
    """Shorten ``fig`` by the blank that constrained layout leaves between the ``maps`` and the ``title`` above
    them and the colour bar below (axes of a fixed aspect, narrower than their cells are high: a row of three
    Mollweide maps in a column sat 0.4 in below the title), down to the layout's own padding (twice its h_pad
    each side); a few rounds, as each new height lays the figure out again. The maps keep their width: a height
    that would narrow them (they would become height-limited) is not taken, half of the cut is tried instead."""
    pad = 2 * fig.get_layout_engine().get()["h_pad"]

    def measure():
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        boxes = [a.get_tightbbox(renderer) for a in maps]
        others = [a.get_tightbbox(renderer) for a in fig.axes if a not in maps]
        top = title.get_window_extent(renderer).y0
        below = max((b.y1 for b in others if b.y1 <= min(m.y0 for m in boxes) + 1), default=fig.bbox.y0)
        slack = (top - max(m.y1 for m in boxes) + min(m.y0 for m in boxes) - below) / fig.dpi - 2 * pad
        return slack, min(a.get_window_extent(renderer).width for a in maps)

    slack, width = measure()
    for _ in range(rounds):
        if slack < 0.02:
            return
        height = fig.get_figheight()
        for cut in (slack, slack / 2, slack / 4):
            fig.set_figheight(height - cut)
            slack, narrower = measure()
            if narrower >= width * (1 - 1e-3):
                break
        else:  # every cut narrows the maps: keep the height they had
            fig.set_figheight(height)
            return


def _union_extent(ds, frames, over):
    """One (x limits, y limits) for every panel of a 2-D snapshot grid: where any shown density exceeds 1e-3 of
    its maximum or a drawn particle lies, with a margin."""
    xs, ys = [], []
    for i, dens in frames.items():
        g = dens.grid
        rho = np.asarray(dens.values)
        on = rho >= 1e-3 * np.nanmax(rho)
        pts = None if over is None else over[1][i]
        xs.append(_extent(g.axes[0], on.any(axis=1), None if pts is None else pts[:, 0]))
        ys.append(_extent(g.axes[1], on.any(axis=0), None if pts is None else pts[:, 1]))
    return (min(a for a, _ in xs), max(b for _, b in xs)), (min(a for a, _ in ys), max(b for _, b in ys))


# ------------------------------------------------------------------ curves over time
def _repeats(ds) -> int:
    return int(ds.sizes.get("repeat", 1))


def _band(ax, t, values, label, color, ls="-", clip=None):
    """Mean over repeats (a line labelled ``label``) with a ±1 standard deviation band (``clip``: its range, e.g.
    (0, 1) for a fraction); the band is named once in the legend by :func:`_legend`."""
    import warnings

    with warnings.catch_warnings():  # times with nothing computed (NaN in every repeat) stay NaN, silently
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(values, axis=0)
        s = np.nanstd(values, axis=0)
    line, = ax.plot(t, m, color=color, ls=ls, label=label)
    if values.shape[0] > 1:
        lo, hi = m - s, m + s
        if clip is not None:
            lo, hi = np.clip(lo, *clip), np.clip(hi, *clip)
        band = ax.fill_between(t, lo, hi, color=color, alpha=0.15, lw=0, gid="sd-band")
        line.sd_band = band  # its legend entry shows the band behind the line (:func:`_legend`)
    return line


def _band_swatch(band):
    """A legend patch in the band's own colour and opacity."""
    from matplotlib.patches import Patch

    return Patch(facecolor=tuple(band.get_facecolor()[0]), edgecolor="none", lw=0)


def _bands_over_n(ax, ds, name, clip=None):
    """``_band`` of the particle variable ``name`` (n_particles, repeat, time), a colour per N."""
    for i, n in enumerate(ds["n_particles"].values):
        _band(ax, ds["time"].values, ds[name].isel(n_particles=i).values, f"N = {n}", f"C{i}", clip=clip)


def _legend(ax, ds, *others, **kwargs):
    """The legend of ``ax`` (and of the twin axes ``others``): every labelled line — a line with a ±1 sd band drawn
    over a swatch of its band, in the band's own colour — and the bands named once ('shaded: ±1 sd over R
    repeats', its swatch striped in every band's colour) where there are any."""
    from matplotlib.legend_handler import HandlerTuple

    handles, labels, bands = [], [], []
    for a in (ax, *others):
        h, lab = a.get_legend_handles_labels()
        for handle in h:
            band = getattr(handle, "sd_band", None)
            if band is not None:
                bands.append(band)
            handles.append(handle if band is None else (_band_swatch(band), handle))
        labels += lab
    if bands:
        handles.append(_Stripes(_band_swatch(b) for b in bands))
        labels.append(f"shaded: ±1 sd over {_repeats(ds)} repeats")
    if handles:
        handler_map = {tuple: HandlerTuple(ndivide=1), _Stripes: HandlerTuple(ndivide=None, pad=0)}
        return ax.legend(handles, labels, **({"fontsize": 7, "handler_map": handler_map} | kwargs))
    return None


class _Stripes(tuple):
    """Legend patches drawn side by side in one swatch (a tuple of handles is drawn one over the other)."""


def plot_energy(ds, ax=None, legend: bool = True):
    """E_β of the density (every step) and of the particle systems (mean ± sd over repeats). Returns the Axes."""
    plt = _plt()
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
        fig.suptitle(_title(ds, 70), fontsize=8)
    if "step_energy" in ds and ds["step_energy"].size and "lagrangian_points" not in ds:
        ax.plot(ds["step_time"], ds["step_energy"], color="k", label="density")
    elif "energy" in ds:
        ax.plot(ds["time"], ds["energy"], "k.-", ms=3, label="density")
    if "particle_energy" in ds:
        _bands_over_n(ax, ds, "particle_energy")
        beta = _beta(ds)
        if beta is not None:  # E_β(μ^N) counts the pairs i = j: e^β/(2βN) above the mean-field value
            ns = ", ".join(f"{np.exp(beta) / (2 * beta * n):.2g}" for n in ds["n_particles"].values)
            ax.text(0.99, 0.02, f"particle energies include the self-interaction exp(β)/(2βN) = {ns}",
                    transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="0.3")
    ax.set_xlabel("t")
    _mark_layers(ax, ds)
    ax.set_ylabel(ENERGY_LABEL)
    if legend:
        _legend(ax, ds, fontsize=8)
    return ax


def _beta(ds):
    """β of the study's model (None if it has none, or β = 0)."""
    beta = _study(ds).get("model", {}).get("beta")
    return float(beta) if beta else None


def plot_lagrangian(ds):
    """The Lagrangian measure through collapse: its points in space-time coloured by ρ at the points on a log scale
    (left; on S^{d−1}, d >= 3, their angle to the heaviest cluster of the last frame), and the density's cluster
    count with E_β of the density and of the particle systems (right), one legend; where the count is not stored
    (rings of the zonal sphere) E_β alone, on the panel's own axis; where neither is, the right panel stays empty
    (axis off). Both panels share one time axis, the run's [t_0, t_end]. Returns the Figure."""
    plt = _plt()
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import MaxNLocator

    # one time axis: the points start at the hand-over, the energy at t = 0 (autoscaled apart, they disagreed)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12.5, 4.8), layout="constrained", sharex=True)
    t = ds["time"].values
    x = ds["lagrangian_points"].values
    domain = domains.get(ds.attrs["domain"])
    logr, symbol = domain.shown_log(x[..., 0], ds["lagrangian_log_density"].values,
                                    int(ds.attrs.get("dimension", 0) or 0))
    logr = logr / np.log(10.0)
    ok = np.isfinite(logr) & np.isfinite(ds["lagrangian_weight"].values)
    tt = np.broadcast_to(t[:, None], logr.shape)[ok]
    if domain.periodic or (domain.bounded and not domain.unit_vectors):  # the angle θ: circle, or polar (zonal)
        y, ylabel = domain.coordinates(x[ok]), domain.coordinate_label
    elif domain.unit_vectors:  # S^{d-1}: the angle to the heaviest cluster at the end
        last = np.flatnonzero(ok.any(axis=1))[-1]
        c = clusters.heaviest_cluster(x[last][ok[last]], ds["lagrangian_weight"].values[last][ok[last]])
        y = np.arccos(np.clip(x[ok] @ c, -1.0, 1.0))
        ylabel = "angle to the heaviest cluster at t = " + f"{t[last]:g}"
    else:
        y, ylabel = x[..., 0][ok], "$x_1$"
    order = np.argsort(logr[ok])  # the densest points on top
    lo, hi = float(np.min(logr[ok])), float(np.max(logr[ok]))
    hi = min(hi, 300.0)
    norm = LogNorm(vmin=10.0 ** max(lo, hi - 300.0), vmax=10.0 ** hi)
    rho = 10.0 ** np.clip(logr[ok][order], hi - 300.0, hi)
    sc = ax.scatter(tt[order], y[order], c=rho, s=1, cmap="magma", norm=norm, rasterized=True)
    fig.colorbar(sc, ax=ax, label=density_label(symbol, norm, "at the points"))
    ax.set_xlabel("t")
    _mark_layers(ax, ds, on_map=True)
    ax.set_ylabel(ylabel)
    if domain.periodic:
        _pi_ticks(ax.yaxis)
    elif domain.bounded:
        ax.set_yticks(np.pi * np.array([0, 0.25, 0.5, 0.75, 1]), ["0", "π/4", "π/2", "3π/4", "π"])
    ax.set_title(f"Lagrangian measure: its points, coloured by the exact {symbol} they carry", fontsize=9)
    counted = np.isfinite(ds["cluster_count"].values)
    energy = "energy" in ds or "particle_energy" in ds
    others, drawn = [], []
    if counted.any():  # (rings of the zonal sphere are not counted: a dense ring is no cluster of tokens)
        bx.step(t, ds["cluster_count"], where="post", color="C3", lw=1.2, label="clusters of the density (left axis)")
        bx.set_ylabel("number of clusters of the density", color="C3")
        bx.yaxis.set_major_locator(MaxNLocator(integer=True))
        bx.set_ylim(-0.1, max(1.0, float(np.max(ds["cluster_count"].values[counted]))) + 0.6)
        drawn.append("cluster count")
        if energy:  # on its own axis, at the right
            ex = bx.twinx()
            plot_energy(ds, ax=ex, legend=False)
            others.append(ex)
    elif energy:  # no count to draw: the energy on the panel's own axis, not beside an empty one
        plot_energy(ds, ax=bx, legend=False)
    if energy:
        drawn.append("energy")
    else:
        _mark_layers(bx, ds)
    bx.set_xlabel("t")
    if drawn:
        _legend(bx, ds, *others, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=3)  # below: curves fill it
        bx.set_title(f"{' and '.join(drawn)}: plateaus are metastable states", fontsize=9)
    else:
        bx.set_axis_off()
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])  # the run's, shared by the right panel (and its energy axis)
    fig.suptitle(_title(ds, 130), fontsize=9)
    return fig


def _log_axis(ax) -> None:
    """A log y axis with labelled ticks inside the data's range (:func:`~meanfield.domains.plotting.log_ticks`)."""
    ax.set_yscale("log")
    ax.autoscale_view()
    log_ticks(ax.yaxis)


def plot_wasserstein(ds, ax=None):
    """W_p(μ_t, μ^N_t) against t, one panel per order p, a colour per N (mean ± sd over repeats), titled with what
    the distance is (:func:`_distance_words`: on the zonal sphere, W_p of the polar angles' laws, a lower bound of
    W_p on S^{d−1}). Returns the first Axes."""
    plt = _plt()
    ps = ds["p"].values
    if ax is None:
        fig, axes = plt.subplots(1, len(ps), figsize=(6.6 * len(ps), 4.2), squeeze=False, layout="constrained")
        axes = list(axes[0])
        fig.suptitle(_title(ds, 60 * len(ps)), fontsize=8)
    else:
        axes = [ax] * len(ps)
    w = ds["wasserstein"].values
    title = _distance_words(ds)
    for a, p in enumerate(ps):
        for i, n in enumerate(ds["n_particles"].values):
            vals = ds["wasserstein"].isel(p=a, n_particles=i).values
            label = f"N = {n}" if len(set(axes)) == len(ps) else f"N = {n}, p = {p:g}"
            _band(axes[a], ds["time"].values, vals, label, f"C{i}", ls=("-", "--", ":", "-.")[a % 4])
        if np.any(np.isfinite(w[a]) & (w[a] > 0)):  # an interrupted run may hold no distance yet
            _log_axis(axes[a])
        else:
            axes[a].text(0.5, 0.5, "no distance computed (interrupted run)", transform=axes[a].transAxes,
                         ha="center")
        axes[a].set_title(title.format(w=rf"$W_{{{p:g}}}$", v=rf"$W_{{{p:g}}}$"), fontsize=SCRIPTED)
        axes[a].set_xlabel("t")
        axes[a].set_ylabel(rf"$W_{{{p:g}}}(\rho_t, \mu^N_t)$")
        _mark_layers(axes[a], ds)
    for a in dict.fromkeys(axes):  # beside the curves, which span the whole panel
        _legend(a, ds, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    if len(set(axes)) == 1 and len(ps) > 1:
        axes[0].set_ylabel(" / ".join(rf"$W_{{{p:g}}}$" for p in ps))
        axes[0].set_title(title.format(w="the distance", v="$W_p$"), fontsize=SCRIPTED)
    return axes[0]


def _distance_words(ds) -> str:
    """The title of a W_p panel, '{w}' and '{v}' standing for the distance's names: '{w} between the density and N
    particles'; on a domain that is a quotient of the space its particles live on (the zonal sphere, whose particles
    live on S^{d−1}), validation compares their images in the quotient (``Distance.method`` 'polar-angle'): '{w} between
    the laws of the polar angle θ of the density / and of N particles, a lower bound of {v} on S¹²⁷' — the
    coordinate is 1-Lipschitz, so the distance of the images is at most that of the points."""
    domain = domains.get(ds.attrs["domain"])
    d = int(ds.attrs.get("dimension", 0) or 0)
    particles_on = domain.particle_domain(d) if d else domain
    if particles_on is domain or not domain.quotient_of(particles_on):
        return "{w} between the density and N particles"
    return (f"{{w}} between the laws of the {domain.coordinate_label} of the density\nand of N particles, a lower "
            f"bound of {{v}} on {particles_on.symbol(d)}")


def plot_rate(ds, ax=None, time: int | None = None, p_index: int | None = None):
    """log W_p against log N at one output time (``time``; by default the last with a fitted rate), the fitted N^α
    and its 95% band: one panel per order p (or the one ``p_index`` given, on ``ax``), its legend below it
    (:func:`_legend_below`). Returns the (first) Axes."""
    plt = _plt()
    orders = range(ds.sizes.get("p", 1)) if p_index is None else [p_index]
    panels = []
    for a in orders:
        rate = ds["rate"].isel(p=a).values
        k = time if time is not None else (int(np.flatnonzero(np.isfinite(rate))[-1]) if np.isfinite(rate).any()
                                           else -1)
        if np.isfinite(rate[k]) or p_index is not None:
            panels.append((a, k))
    panels = panels or [(0, -1 if time is None else time)]
    if ax is None:
        fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.9), squeeze=False,
                                 layout="constrained")  # 0.6 in for the legends below the panels
        axes = list(axes[0])
        fig.suptitle(_title(ds, 55 * len(panels)), fontsize=8)
    else:
        axes = [ax]
    for ax, (a, k) in zip(axes, panels):
        _rate_panel(ax, ds, k, a)
    return axes[0]


def _rate_panel(ax, ds, time: int, p_index: int) -> None:
    ns = ds["n_particles"].values.astype(float)
    W = ds["wasserstein"].isel(p=p_index, time=time).values  # (N, repeats)
    p = float(ds["p"][p_index])
    corrected = "log N" in ds["rate"].attrs.get("law", "")
    if corrected:  # S², R²: E W ≍ √(log N / N), the fit is of W/√(log N)
        W = W / np.sqrt(np.log(ns))[:, None]
    ax.loglog(np.repeat(ns, W.shape[1]), W.ravel(), ".", color="0.5", label="repeats")
    ax.loglog(ns, np.exp(np.mean(np.log(W), axis=1)), "o", color="k", label="geometric mean")
    a = float(ds["rate"].isel(p=p_index, time=time))
    lo, hi = float(ds["rate_low"].isel(p=p_index, time=time)), float(ds["rate_high"].isel(p=p_index, time=time))
    if np.isfinite(a):
        x0, y0 = np.mean(np.log(ns)), np.mean(np.log(W))
        grid = np.linspace(np.log(ns.min()), np.log(ns.max()), 50)
        ax.loglog(np.exp(grid), np.exp(y0 + a * (grid - x0)), color="C3",
                  label=f"fit: exponent {a:.3f}".replace("-", "−"))
        band = np.exp(y0 + np.outer([lo, hi], grid - x0))
        ax.fill_between(np.exp(grid), band.min(axis=0), band.max(axis=0), color="C3", alpha=0.2, lw=0,
                        label=f"95% interval of the exponent [{lo:.3f}, {hi:.3f}]".replace("-", "−"))
        ax.loglog(np.exp(grid), np.exp(y0 - 0.5 * (grid - x0)), "k--", lw=0.8, label="exponent −1/2")
    ax.set_xlabel("N")
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(ns, [f"{int(n)}" for n in ns])  # the particle numbers run: every one labelled
    ax.xaxis.set_minor_formatter(NullFormatter())
    log_ticks(ax.yaxis)
    sym = rf"$W_{{{p:g}}}$" + (r"$\,/\sqrt{\log N}$" if corrected else "")
    ax.set_ylabel(f"{sym} at t = {float(ds['time'][time]):.3g}", fontsize=SCRIPTED)
    ax.set_title(f"{sym}: rate in N at t = {float(ds['time'][time]):.3g}", fontsize=SCRIPTED)
    _legend_below(ax, ncols=2)


def _legend_below(ax, **kwargs):
    """The legend of ``ax`` below its x axis (tick labels and label), centred: outside the axes it covers no data
    whatever the data (the repeats of a rate fill the panel from corner to corner, and 'best' inside it put five
    lines of legend over the points' upper third). Returns the Legend."""
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties
    from matplotlib.transforms import ScaledTranslation

    rc = mpl.rcParams

    def points(size):
        return FontProperties(size=size).get_size_in_points()

    # the height the x axis takes below the axes: ticks, their labels, the label, and their pads (points)
    below = (max(rc["xtick.major.size"], 0) + rc["xtick.major.pad"] + 1.2 * points(rc["xtick.labelsize"])
             + rc["axes.labelpad"] + 1.2 * points(ax.xaxis.label.get_fontsize()) + 4.0)
    at = ax.transAxes + ScaledTranslation(0, -below / 72, ax.figure.dpi_scale_trans)
    return ax.legend(**({"fontsize": 7, "loc": "upper center", "bbox_to_anchor": (0.5, 0.0), "bbox_transform": at,
                         "borderaxespad": 0.0} | kwargs))


# ------------------------------------------------------------------ clusters
def _delta(ds) -> float | None:
    """δ of the pair fraction: the study's [particles] delta."""
    d = (_study(ds).get("particles") or {}).get("delta")
    return None if d is None else float(d)


def density_pair_fraction(ds, delta: float | None = None, max_frames: int = 41):
    """The density's own pair fraction P_ρ(t) = ∬ 1{⟨x, y⟩ >= 1 − δ} ρ_t(x) ρ_t(y) dx dy, the counterpart of the
    particles' fraction of pairs within δ (``delta``: the study's).

    Returns ``(times, values, how)``, or ``(None, None, why not)`` where the results hold no density on the circle
    or S². ``how`` says what was integrated:

    - a Lagrangian frame: its weighted points exactly (:func:`particles.clusters.weighted_pair_fraction`: the
      circle's sorted angles, a k-d tree on S^{d−1}), at no more than ``max_frames`` output times;
    - a grid frame, by the quadrature the grid's own interpolant gives exactly: on the circle
      Σ_k 4π|c_k|² sin(k a)/k (a = arccos(1 − δ), c_k its Fourier coefficients; 4π|c_0|² a at k = 0), on S² by
      Funk–Hecke Σ_l λ_l Σ_m c_lm², λ_l = 2π ∫_{1−δ}^1 P_l = 2π (P_{l−1}(1−δ) − P_{l+1}(1−δ))/(2l+1) (λ_0 = 2πδ),
      c_lm its orthonormal harmonic coefficients.
    """
    delta = _delta(ds) if delta is None else float(delta)
    name = ds.attrs.get("domain")
    if delta is None:
        return None, None, "no δ in the study"
    if "density" not in ds or not domains.get(name).unit_vectors or _study(ds).get("model", {}).get("causal"):
        return None, None, ("no density in this study: particles only" if "density" not in ds else
                            "computed for densities on the circle and S² only")
    t = ds["time"].values
    if "lagrangian_points" in ds:
        weights = ds["lagrangian_weight"].values
        frames = np.flatnonzero(np.isfinite(weights).any(axis=1))
        if frames.size > max_frames:
            frames = frames[np.unique(np.round(np.linspace(0, frames.size - 1, max_frames)).astype(int))]
        points = ds["lagrangian_points"].values
        values = []
        for i in frames:
            ok = np.isfinite(weights[i])
            values.append(clusters.weighted_pair_fraction(points[i][ok], weights[i][ok], delta))
        return t[frames], np.array(values), "density (its Lagrangian points)"
    frames = _computed_frames(ds)
    domain, density = _densities(ds)
    values = []
    for i in frames:
        dens = density(i)
        mass2 = float(dens.mass()) ** 2 if hasattr(dens, "mass") else 1.0
        values.append(domain.pair_fraction(dens.grid, dens.values, delta) / mass2)
    return t[frames], np.array(values), "density (quadrature on its grid)"


def plot_clusters(ds, ax=None):
    """Fraction of particle pairs within δ against t, per N (mean ± sd over repeats, clipped to [0, 1]), beside the
    density's own pair fraction (:func:`density_pair_fraction`), or a note where the study has none. The y axis
    fits the data (from 0). Returns the Axes."""
    plt = _plt()
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
        fig.suptitle(_title(ds, 70), fontsize=8)
    _bands_over_n(ax, ds, "pair_fraction", clip=(0.0, 1.0))
    t, values, how = density_pair_fraction(ds)
    if values is not None:
        ax.plot(t, values, "k.-" if t.size < ds.sizes["time"] else "k-", ms=3, lw=1.2, label=how)
    else:
        ax.set_title(f"the density's pair fraction: not available ({how})", fontsize=7.5)
    ax.set_xlabel("t")
    _mark_layers(ax, ds)
    delta = _delta(ds)
    # attention on the directions θ = x/|x| (MATH.md §10): every variant but post-LN's bare heads (and one since
    # unregistered)
    norm = VARIANTS.get(_study(ds).get("model", {}).get("normalization", "post"))
    directions = not getattr(norm, "heads_field", False)
    pair = r"\langle \theta_i, \theta_j\rangle" if directions else r"\langle x_i, x_j\rangle"
    ax.set_ylabel(rf"fraction of pairs with ${pair} \geq 1 - \delta$"
                  + (f"\n(δ = {delta:g})" if delta is not None else ""), fontsize=SCRIPTED)
    ax.margins(y=0.08)
    ax.autoscale_view()
    lo, hi = ax.get_ylim()
    ax.set_ylim(0.0, min(hi, 1.02))
    _legend(ax, ds, fontsize=7, loc="lower right" if values is not None else "best")
    return ax


def plot_radius(ds, ax=None):
    """The law of the tokens' radius r = |x| against t where the normalisation carries it ([model] normalization
    pre, peri, mix; docs/MATH.md §10): per N, the mean of r over the tokens (a line) and the band between its 10 %
    and 90 % quantiles, each averaged over the repeats; Mix-LN's t_0 marked. Pre-LN's ṙ = ⟨θ, A⟩ and peri-LN's
    ṙ = ⟨θ, A⟩/|A| tend to 1 as the directions cluster (V = I): r grows like t. Returns the Axes."""
    import warnings

    plt = _plt()
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
        fig.suptitle(_title(ds, 70), fontsize=8)
    t = ds["time"].values
    q = [float(v) for v in ds["quantile"].values]
    lo, hi = q.index(min(q)), q.index(max(q))
    with warnings.catch_warnings():  # times with nothing computed (NaN in every repeat) stay NaN, silently
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, n in enumerate(ds["n_particles"].values):
            mean = np.nanmean(ds["radius_mean"].isel(n_particles=i).values, axis=0)
            quantiles = np.nanmean(ds["radius_quantiles"].isel(n_particles=i).values, axis=0)
            ax.fill_between(t, quantiles[lo], quantiles[hi], color=f"C{i}", alpha=0.2, lw=0,
                            label=f"N = {n}: {q[lo]:.0%}–{q[hi]:.0%} quantiles of r")
            ax.plot(t, mean, color=f"C{i}", label=f"N = {n}: mean r")
    switch = _study(ds).get("model", {}).get("switch")
    if switch is not None and t[0] < switch < t[-1]:
        ax.axvline(switch, color="0.45", ls=":", lw=1, label=f"Mix-LN's switch to pre-LN, $t_0$ = {switch:g}")
    ax.set_xlabel("t")
    ax.set_ylabel(r"radius $r = |x|$ of the tokens $x = r\theta$")
    repeats = _repeats(ds)
    ax.legend(fontsize=7, loc="upper left",
              title=f"averaged over {repeats} repeats" if repeats > 1 else None, title_fontsize=7)
    return ax


_SYMBOLS = {"beta": "β", "noise": "D", "n_particles": "N", "tau": "τ", "amplitude": "amplitude", "kappa": "κ"}


def plot_sweep(ds, variable: str | None = None, ax=None):
    """Heat map over (first swept key, time) of a time series, averaged over everything else. Returns the Axes.

    Default variable: ``pair_fraction`` (the clustering phase diagram), else
    ``wasserstein``, ``energy``, ``mass``.
    """
    plt = _plt()
    dims = ds.attrs.get("sweep_dims", "").split()
    if not dims:
        raise ValueError("this Dataset is not a sweep (no attribute sweep_dims)")
    if variable is None:
        variable = next(v for v in ("pair_fraction", "wasserstein", "energy", "mass") if v in ds)
    key = dims[0]
    symbol = _SYMBOLS.get(key, key)
    da = ds[variable]
    da = da.mean([d for d in da.dims if d not in (key, "time")], keep_attrs=True)
    label = {"pair_fraction": r"fraction of pairs with $\langle x_i, x_j\rangle \geq 1 - \delta$",
             "energy": ENERGY_LABEL, "wasserstein": r"$W_p$(density, particles)"}.get(
        variable, da.attrs.get("long_name", variable))
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
        fig.suptitle(_title(ds, 80), fontsize=8)
    values = ds[key].values
    ax.set_title(f"{label} over {symbol} (mean over repeats)", fontsize=SCRIPTED)
    if values.size <= 4:  # a heat map would stretch a few values over wide bands: one curve each
        for i, v in enumerate(values):
            ax.plot(ds["time"].values, da.sel({key: v}).values, color=f"C{i}", label=f"{symbol} = {v:g}")
        ax.set_xlabel("t")
        _mark_layers(ax, ds)
        ax.set_ylabel(label, fontsize=SCRIPTED)
        _legend(ax, ds, fontsize=8)
        return ax
    im = ax.pcolormesh(values, ds["time"].values, da.transpose("time", key).values, shading="nearest",
                       cmap="Blues" if variable == "pair_fraction" else "viridis")
    ax.figure.colorbar(im, ax=ax, label=label)
    _mark_layers(ax, ds, color="k", on_map=True, axis="y")
    ax.set_xlabel(symbol)
    ax.set_ylabel("t")
    return ax


def plot_overview(ds):
    """The density over time and its energy in one figure (the demo's): a heat map beside the energy
    for one space dimension, snapshots above it otherwise; the title once, above both. Returns the Figure."""
    plt = _plt()
    if len(_spatial_dims(ds)) != 1:
        return plot_snapshots(ds, energy=True)
    has_energy = "energy" in ds or "particle_energy" in ds
    fig, axes = plt.subplots(1, 2 if has_energy else 1, figsize=(13 if has_energy else 7.5, 4.4), squeeze=False,
                             layout="constrained", width_ratios=[1.25, 1] if has_energy else None)
    plot_density(ds, ax=axes[0, 0], title=False)
    fig.get_layout_engine().set(wspace=0.08)  # the colour bar's label clear of the energy's axis label
    if has_energy:
        plot_energy(ds, ax=axes[0, 1])
        axes[0, 1].set_title("interaction energy", fontsize=9)
    fig.suptitle(_title(ds, 130), fontsize=10)
    return fig


def animate(ds, path, fps: int = 8, dpi: int | None = None):
    """An animation of the density over time (GIF with Pillow, MP4 with ffmpeg). Returns the path written.

    MP4 needs the ffmpeg writer; without it a GIF is written instead (logged). ``dpi``: its frames' resolution,
    default :func:`figure_options`'s (the study's [output] dpi).
    """
    plt = _plt()
    from matplotlib import animation

    path = Path(path)
    if path.suffix == ".mp4" and not animation.writers.is_available("ffmpeg"):
        log.warning("no ffmpeg writer: writing a GIF instead of %s", path)
        path = path.with_suffix(".gif")
    writer = "ffmpeg" if path.suffix == ".mp4" else "pillow"
    valid = _computed_frames(ds)
    domain, density = _densities(ds)
    over = _overlay(ds)
    fig = plt.figure(figsize=(6, 3.6), layout="constrained")
    ax = fig.add_subplot(projection=domain.projection)
    curve = len(_spatial_dims(ds)) == 1  # a curve (circle, R¹): black, with room above its peak
    vmax = float(np.nanmax(ds["density"].values)) * (1.05 if curve else 1.0)
    style = {"color": "k"} if curve else {}

    def frame(j):
        i = valid[j]
        ax.clear()
        domain.plot(density(i), ax=ax, colorbar=False, vmax=vmax, **style)
        if over is not None:
            domain.plot_points(over[1][i], ax)
        ax.set_title(f"t = {float(ds['time'][i]):.3g}")
        return []

    anim = animation.FuncAnimation(fig, frame, frames=valid.size, blit=False)
    anim.save(path, writer=writer, fps=fps, dpi=figure_options(ds, dpi=dpi)[1])
    plt.close(fig)
    return path


def _folds(ds) -> list[tuple[float, float]]:
    """(r, D) of the branch's folds: the variables fold_r, fold_noise (files of before: the attribute, D only)."""
    if "fold_noise" in ds:
        return [(float(r), float(D)) for r, D in zip(ds["fold_r"].values, ds["fold_noise"].values)]
    return [(float("nan"), float(D)) for D in json.loads(ds.attrs.get("folds", "[]"))]


def _draw_bifurcation(ax, ds, D, r, stable, Dc, lo, hi, legend: bool):
    """The branch, the uniform law, D_c, the folds and the particles' markers on ``ax`` (labels where ``legend``)."""
    label = (lambda text: text) if legend else (lambda text: None)
    for mask, style, text in ((stable, "-", "clustered state, stable"), (~stable, "--", "clustered state, unstable")):
        if mask.any():
            ax.plot(np.where(mask, D, np.nan), np.where(mask, r, np.nan), style, color="C0", label=label(text))
    ax.plot([Dc, hi], [0, 0], "-", color="k", lw=1.5, label=label("uniform law, stable"))
    ax.plot([lo, Dc], [0, 0], "--", color="k", lw=1.5, label=label("uniform law, unstable"))
    ax.axvline(Dc, color="0.5", lw=0.8, ls=":", label=label(f"uniform law loses stability: D_c = {Dc:.6g}"))
    for fr, fD in _folds(ds):
        ax.axvline(fD, color="C3", lw=0.8, ls=":", label=label(f"fold, D = {fD:.6g}"))
        if np.isfinite(fr):
            ax.plot([fD], [fr], "o", ms=3.5, color="C3")
    if "particle_order" in ds:
        noise = ds["noise"].values
        for a, n in enumerate(ds["n_particles"].values):
            v = ds["particle_order"].isel(n_particles=a).values
            mean = np.nanmean(v, axis=-1)
            runs = v.shape[-1]  # the repeated runs (not a domain's dimension)
            half = 1.96 * np.nanstd(v, axis=-1, ddof=1) / np.sqrt(runs) if runs > 1 else 0 * mean
            ax.errorbar(noise * (1 + 0.004 * (a - 0.5 * (ds.sizes["n_particles"] - 1))), mean, yerr=half, fmt="o",
                        ms=4, capsize=2, color=f"C{a + 1}",
                        label=label(f"N = {n} particles at late times: mean, 95% interval"))
            # N uniform points: E|mean|² = 1/N exactly, the level finite systems keep where the uniform law is stable
            ax.plot([Dc, hi], [1 / np.sqrt(n)] * 2, ":", lw=0.9, color=f"C{a + 1}",
                    label=label(f"N = {n}: r of N uniform points (rms 1/√N)"))


def _clear_corner(ax, ds, D, r, size=(0.36, 0.42)):
    """The inset's bounds (axes fraction) in the corner that covers the fewest of the figure's data: the branch's
    points and the particles' markers (the uniform law's line r = 0 is kept clear by starting above it)."""
    xs, ys = [D], [r]
    if "particle_order" in ds:
        for a in range(ds.sizes["n_particles"]):
            xs.append(ds["noise"].values)
            ys.append(np.nanmean(ds["particle_order"].isel(n_particles=a).values, axis=-1))
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    fx = (np.concatenate(xs) - x0) / (x1 - x0)
    fy = (np.concatenate(ys) - y0) / (y1 - y0)
    w, h = size
    corners = [(0.98 - w, 0.9 - h), (0.1, 0.12), (0.98 - w, 0.12), (0.1, 0.9 - h), (0.55 - w / 2, 0.9 - h)]
    covered = [int(np.sum((fx > cx - 0.03) & (fx < cx + w + 0.03) & (fy > cy - 0.03) & (fy < cy + h + 0.03)))
               for cx, cy in corners]
    cx, cy = corners[int(np.argmin(covered))]
    return [cx, cy, w, h]


def plot_bifurcation(ds, ax=None):
    """The bifurcation diagram of a [stationary] study in (D, r): the single-cluster branch (solid where stable,
    dashed where not), the uniform law r = 0 (stable above D_c), D_c and the folds (r, D), and the particle systems'
    long-time order parameter at each D (mean and its 95% interval over the repeats, one marker per N) with the
    level 1/√N that N uniform points keep (the finite-N offset near and above D_c: E|mean|² = 1/N). An inset
    enlarges the window around D_c and the fold; the legend stands beside the axes, clear of the data. Returns the
    Axes."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 3.9), layout="constrained")
    D, r, growth = ds["branch_noise"].values, ds["branch_r"].values, ds["branch_growth"].values
    Dc = float(ds["critical_noise"]) if "critical_noise" in ds else float(ds.attrs["critical_noise"])
    stable = growth < 0
    lo, hi = min(D.min(), Dc) * 0.95, max(D.max(), Dc, float(ds["noise"].max())) * 1.05
    _draw_bifurcation(ax, ds, D, r, stable, Dc, lo, hi, legend=True)
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.03, 1.0)
    ax.set_xlabel("noise D")
    ax.set_ylabel("order parameter r = |∫ x dρ|")
    # The inset: D_c and the folds, and the branch's r up to a little past the folds' (or 0.3 where none).
    folds = _folds(ds)
    window = [Dc] + [fD for _, fD in folds]
    span = max(max(window) - min(window), 0.04 * Dc)
    top = max([fr for fr, _ in folds if np.isfinite(fr)] + [0.2]) * 1.5
    inset = ax.inset_axes(_clear_corner(ax, ds, D, r))
    _draw_bifurcation(inset, ds, D, r, stable, Dc, min(window) - 0.6 * span, max(window) + 0.6 * span, legend=False)
    inset.set_xlim(min(window) - 0.5 * span, max(window) + 0.5 * span)
    inset.set_ylim(-0.02 * top, top)
    inset.tick_params(labelsize=7)
    inset.set_title("around D_c" + (" and the fold" if folds else ""), fontsize=7)
    ax.indicate_inset_zoom(inset, edgecolor="0.5")
    study = _study(ds)
    m = study.get("model", {})
    words = registry.words(m["kind"], m) if m.get("kind") else ""  # the kind's own words (SA/USA for self-attention)
    where = _where(ds)
    ax.set_title(f"{words}, β = {m.get('beta', 1.0):g} on {where}: stationary states "
                 f"({ds.attrs.get('transition', '')} transition)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    if "particle_order" in ds:
        ax.annotate("Finite N: N uniform points have r ≈ 1/√N (dotted), and fluctuations grow near D_c (linear response:"
                    " ~ √(D/(N(D − D_c))));\nthe particles' transition is smeared over |D − D_c| ~ 1/√N: compare "
                    "them with the branch away from D_c.",
                    xy=(0.0, -0.2), xycoords="axes fraction", va="top", fontsize=7, color="0.3")
    return ax


# ------------------------------------------------------------------ text sizes for print
#: The smallest size (points) of any glyph a figure draws, its sub- and superscripts included.
LEAST_POINTS = 7.0


def small_text(fig, least: float = LEAST_POINTS) -> list[tuple[float, str]]:
    """(size, text) of every visible text of ``fig`` with a glyph drawn below ``least`` points at the figure's size,
    smallest first; [] where none is.

    The size of a glyph is its font size as a PDF of the figure records it: a plain text's font size, and for
    mathtext each glyph's own — matplotlib draws sub- and superscripts at 0.7 of their text, and a radical sign
    of one line at 0.69, so a label carrying them needs 10.5 pt (``SCRIPTED``). Unicode script characters (S², ℝ²)
    are characters of their text's font and count at its size. The figure is drawn first (tick labels exist once
    drawn).
    """
    from matplotlib import cbook
    from matplotlib.axes import Axes
    from matplotlib.mathtext import MathTextParser
    from matplotlib.text import Text

    parser = MathTextParser("path")
    fig.canvas.draw()
    undrawn = set()  # texts kept by matplotlib but not drawn
    for ax in fig.findobj(Axes):  # insets and twins included
        if not ax.get_visible():
            undrawn |= {id(t) for t in ax.findobj(Text)}
        for axis in (ax.xaxis, ax.yaxis):
            if not ax.axison:  # set_axis_off: no ticks, no axis labels
                undrawn |= {id(t) for t in axis.findobj(Text)}
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-10 * (hi - lo)
            undrawn |= {id(label) for tick in axis.majorTicks + axis.minorTicks  # outside the view interval
                        if tick.get_loc() is not None and not lo - slack <= tick.get_loc() <= hi + slack
                        for label in (tick.label1, tick.label2)}
    found = set()
    for t in fig.findobj(Text):
        text = t.get_text()
        if not (t.get_visible() and text.strip()) or id(t) in undrawn:
            continue
        size = float(t.get_fontsize())
        sizes = []
        for line in text.split("\n"):  # matplotlib lays out each line by itself
            if not t.get_usetex() and cbook.is_math_text(line):  # each glyph at its own size
                sizes += [g[1] for g in parser.parse(line, dpi=72, prop=t.get_fontproperties().copy()).glyphs]
            elif line.strip():
                sizes.append(size)
        if sizes and min(sizes) < least:
            found.add((round(min(sizes), 2), text))
    return sorted(found)


# ------------------------------------------------------------------ files: format and resolution
_OPTIONS: ContextVar[dict] = ContextVar("meanfield_figure_options", default={})


def _checked_options(format, dpi, where: str = "") -> dict:
    """{'format': …, 'dpi': …} of the values given (None: not given), each checked: ValueError naming it."""
    from .config import FIGURE_FORMATS, MAX_DPI, MIN_DPI

    out = {}
    if format is not None:
        if format not in FIGURE_FORMATS:
            raise ValueError(f"{where}format: must be one of {', '.join(FIGURE_FORMATS)}; got {format!r}")
        out["format"] = format
    if dpi is not None:
        if isinstance(dpi, bool) or not isinstance(dpi, (int, np.integer)) or not MIN_DPI <= dpi <= MAX_DPI:
            raise ValueError(f"{where}dpi: must be an integer from {MIN_DPI} to {MAX_DPI}; got {dpi!r}")
        out["dpi"] = int(dpi)
    return out


@contextmanager
def output_options(format: str | None = None, dpi: int | None = None):
    """Within it, every figure writer (:func:`write_figures`, :func:`animate`) uses ``format`` and ``dpi`` where
    its call does not give them, in place of the study's [output] keys: the command line's ``--format`` and
    ``--dpi`` around ``run`` and ``sweep``. None leaves a setting to the study.

    Raises
    ------
    ValueError
        A format other than png, pdf, svg, or a dpi outside [50, 1200] (the message names it).
    """
    token = _OPTIONS.set(_OPTIONS.get() | _checked_options(format, dpi))
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def figure_options(ds, format: str | None = None, dpi: int | None = None) -> tuple[str, int]:
    """(format, dpi) of the figure files of ``ds``: those given here, else those of :func:`output_options`, else
    the study's [output] format and dpi (stored in the results' ``study`` attribute), else png at
    :data:`~meanfield.study.config.DEFAULT_DPI`."""
    from .config import DEFAULT_DPI

    stored = _study(ds).get("output") or {}
    chosen = {"format": "png", "dpi": DEFAULT_DPI} | _checked_options(stored.get("format"), stored.get("dpi"),
                                                                      "[output] ")
    chosen |= _OPTIONS.get() | _checked_options(format, dpi)
    return chosen["format"], chosen["dpi"]


#: rc settings of every figure file: PDF fonts embedded as TrueType (Type 42, which journals ask for; matplotlib's
#: default Type 3 is refused by some), SVG text as paths (the same glyphs without the fonts installed)
_FILE_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path"}


def write_figures(ds, path, plots: bool = True, animation: str | None = None, format: str | None = None,
                  dpi: int | None = None) -> list[Path]:
    """Write every figure that applies to ``ds`` next to ``path`` (the results file).

    Parameters
    ----------
    ds : xarray.Dataset
        A study's results.
    path : path
        The results file; the figures are ``<stem>-<figure>.<format>`` beside it.
    plots : bool
        Write the figures (False: the animation only, where asked).
    animation : {"gif", "mp4"}, optional
        Also write an animation of the density.
    format : {"png", "pdf", "svg"}, optional
        The figures' file format; default :func:`figure_options`'s (the study's [output] format, png).
    dpi : int, optional
        Dots per inch of PNG figures, of rasterised parts of vector ones and of the animation; default
        :func:`figure_options`'s (the study's [output] dpi, 150).

    Returns
    -------
    list of Path
        The files written.
    """
    plt = _plt()
    path = Path(path)
    stem = path.with_suffix("")
    format, dpi = figure_options(ds, format, dpi)
    out = []

    def save(fig, name):
        interrupts.check()  # a deferred Ctrl-C stops between figures, never inside a write
        f = Path(f"{stem}-{name}.{format}")
        with plt.rc_context(_FILE_RC):
            fig.savefig(f, dpi=dpi, bbox_inches="tight")  # no label cut off
        plt.close(fig)
        out.append(f)

    if plots:
        if "branch_r" in ds:
            save(plot_bifurcation(ds).figure, "bifurcation")
        if "diagram_critical" in ds:
            from .stationary import diagram_of

            save(diagram_of(ds).plot().figure, "transitions")
        if ds.attrs.get("sweep_dims"):
            save(plot_sweep(ds).figure, "map")
        if "density" in ds and not np.isfinite(ds["density"].values).any():  # Lagrangian frames only (R^d)
            log.info("no density frames on a grid: no density figure (the Lagrangian figure shows the points)")
        elif "density" in ds:
            if len(_spatial_dims(ds)) == 1:
                save(plot_density(ds).figure, "density")
            else:
                save(plot_snapshots(ds), "density")
                if domains.get(ds.attrs["domain"]).projection:  # a strip of maps: also one column of a paper
                    save(plot_snapshots(ds, width=COLUMN), "density-column")
        if ("energy" in ds or "particle_energy" in ds) and not ds.attrs.get("sweep_dims"):
            save(plot_energy(ds).figure, "energy")
        if "lagrangian_points" in ds and not ds.attrs.get("sweep_dims"):
            save(plot_lagrangian(ds), "lagrangian")
        if "wasserstein" in ds and not ds.attrs.get("sweep_dims"):
            save(plot_wasserstein(ds).figure, "wasserstein")
        if "rate" in ds and not ds.attrs.get("sweep_dims") and np.isfinite(ds["rate"].isel(time=-1)).any():
            save(plot_rate(ds).figure, "rate")
        if "radius_mean" in ds and not ds.attrs.get("sweep_dims"):
            save(plot_radius(ds).figure, "radius")
        if "pair_fraction" in ds and not ds.attrs.get("sweep_dims"):
            if np.nanmax(ds["pair_fraction"].values, initial=0.0) > 0:
                save(plot_clusters(ds).figure, "clusters")
            else:  # an empty panel says less than a line
                log.info("no pair of particles came within δ: no clusters figure")
    if animation and "density" in ds:
        out.append(animate(ds, f"{stem}-animation.{animation}", dpi=dpi))
    return out
