"""Figure pieces shared by the domains' plotting modules and the study figures (matplotlib only, imported on use).

One convention for every figure of a density:

- a density's colour scale comes from :func:`density_norm`: a logarithmic scale over :data:`LOG_DECADES` decades
  below the maximum where the maximum passes ten times the reference density (the uniform law on a compact
  domain: clusters reach 10³ × it and more), a square-root scale from 0 for a few times it, else linear from 0;
- its colour bar is labelled by :func:`density_label`: "ρ", "ρ (log scale)" or "ρ (square-root scale)", with
  what the values are ("cell averages", "at the points") in brackets beside it;
- text over a dark map is white with a black outline (:data:`OUTLINED`);
- the labels of a log axis name values, not only powers of ten (:func:`log_ticks`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["plot_energy", "density_norm", "density_label", "density_colormap", "for_norm", "log_ticks", "outlined",
           "snapshot_frames", "LOG_DECADES", "ENERGY_LABEL"]

#: Decades of a logarithmic density scale below its maximum (values below are drawn in its lowest colour).
LOG_DECADES = 4.0
#: The ratio max ρ / reference density above which a density is drawn on a logarithmic scale.
LOG_RATIO = 10.0
#: The ratio above which (up to :data:`LOG_RATIO`) it is drawn on a square-root scale.
SQRT_RATIO = 2.5
#: The y label of an energy axis (mathtext).
ENERGY_LABEL = r"interaction energy $E_\beta$"


def outlined(**kwargs) -> dict:
    """Text properties of labels drawn over a dark map: white with a black outline (readable on any colour)."""
    from matplotlib import patheffects

    return {"color": "white", "path_effects": [patheffects.withStroke(linewidth=1.6, foreground="black")]} | kwargs


def density_norm(values, reference: float | None = None, *, log: bool | None = None, vmax: float | None = None):
    """The colour norm of a density whose values are ``values`` (any shape, NaN ignored).

    ``log=None`` chooses by the ratio of the maximum to ``reference`` (the uniform density; by default, on a domain
    without one, the density its mass sees on average, Σρ²/Σρ: a single bump, Gaussian or sharp, stays linear):
    above :data:`LOG_RATIO`, a logarithmic norm over :data:`LOG_DECADES` decades below the maximum (clusters);
    above :data:`SQRT_RATIO`, a square-root norm from 0 (a linear scale would leave the near-uniform density
    dark); else linear from 0. ``log=True``/``False`` forces a log/linear norm. Returns a matplotlib ``LogNorm``,
    ``PowerNorm`` or ``Normalize``.
    """
    from matplotlib.colors import LogNorm, Normalize, PowerNorm

    v = np.asarray(values, dtype=float)
    finite = v[np.isfinite(v)]
    top = float(vmax) if vmax is not None else (float(finite.max()) if finite.size else 1.0)
    if not np.isfinite(top) or top <= 0:
        top = 1.0
    ratio = None
    if log is None:
        if reference is None:
            pos = finite[finite > 0]
            reference = float(np.sum(pos ** 2) / np.sum(pos)) if pos.size else top
        ratio = top / reference
        log = ratio > LOG_RATIO
    if log:
        return LogNorm(vmin=top * 10.0 ** -LOG_DECADES, vmax=top, clip=False)
    if ratio is not None and ratio > SQRT_RATIO:
        return PowerNorm(0.5, vmin=0.0, vmax=top)
    return Normalize(vmin=0.0, vmax=top)


def density_label(symbol: str = "ρ", norm=None, what: str | None = None) -> str:
    """The colour-bar label of a density: ``symbol``, the scale where it is not linear ("log scale", "square-root
    scale"), and what the values are."""
    from matplotlib.colors import LogNorm, PowerNorm

    scale = "log scale" if isinstance(norm, LogNorm) else "square-root scale" if isinstance(norm, PowerNorm) else None
    parts = [p for p in (what, scale) if p]
    return f"{symbol} ({', '.join(parts)})" if parts else symbol


def density_colormap(cmap="magma"):
    """``cmap`` with values below a log scale (and empty cells, NaN) in its lowest colour: a density near 0 is
    dark, never white."""
    import matplotlib.pyplot as plt

    cm = plt.get_cmap(cmap) if isinstance(cmap, str) else cmap
    low = cm(0.0)
    return cm.with_extremes(bad=low, under=low)


def log_ticks(axis, decades: bool = False) -> None:
    """Readable labels on a logarithmic ``axis`` (``ax.yaxis``), for its present range: ticks at 10^k, at 1, 2, 5 ×
    10^k, or where the range spans less than a decade at round numbers inside it (at least two), labelled as
    numbers. ``decades``: at 10^k only wherever the range spans a decade or more (a short colour bar)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval())
    if not (lo > 0 and np.isfinite(hi)):
        return
    span = np.log10(hi / lo)
    if span < 1.0:
        ticks = [v for v in MaxNLocator(5, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi) if lo <= v <= hi and v > 0]
        if len(ticks) < 2:
            ticks = [v for v in MaxNLocator(8, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi) if lo <= v <= hi]
        axis.set_major_locator(FixedLocator(ticks))
    else:
        axis.set_major_locator(LogLocator(base=10.0, subs=(1.0,) if span > 4 or decades else (1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: _number(v)))
    axis.set_minor_formatter(NullFormatter())


def _number(v: float) -> str:
    """A tick label: 0.05, 0.15, 300 as numbers, powers of ten in mathtext beyond [1e-4, 1e3]."""
    if v <= 0 or not np.isfinite(v):
        return ""
    e = int(np.floor(np.log10(v) + 1e-9))
    if -4 <= e <= 3:
        return f"{v:.4g}"
    m = v / 10.0 ** e
    return f"$10^{{{e}}}$" if abs(m - 1) < 1e-6 else f"${m:.2g}\\times10^{{{e}}}$"


def plot_energy(solution, ax=None, **kwargs):
    """E_β along a solution (every accepted step), grid refinements as dotted lines (in the legend). Returns the
    Axes."""
    import matplotlib.pyplot as plt

    if solution.energy_steps is None:
        raise ValueError("this solution has no energy (non-zonal model, or β > 709).")
    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    ax.plot(solution.t_steps, solution.energy_steps, **({"label": "density"} | kwargs))
    for k, (t, _, _) in enumerate(solution.refinements):
        ax.axvline(t, color="0.6", lw=0.8, ls=":", label="grid refined" if k == 0 else None)
    ax.set_xlabel("t")
    ax.set_ylabel(ENERGY_LABEL)
    if solution.refinements:
        ax.legend(fontsize=8)
    return ax


#: The font size (points) of a label that carries sub- or superscripts or a radical: mathtext draws scripts at 0.7
#: of it and a one-line radical sign at 0.69, so they print at 7.35 and 7.25 pt, above the least a figure has (7 pt;
#: :func:`meanfield.study.figures.small_text` measures it; with matplotlib's default math font, DejaVu Sans).
SCRIPTED = 10.5

#: Panels per row of a snapshot grid of m panels: every grid full (no empty panel), at most five across.
LAYOUTS = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 3, 8: 4, 9: 3}


def snapshot_frames(times, max_panels: int = 9) -> tuple[np.ndarray, int]:
    """(indices into ``times``, columns): the frames of a snapshot grid, always the first and the last, at equally
    spaced times where the output times allow it, in a grid without an empty panel (:data:`LAYOUTS`).

    All frames where there are at most five (or 6, 8, 9 and at most ``max_panels``); otherwise the most panels
    m >= 4, m <= ``max_panels``, of :data:`LAYOUTS` whose times t_0 + i (t_end − t_0)/(m − 1) are all output
    times, and where none are, the output times nearest to those of the most panels allowed."""
    t = np.asarray(times, dtype=float)
    k = t.size
    if k == 0:
        return np.zeros(0, dtype=int), 1
    if k in LAYOUTS and k <= max(max_panels, 5):
        return np.arange(k), LAYOUTS[k]
    sizes = [m for m in sorted(LAYOUTS, reverse=True) if 2 <= m <= min(max_panels, k)]
    span = t[-1] - t[0]
    for m in (m for m in sizes if m >= 4):
        idx = np.abs(t[None, :] - np.linspace(t[0], t[-1], m)[:, None]).argmin(axis=1)
        if np.unique(idx).size == m and np.max(np.abs(t[idx] - np.linspace(t[0], t[-1], m))) <= 1e-9 * max(1.0, span):
            return idx, LAYOUTS[m]
    for m in sizes:  # no equally spaced choice: the nearest output times
        idx = np.unique(np.abs(t[None, :] - np.linspace(t[0], t[-1], m)[:, None]).argmin(axis=1))
        if idx.size in LAYOUTS:
            return idx, LAYOUTS[idx.size]
    return np.array([0, k - 1]), 2


def for_norm(values, norm) -> np.ndarray:
    """``values`` ready for ``norm``: on a log scale, values <= 0 (round-off, spectral ringing) raised below its
    lowest level (drawn in the lowest colour) rather than masked; NaN stays NaN."""
    from matplotlib.colors import LogNorm

    v = np.asarray(values, dtype=float)
    if isinstance(norm, LogNorm):
        with np.errstate(invalid="ignore"):
            v = np.where(v > 0, v, 0.5 * norm.vmin)
    return v
