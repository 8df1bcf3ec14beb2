"""A million rings on S^{d−1} (issue 50, item 2, zonal models): one RK4 step of SA β = 4 of the zonal Lagrangian
measure by the rings' compiled Gegenbauer sums, d = 3, 16, 128, its time split, against the sums' own passes and the
former NumPy table path measured in the same process, and the field's error against a direct sum over the ring kernel.

The run, per d: n = 10⁶ rings at polar angles drawn uniformly in [0, π] (seeded; far from the uniform law of S^{d−1}
in every d, so the field is strong), masses 1/n, log ρ = 0, as a :class:`~meanfield.lagrangian.LagrangianMeasure` of
the zonal domain; SelfAttention(β = 4); one RK4 step ``meanfield.lagrangian.transport(..., method="rk4", dt=H,
strategy="spectral")`` after a warm-up step; the median of ``--repeat`` (>= 5) steps, each split into

- set-up: the problem's construction (``LagrangianProblem.__init__``: the strategy's choice, the sums' callables);
- moments: the first compiled pass (``_moments``: :func:`~meanfield.domains.zonal_sphere.point_sums.ring_moments`
  and the rings' total mass; 4 stages);
- series: the rest of the ring sums (``_ring_sums`` less its moments: the multipliers, the tails, the second compiled
  pass, ψ′ and ψ″ per ring);
- the rest: the RK4 combinations, the retraction, the tracker's finiteness check, Python.

Anchors in the same process, one after each step (alternating: a shared machine's drifts hit both alike; ratios are
the medians of the pairs'):

- the bare passes: the two compiled kernels alone (``_moment_chunks``, ``_field_blocks`` over all chunks and blocks,
  on the library's thread pool, their coefficients made beforehand) — the cost a stage cannot go below with these
  sums; it prints step / (4 × bare passes);
- the former path: :func:`~meanfield.domains.zonal_sphere.point_sums.matrix_ring_sums` (NumPy tables of p̄_l, p̄_l′,
  p̄_l″, n × (K + 1) each) at ``--anchor-n`` = 10⁵ rings against the compiled sums at the same 10⁵ (one stage each).

Then θ̇ at 10³ query rings (polar angles uniform, seeded) against the direct sum over all n rings of the ring kernel
k(u, v) = e^{βuv} ₀F₁(; (d−1)/2; β²(1−u²)(1−v²)/4) (no expansion, no multiplier; ₀F₁ by its series to 1e-18,
checked against scipy's ``hyp0f1``), θ̇ = −sin θ (1/β) ∂_u k*μ / k*μ, beside the truncation bound the library states
(times sin θ) and the allowance for both sums' round-off (printed with its model).

Run:  PYTHONPATH=. python benchmarks/bench_million_zonal.py     (--n 100000 --repeat 5 for a quick look;
      --dims 3 16 128; --no-error skips the direct sums, ~10⁹ ring pairs per d; the absolute figures are for a quiet
      machine)
"""

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np
from scipy.special import hyp0f1

sys.path.insert(0, str(Path(__file__).resolve().parent))

import meanfield as mf  # noqa: E402
from meanfield.core.pool import map_ranges  # noqa: E402
from meanfield.domains import zonal_domain  # noqa: E402
from meanfield.domains.gegenbauer import orthonormal  # noqa: E402
from meanfield.domains.zonal_sphere import point_sums as zs  # noqa: E402
from meanfield.lagrangian.measure import LagrangianMeasure  # noqa: E402

from _timing import Clock, interleaved  # noqa: E402

lt = importlib.import_module("meanfield.lagrangian.transport")  # the module (its package exports the function)

BETA = 4.0
H = 0.01
EPS = np.finfo(float).eps


def rings(n, d, seed=0):
    """The Lagrangian measure of n rings at polar angles uniform in [0, π] (sorted: the chart's order), masses 1/n."""
    theta = np.sort(np.random.default_rng(seed).uniform(0.0, np.pi, n))[:, None]
    return LagrangianMeasure(theta, np.full(n, 1.0 / n), np.zeros(n), zonal_domain(d), None, 0.0, check=False)


def bare_passes(theta, w, d):
    """One stage's two compiled passes alone, their coefficients made here (module docstring): a callable."""
    theta = np.ascontiguousarray(theta[:, 0])
    K = zs.ring_degree(d, BETA)
    a, c = zs._steps(d, K)
    m, n_ = zs._multipliers(d, K, BETA)
    nchunk = zs._chunks(theta.size)
    nblock = (theta.size + zs.BLOCK - 1) // zs.BLOCK
    acc = np.zeros((nchunk, K + 2))
    vel, div = np.empty(theta.size), np.empty(theta.size)
    g = zs.ring_moments(theta[:, None], w, K, d)
    M, N = m * g, n_ * g

    def stage():
        map_ranges(lambda c0, c1: zs._moment_chunks(theta, w, a, c, nchunk, c0, c1, acc), nchunk, zs.TASKS,
                   work=theta.size * (K + 1))
        map_ranges(lambda b0, b1: zs._field_blocks(theta, a, c, M, N, True, True, 1.0, BETA, float(d - 1), 0.0, 0.0,
                                                   vel, div, b0, b1), nblock, zs.TASKS, work=3 * theta.size * (K + 1))

    return stage


def step_split(model, frame, repeat, anchor):
    """One RK4 step (after a warm-up), ``repeat`` times, each followed by one call of ``anchor``. Returns the medians
    of (total, set-up, moments, sums), of the anchor and of the ratios step / (4 × anchor) pair by pair."""
    run = lambda: lt.transport(model, frame, [0.0, H], [H], method="rk4", dt=H, strategy="spectral")  # noqa: E731
    run()
    anchor()
    rows, stages, ratios = [], [], []
    for _ in range(repeat):
        clock = Clock()
        undo = [clock.wrap(lt.LagrangianProblem, "__init__", "setup"), clock.wrap(zs, "_moments", "moments"),
                clock.wrap(zs, "_ring_sums", "sums")]
        try:
            t0 = time.perf_counter()
            tr = run()
            total = time.perf_counter() - t0
        finally:
            for u in undo:
                u()
        assert tr.nsteps == 1 and tr.nfev == 4 and tr.strategy == "spectral", (tr.nsteps, tr.nfev, tr.strategy)
        rows.append((total, *(clock.spent.get(k, 0.0) for k in ("setup", "moments", "sums"))))
        t0 = time.perf_counter()
        anchor()
        stages.append(time.perf_counter() - t0)
        ratios.append(total / (4 * stages[-1]))
    med = [statistics.median(r[i] for r in rows) for i in range(4)]
    return med, statistics.median(stages), statistics.median(ratios)


# ------------------------------------------------------------------ the direct sum over the ring kernel
@numba.njit(parallel=True, cache=True)
def _direct(q, u_r, s2_r, w, beta, b, terms):
    """(φ, φ′, Σ|terms of φ|, Σ|terms of φ′|) at query angles q over rings (cos θ_j, sin²θ_j, w_j): e^{−β}-scaled
    k*μ and ∂_u k*μ/β, ₀F₁(; b; z) and ₀F₁(; b + 1; z)/b by Horner in sin²θ_j with ``terms`` terms; the sums in
    chunks of 1024 rings (round-off ~(1024 + n/1024)ε of the terms' sizes)."""
    m, n = q.shape[0], u_r.shape[0]
    out = np.empty((m, 4))
    for i in numba.prange(m):
        u, su2 = np.cos(q[i]), np.sin(q[i]) ** 2
        alpha = 0.25 * beta * beta * su2
        f0 = np.empty(terms)
        f1 = np.empty(terms)
        t0 = 1.0
        t1 = 1.0 / b
        for k in range(terms):  # f0_k = α^k/(k!(b)_k), f1_k = α^k/(k!(b)_{k+1})
            f0[k] = t0
            f1[k] = t1
            t0 *= alpha / ((k + 1.0) * (b + k))
            t1 *= alpha / ((k + 1.0) * (b + k + 1.0))
        tot = np.zeros(4)
        for c0 in range(0, n, 1024):
            part = np.zeros(4)
            for j in range(c0, min(n, c0 + 1024)):
                x = s2_r[j]
                F0 = f0[terms - 1]
                F1 = f1[terms - 1]
                for k in range(terms - 2, -1, -1):
                    F0 = F0 * x + f0[k]
                    F1 = F1 * x + f1[k]
                e = w[j] * np.exp(beta * (u * u_r[j] - 1.0))
                t_den = e * F0
                t_num = e * (u_r[j] * F0 - 0.5 * beta * u * x * F1)
                part[0] += t_den
                part[1] += t_num
                part[2] += abs(t_den)
                part[3] += abs(t_num)
            tot += part
        out[i] = tot
    return out


def series_terms(d):
    """Terms of ₀F₁(; (d−1)/2; z) for z <= β²/4 to 1e-18 relative (its terms decrease past k ~ √z)."""
    b, z, t, k = 0.5 * (d - 1), 0.25 * BETA * BETA, 1.0, 0
    while not (k > np.sqrt(z) and t < 1e-18):
        t *= z / ((k + 1.0) * (b + k))
        k += 1
    return k + 1


def check_series(d, terms):
    """The Horner series against scipy's hyp0f1 at z in [0, β²/4]: the largest relative difference."""
    z = np.linspace(0.0, 0.25 * BETA * BETA, 9)
    q = np.arccos(0.0) * np.ones(1)  # u = 0, sin² = 1: z = β²/4 · sin²θ_j
    s2 = z / (0.25 * BETA * BETA)
    worst = 0.0
    b = 0.5 * (d - 1)
    for x, zz in zip(s2, z):
        got = _direct(q, np.zeros(1), np.array([x]), np.ones(1), BETA, b, terms)[0]
        want = np.exp(-BETA) * hyp0f1(b, zz)
        worst = max(worst, abs(got[0] - want) / want)
    return worst


def field_error(frame, d, nq=1000, seed=7):
    """(max |θ̇ − direct|, max stated bound × sin θ, max allowance, max |θ̇|, ok) at nq query rings (module
    docstring). Allowance per query: the bound × sin θ plus κε(A1 + |r|A0)/φ × sin θ for the ring sums (A0, A1: the
    sizes of their series' terms, κ = 4(K + 1) + 2·LANES + n/(LANES·chunks) + chunks, as in tests/meanfield/
    test_ring_sums.py) plus (1024 + n/1024)ε(B1 + |r|B0)/φ × sin θ for the direct sums (B0, B1: the sizes of theirs)."""
    theta, w = frame.state, frame.weights
    n = len(w)
    q = np.random.default_rng(seed).uniform(0.0, np.pi, nq)
    v, bound = zs.ring_field(theta, w, q[:, None], BETA, d=d)
    terms = series_terms(d)
    direct = _direct(q, np.cos(theta[:, 0]), np.sin(theta[:, 0]) ** 2, w, BETA, 0.5 * (d - 1), terms)
    s = np.abs(np.sin(q))
    r = direct[:, 1] / direct[:, 0]  # θ̇ = −sin θ · r (c = 1)
    ref = -s * r
    K = zs.ring_degree(d, BETA)
    gabs = np.zeros(K + 1)
    for j0 in range(0, n, 100000):  # Σ_j |w_j p̄_l(u_j)| in slices (the tables of 10⁶ rings would be ~0.3 GB)
        gabs += np.abs(w[j0:j0 + 100000]) @ np.abs(orthonormal(d, K, np.cos(theta[j0:j0 + 100000, 0]), normalized=True))
    m, nn = zs._multipliers(d, K, BETA)
    P, P1 = orthonormal(d, K, np.cos(q), derivatives=1, normalized=True)
    A0, A1, phi = np.abs(P) @ (m * gabs), np.abs(P1) @ (nn * gabs), direct[:, 0]
    nchunk = zs._chunks(n)
    kappa = 4 * (K + 1) + 2 * zs.LANES + n / (zs.LANES * nchunk) + nchunk
    allowance = s * (bound + kappa * EPS * (A1 + np.abs(r) * A0) / phi
                     + (1024 + n / 1024) * EPS * (direct[:, 3] + np.abs(r) * direct[:, 2]) / phi)
    err = np.abs(v[:, 0] - ref)
    return (float(err.max()), float(np.max(bound * s)), float(allowance.max()), float(np.abs(ref).max()),
            bool(np.all(err <= allowance)), check_series(d, terms))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=10**6)
    p.add_argument("--anchor-n", type=int, default=10**5)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--dims", type=int, nargs="+", default=[3, 16, 128])
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--no-error", action="store_true", help="skip the direct sums at the query rings")
    args = p.parse_args()
    model = mf.SelfAttention(BETA)
    print(f"n = {args.n} rings, SA beta = {BETA}, one RK4 step (dt = {H}) of the zonal Lagrangian measure by the "
          f"compiled ring sums, numba threads = {numba.get_num_threads()}; medians of {args.repeat}; "
          f"module: {zs.__file__}")
    for d in args.dims:
        frame = rings(args.n, d)
        K = zs.ring_degree(d, BETA)
        bare = bare_passes(frame.state, frame.weights, d)
        (total, setup, moments, sums), t_bare, ratio = step_split(model, frame, args.repeat, bare)
        series, rest = sums - moments, total - setup - sums
        rate = args.n * (K + 1) / (t_bare / 1.0)
        print(f"\nS^{d - 1} (d = {d}): K = {K}; step {total:.3f} s = set-up {setup:.4f} + moments {moments:.3f} + "
              f"series {series:.3f} + rest {rest:.3f} (medians, 4 stages)")
        print(f"  anchor, the bare compiled passes: {t_bare * 1e3:.1f} ms per stage ({rate / 1e9:.2f}·10⁹ ring-degrees "
              f"per second, both passes); step / (4 × bare) = {ratio:.2f} (median of the pairs)")
        na = min(args.anchor_n, args.n)
        small = rings(na, d, seed=1)
        th, w = small.state, small.weights
        t_new, t_old, pairs = interleaved(lambda: zs.ring_field_and_divergence(th, w, th, BETA, d=d),
                                          lambda: zs.matrix_ring_sums(th, w, th, BETA, d=d, second=True),
                                          repeat=args.repeat)
        print(f"  n = {na}: one stage, compiled {t_new * 1e3:.1f} ms, former NumPy tables {t_old * 1e3:.1f} ms: "
              f"{statistics.median(1 / r for r in pairs):.0f}× (median of the pairs)")
        if not args.no_error:
            t0 = time.perf_counter()
            err, bnd, allow, vmax, ok, series_err = field_error(frame, d, args.queries)
            print(f"  θ̇ at {args.queries} query rings vs the direct ring-kernel sum over all {args.n} rings "
                  f"({time.perf_counter() - t0:.0f} s): max error {err:.2e} (max |θ̇| {vmax:.2e}); truncation bound "
                  f"stated {bnd:.2e}; with both sums' round-off {allow:.2e} -> {'within' if ok else 'ABOVE'} "
                  f"(₀F₁ series vs scipy: {series_err:.1e} relative)")


if __name__ == "__main__":
    main()
