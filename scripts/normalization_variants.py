"""Clustering under post-, pre-, peri-LN and nGPT from one start: the figure of Karagodin, Ge, Polyanskiy & Rigollet
(arXiv 2510.22026), docs/MATH.md §10.

n tokens drawn uniformly on S^{d-1} (one draw per repeat, the same for every variant) move under self-attention
(SA, β, Q = K = V = I) normalised four ways (:class:`meanfield.models.Normalization`): post-LN θ̇ = P_θA; pre-LN
ẋ = A; peri-LN ẋ = A/|A| (tokens x = rθ started at r = 1); nGPT θ̇ = αP_θA/|A|; A the heads' average at the
directions θ = x/|x|. Each is integrated by :func:`particles.simulate` (RK4, dt = ``--dt``), and at every output
time the fraction of ordered pairs i ≠ j with ⟨θ_i, θ_j⟩ > 1 − δ (δ = 10⁻³: > 0.999) is measured on the directions
(:func:`particles.clusters.pair_fraction`; the mean over the repeats is drawn, with its range as a band).

The equiangular reduction of MATH.md §10 (:func:`meanfield.analysis.exact.normalized_equiangular`) gives the asymptotic
rates written in the caption: 1 − ρ ~ e^{−2t} (post-LN), ~ t^{−2} (pre- and peri-LN: the radius grows like t and
slows its own direction), ~ e^{−2αt} (nGPT). The same runs are a study each: examples/normalization_variants.toml
with [model] normalization = "post", "pre", "peri" or "ngpt" (alpha).

Run:  python scripts/normalization_variants.py                      (about twenty seconds on two cores)
      python scripts/normalization_variants.py --n 16 --t-end 10 --repeats 2 --out /tmp/variants.png   (quick)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import particles as pt
from meanfield.models import Normalization, SelfAttention, Transformer
from particles import clusters

#: the variants drawn, with their labels and colours
VARIANTS = (("post", "post-LN"), ("pre", "pre-LN"), ("peri", "peri-LN"), ("ngpt", "nGPT"))


def caption(alpha: float) -> str:
    """The figure's caption: what is drawn and the rates of 1 − ρ of the equiangular reduction (MATH.md §10)."""
    return ("Fraction of pairs with ⟨θ_i, θ_j⟩ > 0.999 (directions θ = x/|x|) from one uniform start. Equiangular "
            f"reduction (MATH.md §10): 1 − ρ ~ e^(−2t) post-LN; ~ t^(−2) pre-/peri-LN (r ~ t); ~ e^(−2αt) nGPT, "
            f"α = {alpha:g}.")


def run(n: int, d: int, beta: float, alpha: float, t_end: float, frames: int, repeats: int, dt: float,
        delta: float, seed: int) -> tuple[np.ndarray, dict]:
    """The output times and, per variant, the pair fractions (repeats, times) and the mean radius (repeats, times)
    of the same initial tokens."""
    t = np.linspace(0.0, t_end, frames)
    x0 = pt.uniform_sphere(n, d, rng=np.random.default_rng(seed), batch=repeats)
    out = {}
    for kind, _ in VARIANTS:
        norm = Normalization(kind, alpha=alpha if kind == "ngpt" else None)
        model = SelfAttention(beta) if kind == "post" else Transformer(SelfAttention(beta), normalization=norm)
        tr = pt.simulate(model, x0, t, dt=dt, progress=False)
        theta = np.moveaxis(tr.direction, 0, 1)  # (repeats, times, n, d)
        out[kind] = {"pairs": clusters.pair_fraction(np.ascontiguousarray(theta), delta),
                     "radius": np.moveaxis(tr.radius.mean(axis=-1), 0, 1)}
    return t, out


def draw(t, out, alpha: float, delta: float, title: str, path: Path) -> Path:
    """One curve per variant (mean over repeats, the repeats' range shaded), the caption under the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
    for i, (kind, label) in enumerate(VARIANTS):
        p = out[kind]["pairs"]
        ax.plot(t, p.mean(axis=0), color=f"C{i}", label=label + (f", α = {alpha:g}" if kind == "ngpt" else ""))
        if p.shape[0] > 1:
            ax.fill_between(t, p.min(axis=0), p.max(axis=0), color=f"C{i}", alpha=0.15, lw=0)
    ax.set_xlabel("t (depth)")
    ax.set_ylabel(rf"fraction of pairs with $\langle \theta_i, \theta_j\rangle > {1 - delta:g}$")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=8, loc="lower right", title="shaded: range over the repeats", title_fontsize=7)
    fig.text(0.01, -0.01, caption(alpha), fontsize=7, ha="left", va="top", wrap=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32, help="tokens (default 32)")
    ap.add_argument("--d", type=int, default=3, help="dimension of the tokens (default 3: S²)")
    ap.add_argument("--beta", type=float, default=1.0, help="β (default 1)")
    ap.add_argument("--alpha", type=float, default=0.2, help="nGPT's α (default 0.2)")
    ap.add_argument("--t-end", type=float, default=60.0, help="final depth (default 60)")
    ap.add_argument("--frames", type=int, default=241, help="output times (default 241)")
    ap.add_argument("--repeats", type=int, default=8, help="independent starts (default 8)")
    ap.add_argument("--dt", type=float, default=0.02, help="RK4 step (default 0.02)")
    ap.add_argument("--delta", type=float, default=1e-3, help="pairs with ⟨θ_i, θ_j⟩ > 1 − δ (default 1e-3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("meanfield-output/normalization_variants.png"))
    args = ap.parse_args(argv)
    start = time.perf_counter()
    t, out = run(args.n, args.d, args.beta, args.alpha, args.t_end, args.frames, args.repeats, args.dt, args.delta,
                 args.seed)
    for kind, label in VARIANTS:
        p, r = out[kind]["pairs"].mean(axis=0), out[kind]["radius"].mean(axis=0)
        half = np.argmax(p >= 0.5) if np.any(p >= 0.5) else None
        print(f"{label:8s} pair fraction at t = {t[-1]:g}: {p[-1]:.3f}; reaches 1/2 at t = "
              f"{'—' if half is None else f'{t[half]:.3g}'}; mean radius {r[-1]:.3g}")
    title = (f"SA, β = {args.beta:g}, Q = K = V = I, n = {args.n} tokens on S^{args.d - 1}, {args.repeats} uniform "
             "starts shared by the variants")
    path = draw(t, out, args.alpha, args.delta, title, args.out)
    print(f"wrote {path} ({time.perf_counter() - start:.1f} s)")
    print(caption(args.alpha))


if __name__ == "__main__":
    main()
