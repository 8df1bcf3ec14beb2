"""Figures of a study's results Dataset (matplotlib only).

``write_figures(ds, path)`` writes every figure that applies next to the
results file: ``<stem>-density.png`` (circle and 1-D: space-time heat map;
sphere and 2-D: snapshot grid; particles overlaid), ``-energy.png``,
``-wasserstein.png``, ``-rate.png`` (fit with its 95% band), ``-clusters.png``,
and for sweeps ``-map.png`` (a heat map over the swept key and time, e.g.
the clustering phase diagram of GLPR Figure 3). Each ``plot_*`` function takes
the Dataset (and optionally an Axes) and returns the Axes or Figure.
"""

from __future__ import annotations

import json

import logging
from pathlib import Path

import numpy as np

from .. import domains, interrupts
from ..density import Density

__all__ = ["plot_density", "plot_snapshots", "plot_energy", "plot_wasserstein", "plot_rate", "plot_clusters",
           "plot_sweep", "plot_overview", "animate", "write_figures"]

log = logging.getLogger("meanfield.study")


def _plt():
    import matplotlib.pyplot as plt  # the backend is the caller's (the command line uses Agg)

    return plt


def _overlay(ds, max_points: int = 200):
    """(N, positions (T, N, d)) of the smallest saved particle set, repeat 0, or None."""
    names = sorted((int(v[len("positions_"):]), v) for v in ds.data_vars if v.startswith("positions_"))
    if not names:
        return None
    n, name = names[0]
    x = ds[name].isel(repeat=0).values
    return n, x[:, :max_points]


def _title(ds) -> str:
    """A figure title: the study's name, the model with its matrices abbreviated (an array repr is no title),
    and the grid with its resolution."""
    import re

    model = re.sub(r"array\(\[.*?\]\)(?=[,)])", "[matrix]", " ".join(ds.attrs.get("model", "").split()))
    model = re.sub(r"\[\[.*?\]\]", "[matrix]", model)
    parts = [ds.attrs.get("title", ""), model]
    if "grid_final" in ds.attrs:
        grid = ds.attrs["grid"] if ds.attrs["grid"] == ds.attrs["grid_final"] else \
            f"{ds.attrs['grid']} → {ds.attrs['grid_final']}"
        parts.append(grid)
    return " · ".join(p for p in parts if p)


def _study(ds) -> dict:
    """The study's tables, as stored in the results file's attributes (empty where absent)."""
    import json

    return json.loads(ds.attrs.get("study", "{}"))


def _pi_ticks(axis) -> None:
    """Ticks at 0, π/2, π, 3π/2, 2π on an angle axis (``ax.xaxis`` or ``ax.yaxis``)."""
    axis.set_ticks(np.pi * np.array([0, 0.5, 1, 1.5, 2]), ["0", "π/2", "π", "3π/2", "2π"])


def _mark_layers(ax, ds, color="0.45") -> None:
    """Dashed vertical lines at the layer boundaries of a model with per-layer weights (``attrs['layer_boundaries']``,
    where the field jumps), on an axis of time."""
    import json

    for t in json.loads(ds.attrs.get("layer_boundaries", "[]")):
        ax.axvline(t, color=color, ls="--", lw=0.7, alpha=0.7, zorder=0.5)


def _mark_refinements(ax, ds) -> None:
    """Dotted vertical lines at the times the grid was refined, labelled with the new resolution."""
    import json

    for t, _, new in json.loads(ds.attrs.get("refinements", "[]")):
        ax.axvline(t, color="w", ls=":", lw=0.8, alpha=0.8)
        ax.annotate(f"{int(new)}", (t, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -9),
                    textcoords="offset points", color="w", fontsize=7)


def _snapshot_frames(ds, count: int) -> np.ndarray:
    """At most ``count`` computed frames at exactly equally spaced times t_0 + i s, i = 0, 1, ...: of the
    spacings s the output times allow, the one spanning the longest interval with at least three frames
    (then the most frames); all frames where there are at most ``count``."""
    valid = _computed_frames(ds)
    t = ds["time"].values[valid]
    if valid.size <= count:
        return valid
    tol = 1e-9 * max(1.0, abs(t[-1] - t[0]))
    best, best_key = valid[[0, -1]], (1.0, 2)
    for j in range(1, valid.size):
        step = t[j] - t[0]
        chosen = []
        for i in range(count):
            hit = np.flatnonzero(np.abs(t - (t[0] + i * step)) <= tol)
            if not hit.size:
                break
            chosen.append(hit[0])
        key = (round((len(chosen) - 1) * step / (t[-1] - t[0]), 9), len(chosen))  # spans equal to round-off tie
        if len(chosen) >= 3 and (best_key[1] < 3 or key > best_key):
            best, best_key = valid[chosen], key
    return best


def _computed_frames(ds) -> np.ndarray:
    """Indices of the output times with a density (frames after a lost resolution are NaN)."""
    rho = ds["density"].values
    return np.flatnonzero(np.isfinite(rho).all(axis=tuple(range(1, rho.ndim))))


def _spatial_dims(ds):
    """The density's space dimensions (all but time), as its grid names them."""
    return list(ds["density"].dims[1:])


def plot_density(ds, ax=None, cmap="magma"):
    """Space-time heat map of ρ(t, θ) (circle) or ρ(t, x) (1-D), particles overlaid. Returns the Axes."""
    plt = _plt()
    dims = _spatial_dims(ds)
    if len(dims) != 1:
        raise ValueError(f"plot_density draws one space dimension; this density has {dims} (use plot_snapshots).")
    s = dims[0]
    domain = domains.get(ds.attrs["domain"])
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    rho = ds["density"].transpose("time", s).values
    y = ds[s].values
    if domain.periodic:  # close the circle: θ = 2π (its length) is θ = 0
        y, rho = np.append(y, y[0] + domain.volume), np.hstack([rho, rho[:, :1]])
    im = ax.pcolormesh(ds["time"].values, y, rho.T, shading="nearest", cmap=cmap)
    ax.figure.colorbar(im, ax=ax, label="ρ")
    title = _title(ds)
    over = _overlay(ds)
    if over is not None:
        n, x = over
        pos = np.reshape(domain.coordinates(x), x.shape[:-1])  # θ, or x in R¹
        ax.plot(ds["time"].values, pos, ".", ms=1.5, color="c", alpha=0.7)
        title += f"\nwith {min(n, pos.shape[1])} of N = {n} particles (cyan)" + _noise_note(ds, n)
    _mark_refinements(ax, ds)
    _mark_layers(ax, ds, color="w")
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("t")
    ax.set_ylabel(domain.coordinate_label)
    t = ds["time"].values
    if t.size > 1:
        ax.set_xlim(t[0], t[-1])
    if domain.periodic:
        _pi_ticks(ax.yaxis)
    else:  # R¹
        ax.set_ylim(*_extent(y, (np.nan_to_num(rho) >= 1e-3 * np.nanmax(rho)).any(axis=0),
                             None if over is None else pos))
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
        return (f"; their sampling noise N^(-1/2) = {n ** -0.5:.2g} exceeds the perturbation {amplitude:g}, "
                "so they need not follow the density's clusters")
    return ""


def _densities(ds):
    """(domain, frame i ↦ Density): the results' densities on the grid their coordinates describe."""
    domain = domains.get(ds.attrs["domain"])
    dims = _spatial_dims(ds)
    grid = domain.grid_type.from_coordinates({d: ds[d].values for d in dims})
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


def plot_snapshots(ds, ncols: int = 3, times=None, cmap="magma", energy: bool = False):
    """Snapshot grid of the density (S²: Mollweide maps; R²: images), particles overlaid; with ``energy``,
    the energy curve in a last row. Returns the Figure."""
    plt = _plt()
    shown = _snapshot_frames(ds, 2 * ncols) if times is None else np.asarray(times)
    rows = -(-len(shown) // ncols)
    domain, density = _densities(ds)
    energy = energy and ("energy" in ds or "particle_energy" in ds)
    fig = plt.figure(figsize=(4.2 * ncols, (2.6 if domain.projection else 3.6) * rows + (2.6 if energy else 0) + 0.9),
                     layout="constrained")
    over = _overlay(ds)
    grid_rows = rows + (1 if energy else 0)
    style, label = {}, "ρ"
    if domain.projection and "lagrangian_points" in ds and hasattr(domain.chart, "cell_averages"):  # a map
        density = _cell_frames(ds, domain, density)
        # clusters reach 1e3 × the uniform density on the cells: a log scale, cells drawn as they are (a
        # spectral synthesis would ring), empty cells black
        from matplotlib.colors import LogNorm

        vmax = max(float(np.nanmax(density(i).values)) for i in shown)
        style = {"cells": True, "norm": LogNorm(vmin=1e-6 * vmax, vmax=vmax, clip=True)}
        cmap, label = plt.get_cmap(cmap).with_extremes(bad="black", under="black"), "ρ (cell averages, log scale)"
    else:
        style["vmax"] = float(np.nanmax(ds["density"].values[shown]))  # one colour scale for every panel
    axes = []
    for j, i in enumerate(shown):
        ax = fig.add_subplot(grid_rows, ncols, j + 1, projection=domain.projection)
        domain.plot(density(i), ax=ax, colorbar=False, cmap=cmap, **style)
        if over is not None:
            domain.plot_points(over[1][i], ax)
        if domain.projection:  # longitudes labelled at −120°, 0°, 120° (the map's own labels crowd)
            ax.set_xticks(np.radians([-120, 0, 120]), ["−120°", "0°", "120°"], fontsize=6, color="0.3")
            ax.tick_params(axis="y", labelsize=6)
        else:
            _zoom(ax, ds, density(i), over[1][i] if over is not None else None)
        ax.set_title(f"t = {float(ds['time'][i]):.3g}", fontsize=9)
        axes.append(ax)
    if axes and axes[0].collections:
        fig.colorbar(axes[0].collections[0], ax=axes, label=label, shrink=0.8)
    if energy:
        plot_energy(ds, ax=fig.add_subplot(grid_rows, 1, grid_rows))
    suffix = f" (N = {over[0]} particles, cyan)" if over is not None else ""
    fig.suptitle(_title(ds) + suffix, fontsize=9)
    return fig


def _zoom(ax, ds, density, points) -> None:
    """Limits of a 2-D panel: where the density exceeds 1e-3 of its maximum or particles lie, with a margin
    (a Gaussian in a large box otherwise fills a corner of it)."""
    g = density.grid
    if getattr(g, "dim", None) != 2:
        return
    rho = np.asarray(density.values)
    on = rho >= 1e-3 * np.nanmax(rho)
    ax_x, ax_y = g.axes
    ax.set_xlim(*_extent(ax_x, on.any(axis=1), None if points is None else points[:, 0]))
    ax.set_ylim(*_extent(ax_y, on.any(axis=0), None if points is None else points[:, 1]))


def _band(ax, t, values, label, color, ls="-"):
    """Mean over repeats with a ±1 standard deviation band."""
    import warnings

    with warnings.catch_warnings():  # times with nothing computed (NaN in every repeat) stay NaN, silently
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(values, axis=0)
        s = np.nanstd(values, axis=0)
    ax.plot(t, m, color=color, ls=ls, label=label)
    if values.shape[0] > 1:
        ax.fill_between(t, m - s, m + s, color=color, alpha=0.15, lw=0)


def _bands_over_n(ax, ds, name):
    """``_band`` of the particle variable ``name`` (n_particles, repeat, time), a colour per N."""
    for i, n in enumerate(ds["n_particles"].values):
        _band(ax, ds["time"].values, ds[name].isel(n_particles=i).values, f"N = {n}", f"C{i}")


def plot_energy(ds, ax=None):
    """E_β of the density (every step) and of the particle systems (mean ± sd over repeats). Returns the Axes."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
        ax.set_title(_title(ds), fontsize=7, wrap=True)
    if "step_energy" in ds and ds["step_energy"].size and "lagrangian_points" not in ds:
        ax.plot(ds["step_time"], ds["step_energy"], color="k", label="density")
    elif "energy" in ds:
        ax.plot(ds["time"], ds["energy"], "k.-", label="density")
    if "particle_energy" in ds:
        _bands_over_n(ax, ds, "particle_energy")
        beta = _beta(ds)
        if beta is not None:  # E_β(μ^N) counts the pairs i = j: e^β/(2βN) above the mean-field value
            ns = ", ".join(f"{np.exp(beta) / (2 * beta * n):.2g}" for n in ds["n_particles"].values)
            ax.text(0.99, 0.02, f"particle energies include the self-interaction e^β/(2βN) = {ns}",
                    transform=ax.transAxes, ha="right", va="bottom", fontsize=6, color="0.3")
    ax.set_xlabel("t")
    _mark_layers(ax, ds)
    ax.set_ylabel("E_β")
    ax.legend(fontsize=8)
    return ax


def _beta(ds):
    """β of the study's model (None if it has none, or β = 0)."""
    beta = _study(ds).get("model", {}).get("beta")
    return float(beta) if beta else None


def plot_lagrangian(ds):
    """The Lagrangian measure through collapse: its points in space-time coloured by log₁₀ ρ (left), and the
    cluster count with E_β of the density and of the particle systems (right). Returns the Figure."""
    plt = _plt()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), constrained_layout=True)
    t = ds["time"].values
    x = ds["lagrangian_points"].values
    logr = ds["lagrangian_log_density"].values / np.log(10.0)
    ok = np.isfinite(logr)
    tt = np.broadcast_to(t[:, None], logr.shape)[ok]
    domain = domains.get(ds.attrs["domain"])
    if domain.periodic:  # the angle θ ∈ [0, 2π)
        y, ylabel = domain.coordinates(x[ok]), domain.coordinate_label
    else:
        y, ylabel = x[..., 0][ok], "x₁"
    order = np.argsort(logr[ok])  # the densest points on top
    sc = ax.scatter(tt[order], y[order], c=logr[ok][order], s=1, cmap="magma", rasterized=True)
    fig.colorbar(sc, ax=ax, label="log₁₀ ρ at the points")
    ax.set_xlabel("t")
    _mark_layers(ax, ds)
    ax.set_ylabel(ylabel)
    if domain.periodic:
        _pi_ticks(ax.yaxis)
    ax.set_title("Lagrangian measure (points carry exact log ρ)")
    bx.step(t, ds["cluster_count"], where="post", color="C3", label="clusters (mean field)")
    bx.set_xlabel("t")
    _mark_layers(bx, ds)
    bx.set_ylabel("clusters", color="C3")
    if "energy" in ds or "particle_energy" in ds:
        ex = bx.twinx()
        plot_energy(ds, ax=ex)
        ex.set_xlabel("t")
        _mark_layers(ex, ds)
    bx.set_title("cluster count and energy: plateaus are metastable states")
    return fig


def plot_wasserstein(ds, ax=None):
    """W_p(μ_t, μ^N_t) against t: a colour per N, a line style per p (mean ± sd over repeats). Returns the Axes."""
    plt = _plt()
    ps = ds["p"].values
    if ax is None:
        _, axes = plt.subplots(1, len(ps), figsize=(5.5 * len(ps), 4), squeeze=False, sharey=True,
                               layout="constrained")
        axes = list(axes[0])
    else:
        axes = [ax] * len(ps)
    w = ds["wasserstein"].values
    for a, p in enumerate(ps):
        for i, n in enumerate(ds["n_particles"].values):
            vals = ds["wasserstein"].isel(p=a, n_particles=i).values
            _band(axes[a], ds["time"].values, vals, f"N = {n}", f"C{i}", ls=("-", "--", ":", "-.")[a % 4])
        if np.any(np.isfinite(w[a]) & (w[a] > 0)):  # an interrupted run may hold no distance yet
            axes[a].set_yscale("log")
        else:
            axes[a].text(0.5, 0.5, "no distance computed (interrupted run)", transform=axes[a].transAxes,
                         ha="center")
        axes[a].set_title(f"W{p:g}(density, particles), mean ± sd over {ds.sizes.get('repeat', 1)} repeats",
                          fontsize=9)
        axes[a].set_xlabel("t")
        _mark_layers(axes[a], ds)
        axes[a].legend(fontsize=7)
    axes[0].set_ylabel(" / ".join(f"W{p:g}" for p in ps) if len(set(axes)) == 1 else f"W{ps[0]:g}")
    for a in range(1, len(ps)):
        if axes[a] is not axes[0]:
            axes[a].set_ylabel(f"W{ps[a]:g}")
    axes[0].figure.suptitle(_title(ds), fontsize=8)
    return axes[0]


def plot_rate(ds, ax=None, time: int = -1, p_index: int = 0):
    """log W_p against log N at one output time, the fitted N^α and its 95% band. Returns the Axes."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4))
        ax.set_title(_title(ds), fontsize=7, wrap=True)
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
        ax.loglog(np.exp(grid), np.exp(y0 + a * (grid - x0)), color="C3", label=f"N^{a:.3f}")
        band = np.exp(y0 + np.outer([lo, hi], grid - x0))
        ax.fill_between(np.exp(grid), band.min(axis=0), band.max(axis=0), color="C3", alpha=0.2,
                        label=f"95% interval [{lo:.3f}, {hi:.3f}]")
        ax.loglog(np.exp(grid), np.exp(y0 - 0.5 * (grid - x0)), "k--", lw=0.8, label="N^-1/2")
    ax.set_xlabel("N")
    ax.set_ylabel(f"W{p:g}{' / √(log N)' if corrected else ''} at t = {float(ds['time'][time]):.3g}")
    ax.legend(fontsize=8)
    return ax


def plot_clusters(ds, ax=None):
    """Fraction of particle pairs within δ against t, per N (mean ± sd over repeats). Returns the Axes."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
        ax.set_title(_title(ds), fontsize=7, wrap=True)
    _bands_over_n(ax, ds, "pair_fraction")
    ax.set_xlabel("t")
    _mark_layers(ax, ds)
    ax.set_ylabel(ds["pair_fraction"].attrs.get("long_name", "pair fraction"), fontsize=8)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8)
    return ax


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
    da = ds[variable]
    da = da.mean([d for d in da.dims if d not in (key, "time")], keep_attrs=True)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    values = ds[key].values
    if values.size <= 4:  # a heat map would stretch a few values over wide bands: one curve each
        for i, v in enumerate(values):
            ax.plot(ds["time"].values, da.sel({key: v}).values, color=f"C{i}", label=f"{key} = {v}")
        ax.set_xlabel("t")
        _mark_layers(ax, ds)
        ax.set_ylabel(da.attrs.get("long_name", variable), fontsize=8)
        ax.legend(fontsize=8)
        ax.set_title(f"{ds.attrs.get('title', '')}: {variable}", fontsize=9)
        return ax
    im = ax.pcolormesh(values, ds["time"].values, da.transpose("time", key).values, shading="nearest",
                       cmap="Blues" if variable == "pair_fraction" else "viridis")
    ax.figure.colorbar(im, ax=ax, label=da.attrs.get("long_name", variable))
    ax.set_xlabel(key)
    ax.set_ylabel("t")
    ax.set_title(f"{ds.attrs.get('title', '')}: {variable}", fontsize=9)
    return ax


def plot_overview(ds):
    """The density over time and its energy in one figure (the demo's): a heat map beside the energy
    for one space dimension, snapshots above it otherwise. Returns the Figure."""
    plt = _plt()
    if len(_spatial_dims(ds)) != 1:
        return plot_snapshots(ds, energy=True)
    has_energy = "energy" in ds or "particle_energy" in ds
    fig, axes = plt.subplots(1, 2 if has_energy else 1, figsize=(12 if has_energy else 7, 4), squeeze=False)
    plot_density(ds, ax=axes[0, 0])
    if has_energy:
        plot_energy(ds, ax=axes[0, 1])
    fig.suptitle(_title(ds), fontsize=9)
    fig.tight_layout()
    return fig


def animate(ds, path, fps: int = 8):
    """An animation of the density over time (GIF with Pillow, MP4 with ffmpeg). Returns the path written.

    MP4 needs the ffmpeg writer; without it a GIF is written instead (logged).
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
    fig = plt.figure(figsize=(6, 3.6))
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
    anim.save(path, writer=writer, fps=fps)
    plt.close(fig)
    return path


def plot_bifurcation(ds, ax=None):
    """The bifurcation diagram of a [stationary] study in (D, r): the single-cluster branch (solid where stable,
    dashed where not), the uniform law r = 0 (stable above D_c), D_c and the folds, and the particle systems'
    long-time order parameter at each D (mean and its 95% interval over the repeats, one marker per N). Returns
    the Axes."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
    D, r, growth = ds["branch_noise"].values, ds["branch_r"].values, ds["branch_growth"].values
    Dc = float(ds.attrs["critical_noise"])
    stable = growth < 0
    for mask, style, label in ((stable, "-", "clustered state, stable"), (~stable, "--", "clustered state, unstable")):
        if mask.any():
            ax.plot(np.where(mask, D, np.nan), np.where(mask, r, np.nan), style, color="C0", label=label)
    lo, hi = min(D.min(), Dc) * 0.95, max(D.max(), Dc, float(ds["noise"].max())) * 1.05
    ax.plot([Dc, hi], [0, 0], "-", color="k", lw=1.5, label="uniform law, stable")
    ax.plot([lo, Dc], [0, 0], "--", color="k", lw=1.5, label="uniform law, unstable")
    ax.axvline(Dc, color="0.5", lw=0.8, ls=":", label=f"$D_c$ = {Dc:.4g}")
    for fold in json.loads(ds.attrs.get("folds", "[]")):
        ax.axvline(fold, color="C3", lw=0.8, ls=":", label=f"fold, D = {fold:.4g}")
    if "particle_order" in ds:
        noise = ds["noise"].values
        for a, n in enumerate(ds["n_particles"].values):
            v = ds["particle_order"].isel(n_particles=a).values
            mean = np.nanmean(v, axis=-1)
            half = 1.96 * np.nanstd(v, axis=-1, ddof=1) / np.sqrt(v.shape[-1]) if v.shape[-1] > 1 else 0 * mean
            ax.errorbar(noise * (1 + 0.004 * (a - 0.5 * (ds.sizes["n_particles"] - 1))), mean, yerr=half, fmt="o",
                        ms=4, capsize=2, color=f"C{a + 1}", label=f"N = {n} particles, long time")
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.03, 1.0)
    ax.set_xlabel("noise D")
    ax.set_ylabel("order parameter r = |∫ x dρ|")
    study = _study(ds)
    m = study.get("model", {})
    words = ("SA" if m.get("normalized", True) else "USA") if m.get("kind") == "self-attention" else m.get("kind", "")
    where = {2: "S¹", 3: "S²"}.get(ds.attrs.get("dimension"), f"S^{int(ds.attrs.get('dimension', 3)) - 1}")
    ax.set_title(f"{words}, β = {m.get('beta', 1.0):g} on {where}: stationary states "
                 f"({ds.attrs.get('transition', '')} transition)")
    ax.legend(fontsize=7, loc="lower left")
    return ax


def write_figures(ds, path, plots: bool = True, animation: str | None = None) -> list[Path]:
    """Write every figure that applies to ``ds`` next to ``path`` (the results file). Returns the files."""
    plt = _plt()
    path = Path(path)
    stem = path.with_suffix("")
    out = []

    def save(fig, name):
        interrupts.check()  # a deferred Ctrl-C stops between figures, never inside a write
        f = Path(f"{stem}-{name}.png")
        fig.savefig(f, dpi=110, bbox_inches="tight")  # no label cut off
        plt.close(fig)
        out.append(f)

    if plots:
        if "branch_r" in ds:
            save(plot_bifurcation(ds).figure, "bifurcation")
        if ds.attrs.get("sweep_dims"):
            save(plot_sweep(ds).figure, "map")
        if "density" in ds and not np.isfinite(ds["density"].values).any():  # Lagrangian frames only (R^d)
            log.info("no density frames on a grid: no density figure (the Lagrangian figure shows the points)")
        elif "density" in ds:
            if len(_spatial_dims(ds)) == 1:
                save(plot_density(ds).figure, "density")
            else:
                save(plot_snapshots(ds), "density")
        if ("energy" in ds or "particle_energy" in ds) and not ds.attrs.get("sweep_dims"):
            save(plot_energy(ds).figure, "energy")
        if "lagrangian_points" in ds and not ds.attrs.get("sweep_dims"):
            save(plot_lagrangian(ds), "lagrangian")
        if "wasserstein" in ds and not ds.attrs.get("sweep_dims"):
            save(plot_wasserstein(ds).figure, "wasserstein")
        if "rate" in ds and not ds.attrs.get("sweep_dims") and np.isfinite(ds["rate"].isel(p=0, time=-1)):
            save(plot_rate(ds).figure, "rate")
        if "pair_fraction" in ds and not ds.attrs.get("sweep_dims"):
            if np.nanmax(ds["pair_fraction"].values, initial=0.0) > 0:
                save(plot_clusters(ds).figure, "clusters")
            else:  # an empty panel says less than a line
                log.info("no pair of particles came within δ: no clusters figure")
    if animation and "density" in ds:
        out.append(animate(ds, f"{stem}-animation.{animation}"))
    return out
