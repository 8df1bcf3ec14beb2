"""The U-shaped retrieval profile of causal SA with a decay mask (lost in the middle; docs/MATH.md §13).

G(t, 1; σ): the linear response at time t of the last token (s = 1) to a source at position σ, about the uniform law
on [0, 1] × S¹ (:func:`meanfield.analysis.exact.retrieval_profile`, the closed form of Duerinckx, Geshkovski & Rossi,
arXiv 2605.09213). Left: their setting (β = 1, λ = 1, modes k = 1…20 weighed by e^{−π²k²/2M²}, M = 8; SA's time
t = t_paper · βI_0(β)), U-shaped before t_crit, recency lost after. Right: the mode k = 1 at β = 1, λ = 2 (and λ = 0,
no recency) against the library's density solver on [0, 1] × S¹ (markers: the response of the last row to a
perturbation δ_σ cos θ of one row, ε = 1e-6), with the error table printed. Third: the U shape from N tokens
(β = 1, λ = 2, t = 3): the last tokens' linear response to the tokens turned by ε sin θ in a window about σ, against
the closed form integrated over that window (:func:`meanfield.analysis.exact.retrieval_window`), two seeds.

Run:  python scripts/lost_in_the_middle.py [--output DIR] [--rows 17] [--tokens 4000]   (about five minutes on two
      cores; --tokens 0 leaves the particles out)
"""

import argparse
from pathlib import Path

import numpy as np
from scipy.special import ive

import meanfield as mf
from meanfield.density import Density
from meanfield.domains.sequence import SequenceGrid
import particles
from meanfield.domains.sequence import with_positions
from meanfield.analysis.exact import retrieval_profile, retrieval_threshold, retrieval_window
from meanfield.models import SelfAttention


def response(model, m, t, eps=1e-6, n=16):
    """The solver's linear response at s = 1 to δ_σ cos θ at each interior row σ_k: (positions, response)."""
    g = SequenceGrid(n, m)
    out = []
    for k in range(1, m - 1):
        f = np.full(g.shape, 1 / (2 * np.pi))
        f[k] += eps * np.cos(g.angles) / g.position_weights[k]
        sol = mf.solve(model, Density(g, f), (0.0, t), dt=0.01, refine=False)
        out.append(np.sum((sol.densities[-1].values[-1] - 1 / (2 * np.pi)) * np.cos(g.angles)) * (2 / g.n) / eps)
    return g.positions[1:-1], np.array(out)


def particle_response(model, n, sigmas, width, t, seed, eps=1e-5):
    """Tokens at s_i = (i + ½)/n, iid uniform angles; those within ``width`` of σ turned by ε sin θ: the sin θ
    coefficient of the last tokens' (s > 1 − width) displacement against the unperturbed run, over ε, per σ."""
    s = (np.arange(n) + 0.5) / n
    theta0 = np.random.default_rng(seed).uniform(0, 2 * np.pi, n)

    def run(theta):
        y = particles.simulate(model, with_positions(np.stack([np.cos(theta), np.sin(theta)], -1)), [0.0, t],
                               dt=0.02).x[-1]
        return np.arctan2(y[:, 2], y[:, 1])

    base, last = run(theta0), s > 1 - width
    S = np.sin(base[last])
    out = []
    for sigma in sigmas:
        d = np.angle(np.exp(1j * (run(theta0 + eps * np.sin(theta0) * (np.abs(s - sigma) < width)) - base)))[last]
        out.append((d @ S) / (S @ S) / eps)
    return np.array(out)


def main(output: Path, rows: int, tokens: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right, third) = plt.subplots(1, 3, figsize=(18, 4.6))
    sigma = np.linspace(0.02, 0.98, 400)

    beta, lam, M = 1.0, 1.0, 8.0
    modes = np.arange(1, 21)
    weights = np.exp(-0.5 * (np.pi * modes / M) ** 2)
    scale = beta * ive(0, beta) * np.exp(beta)  # t_SA = t_paper · βI_0(β)
    tc = retrieval_threshold(beta, lam, modes, weights)
    print(f"arXiv 2605.09213 setting (β = 1, λ = 1, k = 1…20, M = 8): t_crit = {tc:.6f} (SA time), "
          f"{tc / scale:.6f} in the paper's time")
    for tp in (0.25, 0.5, 1.0, 1.5, 2.0, 5.0):
        p = retrieval_profile(sigma, tp * scale, beta, lam, modes, weights)
        i = int(np.argmin(p))
        shape = "U (interior minimum)" if 0 < i < p.size - 1 else ("decreasing" if i == p.size - 1 else "increasing")
        print(f"  t_paper = {tp:4g}: minimum at σ = {sigma[i]:.3f}, profile(0.02) = {p[0]:.4g}, "
              f"min = {p[i]:.4g}, profile(0.98) = {p[-1]:.4g}: {shape}")
        left.plot(sigma, p / p.min(), label=f"t = {tp:g}" + (" (> t_crit)" if tp * scale > tc else ""))
    left.set(xlabel="source position σ", ylabel="G(t, 1; σ) / min over σ", yscale="log",
             title=f"β = λ = 1, k = 1…20 (M = 8), paper's time t: t_crit = {tc / scale:.3f}")
    left.legend(fontsize=8)

    print(f"\nmode 1, β = 1: closed form against the density solver ({rows} rows, 16 angles), t = 1 and 4")
    print("| λ | t | max |error| (σ >= 1/4) | max |error| (all interior σ) | max G |\n|---|---|---|---|---|")
    for lam, color in ((2.0, "C0"), (0.0, "C3")):
        model = SelfAttention(1.0, causal=True, decay=lam)
        for t, style in ((1.0, "-"), (4.0, "--")):
            right.plot(sigma, retrieval_profile(sigma, t, 1.0, lam), style, color=color, label=f"λ = {lam:g}, t = {t:g}")
            s, r = response(model, rows, t)
            exact = retrieval_profile(s, t, 1.0, lam)
            right.plot(s, r, "o", color=color, mfc="none", ms=5)
            err = np.abs(r - exact)
            print(f"| {lam:g} | {t:g} | {err[s >= 0.25].max():.2e} | {err.max():.2e} | {exact.max():.3g} |")
    right.set(xlabel="source position σ", ylabel="G(t, 1; σ)", yscale="log",
              title=f"mode 1, β = 1: closed form (lines), solver ({rows} rows, o)")
    right.legend(fontsize=8)

    beta, lam, t, width = 1.0, 2.0, 3.0, 0.05
    sigmas = np.arange(0.1, 0.86, 0.075)
    # per unit length of the source window (÷ 2w), comparable with G itself
    expected = np.array([retrieval_window(sg, width, t, beta, lam, width) for sg in sigmas]) / (2 * width)
    third.plot(sigma[(sigma > 0.06) & (sigma < 0.94)], retrieval_profile(sigma[(sigma > 0.06) & (sigma < 0.94)], t,
                                                                           beta, lam), "k-", lw=0.8,
               label="G(t, 1; σ) (closed form)")
    third.plot(sigmas, expected, "k+", ms=9, label="closed form, window-averaged")
    if tokens:
        model = SelfAttention(beta, causal=True, decay=lam)
        print(f"\nparticles: N = {tokens}, β = 1, λ = 2, t = 3, windows |s − σ| < {width}, last tokens s > {1 - width}")
        print("| σ | closed form (window mean) | seed 1 | seed 2 |\n|---|---|---|---|")
        got = [particle_response(model, tokens, sigmas, width, t, seed) / (2 * width) for seed in (1, 2)]
        for i, sg in enumerate(sigmas):
            print(f"| {sg:.3f} | {expected[i]:.4f} | {got[0][i]:.4f} | {got[1][i]:.4f} |")
        for seed, g in zip((1, 2), got):
            third.plot(sigmas, g, "o", mfc="none", label=f"N = {tokens} tokens, seed {seed}")
    third.set(xlabel="source position σ", ylabel="response of the last tokens ÷ window length",
              title="β = 1, λ = 2, t = 3: lost in the middle, from tokens")
    third.legend(fontsize=8)
    fig.tight_layout()
    output.mkdir(parents=True, exist_ok=True)
    path = output / "lost_in_the_middle.png"
    fig.savefig(path, dpi=120)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path("figures"))
    parser.add_argument("--rows", type=int, default=17)
    parser.add_argument("--tokens", type=int, default=4000)
    args = parser.parse_args()
    main(args.output, args.rows, args.tokens)
