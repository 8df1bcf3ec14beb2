r"""Metastability on S¹ measured (issue 48, item 5): predicted cluster count and angles against those formed, the
lifetimes of the metastable states against β (log T₂ ≈ cβ), and the energy staircase.

Initial data (one seed each): the law ρ₀ = (1/2π)(1 + ε Σ_{k=1}^{8} a_k cos(kθ − φ_k)), a_k uniform in [0.5, 1],
φ_k uniform, ε = 1e-3, represented by N = 128 quantile particles (θ_i with F(θ_i) = (i + ½)/N: their Fourier
coefficients are ρ₀'s up to degree N/2 to O(ε²)), or (``--iid``) N iid uniform particles. SA, Q = K = V = I.

For each (β, seed): the prediction from the initial snapshot (meanfield.lagrangian.metastability.predicted_clusters),
then the particles by particles.metastability.merging_flow (LSODA, coincident points merged within 1e-9) on outputs
every 0.5 to t = 80 then geometric to 60 e^{2β} (to 100 for the table: formation only); states from the clusters at δ = 1e-4 holding >= 90 % of the mass
(clusters of mass >= 2 %). formed = the count of the first state; angle error = Hausdorff distance on S¹ between
predicted and formed centres; T₂ = the lifetime of the two-cluster state that merged into one (first output with two
clusters to first with one), its resolution the output spacing (1.5 % in t past t = 80).

    python scripts/metastability_study.py table      # the prediction table (β, k*, gap, formed fraction, angles)
    python scripts/metastability_study.py lifetimes  # T₂ against β and the fit log T₂ ≈ cβ with its interval
    python scripts/metastability_study.py lifetimes --lagrangian   # the same from the density ρ₀ itself
    python scripts/metastability_study.py staircase  # the energy staircase figure (metastability_staircase.png)
    python scripts/metastability_study.py lagrangian --beta 2   # the Lagrangian density's states against particles'
    python scripts/metastability_study.py check      # merging_flow against particles.simulate (no merging), one run
Options: --seeds 20, --iid (iid uniform data instead of quantiles), --eps 1e-3, --betas (table, lifetimes),
--beta/--seed (staircase), --persist T (table: the formed count must last T), --lagrangian (lifetimes: from the
Lagrangian measure of ρ₀ on 256 grid nodes, validation.metastability.lagrangian_merging_flow: adaptive panels through
formation, then the merging flow of its collapsed points; the panels alone step across a plateau in steps held O(1)
by the contraction inside the clusters, and did not reach 60 e^8 at β = 4 in 15 min; with the hand-over one start
takes 0.5–2 min at any β tried, 1.5 to 12, under load), --out DIR.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import particles
from meanfield.lagrangian.metastability import predicted_clusters
from meanfield.models import SelfAttention
from particles.metastability import circular_error, cluster_centres, formed_clusters, merging_flow
from particles.snapshot import Snapshot
from particles.saddles import critical_point
from validation.metastability import lagrangian_merging_flow, lifetime_fit, two_cluster_state

N, EPS, MODES = 128, 1e-3, 8


def quantile_points(n, eps, a, phi):
    """θ_i with F(θ_i) = 2π(i + ½)/n for 2πF(θ) = θ + ε Σ a_k (sin(kθ − φ_k) + sin φ_k)/k (Newton), as unit vectors."""
    k = np.arange(1, a.size + 1)[:, None]
    u = 2 * np.pi * (np.arange(n) + 0.5) / n
    th = u.copy()
    for _ in range(60):
        F = th + eps * np.sum(a[:, None] * (np.sin(k * th - phi[:, None]) + np.sin(phi)[:, None]) / k, 0) - u
        th -= F / (1 + eps * np.sum(a[:, None] * np.cos(k * th - phi[:, None]), 0))
    return np.stack([np.cos(th), np.sin(th)], 1)


def coefficients(seed):
    """(a_k, φ_k) of a seed: the first draws of its generator (as :func:`initial` and the Lagrangian start)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.0, MODES), rng.uniform(0, 2 * np.pi, MODES)


def initial_density(seed, eps=EPS, n=256):
    """ρ₀ = (1 + ε Σ a_k cos(kθ − φ_k))/2π of a seed on a CircleGrid(n): the law the quantile particles sample."""
    import meanfield as mf

    a, phi = coefficients(seed)
    k = np.arange(1, MODES + 1)[:, None]

    def f(x):
        th = np.arctan2(x[..., 1], x[..., 0])
        return 1 + eps * np.sum(a[:, None] * np.cos(k * th.ravel()[None] - phi[:, None]), 0).reshape(th.shape)

    return mf.Density.from_function(mf.CircleGrid(n), f)


def initial(seed, iid=False, eps=EPS):
    if iid:
        return particles.uniform_sphere(N, 2, rng=np.random.default_rng(seed))
    return quantile_points(N, eps, *coefficients(seed))


def outputs(beta, t_max=None):
    t_max = max(200.0, 60.0 * np.exp(2 * beta)) if t_max is None else t_max
    return np.concatenate([np.arange(0, 80, 0.5), np.geomspace(80, t_max, int(np.log(t_max / 80) / 0.015) + 1)])


def run(beta, seed, iid=False, t_max=None):
    """(prediction, run, states, formed count, angle error, T₂, last merge); outputs to ``t_max`` (default
    60 e^{2β})."""
    model = SelfAttention(beta=beta)
    x0 = initial(seed, iid)
    pred = predicted_clusters(Snapshot(x0), model)
    r = merging_flow(model, x0, outputs(beta, t_max))
    st = r.states(beta)
    err = np.nan
    if st.states:
        k = int(np.searchsorted(r.t, st.states[0].start))
        c, _ = cluster_centres(r.points[k], 1e-4, r.weights[k], 0.02)
        err = circular_error(pred.angles, np.arctan2(c[:, 1], c[:, 0]))
    return pred, r, st, st.formed, err, st.T2, st.last_merge


def table(args):
    """Formation only: all seeds of one β in one batched particles.simulate (RK4) to t = 50, the clusters read at
    the first output where those of mass >= 2 % hold 90 % of the mass (particles.metastability.formed_clusters)."""
    betas = args.betas or [0.5, 1.8, 2.2, 4.4, 3.0, 6.0]
    t_end = 50.0 + 2.0 * np.log(1e-3 / args.eps) + args.persist  # formation takes log(1/ε)/σ*
    print(f"data: {'iid uniform' if args.iid else f'quantiles of the {args.eps:g}-perturbed law'}, N = {N}, "
          f"{args.seeds} seeds; SA, particles.simulate rk4 to t = {t_end:g}; formed: first settled count lasting "
          f"{args.persist:g}")
    print(" beta  k*  runner-up  gap    formed==k* [95% Wilson]  formed counts       t_formed  angle error median (max)")
    for b in betas:
        model = SelfAttention(beta=b)
        x0 = np.stack([initial(s, args.iid, args.eps) for s in range(args.seeds)])
        preds = [predicted_clusters(Snapshot(x), model) for x in x0]
        tr = particles.simulate(model, x0, np.arange(0, t_end + 0.25, 0.5), method="rk4", progress=False)
        formed, errs, tf = [], [], []
        for s, p in enumerate(preds):
            f = formed_clusters(tr.t, tr.x[:, s], persist=args.persist)
            formed.append(None if f is None else len(f[2]))
            if f is not None:
                tf.append(f[0])
                if len(f[2]) == p.count:
                    errs.append(circular_error(p.angles, np.arctan2(f[1][:, 1], f[1][:, 0])))
        p = preds[0]
        hit = sum(f == p.count for f in formed)
        counts = {c: formed.count(c) for c in sorted(set(formed), key=lambda c: -1 if c is None else c)}
        lo, hi = wilson(hit, len(formed))
        e = f"{np.median(errs):.3f} ({np.max(errs):.3f})" if errs else "-"
        print(f"{b:5.1f} {p.count:3d} {p.runner_up:6d}   {100 * p.gap:5.1f}%  {hit:2d}/{len(formed)} [{lo:.2f}, {hi:.2f}]"
              f"      {str(counts):18s} {np.median(tf) if tf else np.nan:6.1f}    {e}", flush=True)


def wilson(k, n, z=1.96):
    """The Wilson 95 % interval of a binomial fraction k/n."""
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def lifetimes(args):
    """T₂ against β from the quantile particles (merging_flow) or, with --lagrangian, from the Lagrangian measure of
    the density they sample (lagrangian_merging_flow); the two-point prediction from each two-cluster state's masses
    and gap at its start (validation.metastability.two_cluster_state); the fits log T = cβ + b with intervals."""
    betas = np.array(args.betas or [1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0])
    T2 = np.full((betas.size, args.seeds), np.nan)
    last, theory = np.full_like(T2, np.nan), np.full_like(T2, np.nan)
    source = ("the Lagrangian measure of rho0 (256 grid nodes; panels, then the merging flow)" if args.lagrangian
              else f"N = {N} {'iid' if args.iid else 'quantile'} particles (merging_flow)")
    print(f"T2 from {source}, {args.seeds} starts, outputs to 60 e^(2 beta)")
    for i, b in enumerate(betas):
        t0 = time.time()
        model = SelfAttention(beta=b)
        for s in range(args.seeds):
            if args.lagrangian:
                r = lagrangian_merging_flow(model, initial_density(s), outputs(b))
                st = r.states()
                handover = f", handed over at t = {r.handover:.4g} ({r.lagrangian_points} points -> {r.merged_points})"
            else:
                r = merging_flow(model, initial(s, args.iid), outputs(b))
                st, handover = r.states(), ""
            two = two_cluster_state(r, b)
            T2[i, s], last[i, s], theory[i, s] = two.T2, st.last_merge, two.prediction
            print(f"  beta = {b:4.1f} start {s}: T2 = {two.T2:10.4g} (resolution {two.resolution:.3g}), state from "
                  f"t = {two.start:.4g}, masses {two.masses[0]:.3f} {two.masses[1]:.3f}, gap {two.gap:.4f}, "
                  f"prediction {two.prediction:10.4g}; {st}{handover}", flush=True)
        print(f"beta = {b:4.1f}: T2 median {np.nanmedian(T2[i]):10.4g} (log {np.nanmedian(np.log(T2[i])):.3f}, "
              f"{np.sum(np.isfinite(T2[i]))}/{args.seeds} seen), two-point prediction median "
              f"{np.nanmedian(theory[i]):10.4g}, median |log T2/prediction| "
              f"{np.nanmedian(np.abs(np.log(T2[i] / theory[i]))):.3f}, last merge median {np.nanmedian(last[i]):10.4g} "
              f"[{time.time() - t0:.0f} s]", flush=True)
    for name, T in (("T2 (lifetime of the two-cluster state)", T2), ("time of the last merge", last),
                    ("two-point prediction of T2 from each state's masses and gap", theory)):
        if np.sum(np.isfinite(T)) < 3 or np.unique(betas[np.isfinite(T).any(axis=1)]).size < 2:
            print(f"log {name}: too few lifetimes for a fit (three over two betas needed)")
            continue
        f = lifetime_fit(betas, T)
        print(f"log {name} = c beta + b over beta in [{f.beta_range[0]:g}, {f.beta_range[1]:g}], n = {f.n}: "
              f"c = {f.c:.3f}, 95% interval [{f.interval[0]:.3f}, {f.interval[1]:.3f}], b = {f.intercept:.3f}, "
              f"residual sd {f.residual_sd:.3f}")
    name = "metastability_lifetimes_lagrangian.npz" if args.lagrangian else "metastability_lifetimes.npz"
    np.savez(Path(args.out) / name, beta=betas, T2=T2, last=last, theory=theory)


def staircase(args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    beta, seed = args.beta, args.seed
    pred, r, st, *_ = run(beta, seed, args.iid)
    e = r.energy(beta) * 2 * beta * np.exp(-beta)  # Σ w_i w_j e^{β(⟨x_i,x_j⟩−1)}: Σ m_j² for collapsed clusters
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, layout="constrained")
    t = np.maximum(r.t, 1e-1)
    ax.semilogx(t, e, "k-", lw=1.2, label=r"$2\beta e^{-\beta}E_\beta$ (particles)")
    print(f"beta = {beta}, seed = {seed}: predicted {pred.count} clusters (gap {100 * pred.gap:.1f} %); {st}")
    for j, s in enumerate(st.states):
        k = int(np.searchsorted(r.t, s.start))
        c, m = cluster_centres(r.points[k], 1e-4, r.weights[k], 0.0)
        cp = critical_point(c, beta, m)  # the saddle nearest the state: Newton from its clusters
        level = cp.energy * 2 * beta * np.exp(-beta)
        hi = min(s.end, r.t[-1])
        ax.hlines(level, max(s.start, 1e-1), hi, colors=f"C{j}", lw=3, alpha=0.5,
                  label=f"{s.count} cluster{'s' if s.count > 1 else ''}: critical point of index {cp.index}")
        print(f"  state {s.count}: [{s.start:.4g}, {s.end:.4g}) mean energy {s.energy * 2 * beta * np.exp(-beta):.6f}, "
              f"critical point energy {level:.6f}, index {cp.index}, |grad| {cp.gradient_norm:.1e}")
        bx.axvspan(max(s.start, 1e-1), hi, color=f"C{j}", alpha=0.15)
    ax.set_ylabel(r"$2\beta e^{-\beta}E_\beta$")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"SA on S¹, β = {beta:g}, N = {N}: the energy staircase (plateaus at saddles)", fontsize=10)
    th = [np.mod(np.arctan2(p[:, 1], p[:, 0]), 2 * np.pi) for p in r.points]
    for k in range(0, len(r.t), 2):
        bx.scatter(np.full(th[k].size, t[k]), th[k], s=4 + 60 * r.weights[k], c="k", lw=0)
    bx.set_xscale("log")
    bx.set_ylim(0, 2 * np.pi)
    bx.set_xlabel("t")
    bx.set_ylabel("θ (points; size ∝ weight)")
    out = Path(args.out) / "metastability_staircase.png"
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


def lagrangian(args):
    """The Lagrangian density (adaptive panels) from the same law as the quantile particles, its metastable states
    from ClusterHistory.states(), against merging_flow's on N = 128 quantile particles."""
    import meanfield as mf
    from meanfield.lagrangian import cluster_history

    beta, seed = args.beta, args.seed
    rho = initial_density(seed)
    model = mf.SelfAttention(beta=beta)
    t_end = 3.0 * np.exp(2 * beta) + 100.0
    t = np.concatenate([np.arange(0, 80, 0.5), np.geomspace(80, t_end, int(np.log(t_end / 80) / 0.015) + 1)])
    t0 = time.time()
    sol = mf.solve(model, rho, (0, t_end), t_eval=t, representation="lagrangian", lagrangian_tol=1e-12)
    h = cluster_history(sol, separation=float(np.arccos(1 - 1e-4)))  # merged when as close as the particles' δ
    frames = [fr for fr in sol.densities if fr.lagrangian]
    st = h.states(np.array([fr.energy(beta) for fr in frames]))
    print(f"beta = {beta}, seed = {seed}: predicted {predicted_clusters(rho, model).count} clusters; Lagrangian "
          f"({sol.status}, {time.time() - t0:.0f} s): {st}; T2 = {st.T2:.4g}, last merge {st.last_merge:.4g}")
    _, r, sp, formed, _, T2, last = run(beta, seed)
    print(f"particles (N = {N} quantiles, merging_flow): {sp}; T2 = {T2:.4g}, last merge {last:.4g}")


def check(args):
    """merging_flow against particles.simulate (all N points, no merging) at β = 2, one seed, to t = 300."""
    beta = 2.0
    model = SelfAttention(beta=beta)
    x0 = initial(0, args.iid)
    t = np.concatenate([np.arange(0, 80, 0.5), np.geomspace(80, 300, 90)])
    r = merging_flow(model, x0, t).states(beta)
    tr = particles.simulate(model, x0, t, method="dop853", progress=False)
    from particles.metastability import trajectory_states

    s = trajectory_states(tr, beta)
    print("merging_flow:      ", r, r.merges)
    print("particles.simulate:", s, s.merges)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("part", choices=["table", "lifetimes", "staircase", "lagrangian", "check"])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--iid", action="store_true")
    p.add_argument("--beta", type=float, default=4.4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eps", type=float, default=EPS, help="the perturbation's size (table)")
    p.add_argument("--betas", type=float, nargs="*", help="the βs of the table or of the lifetimes")
    p.add_argument("--lagrangian", action="store_true", help="lifetimes from the Lagrangian density")
    p.add_argument("--persist", type=float, default=0.0, help="how long the formed count must last (table)")
    p.add_argument("--out", default=".")
    args = p.parse_args(argv)
    {"table": table, "lifetimes": lifetimes, "staircase": staircase, "lagrangian": lagrangian,
     "check": check}[args.part](args)


if __name__ == "__main__":
    sys.exit(main())
