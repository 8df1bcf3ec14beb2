"""Cost curves on one page (issue 50, item 5): time against n, L and d, each log-log with its fitted exponent.

Panels (SA, β = 4, one thread, the best of ``--repeat`` calls after a warm-up: under another session's load the
least-disturbed call estimates the cost; medians moved by 2–10× between neighbouring sizes at load 10):

1. The field of n points on S² by pair sums (``kernels.field``: n² pairs, exponent 2 expected) and by point sums
   (``sphere_spectral_field``: spherical-harmonic sums truncated where the Funk–Hecke multipliers of e^{β⟨x,y⟩}
   fall below round-off, exponent ~1 expected, fitted over n >= 10⁴ where their fixed cost no longer dominates),
   with the crossover n where the point sums become cheaper: measured at the same sizes, interpolated log-log
   between the two sizes that bracket it. Beside them the zonal rings' sums on S^{d−1}, d = 16 (``ring_field_and_
   divergence``: θ̇ and div X of n rings at the n rings, the compiled Gegenbauer recurrences; exponent 1 expected,
   fitted over n >= 10⁴).
2. One RK4 step of a density against the degree L, as ``solve`` takes it (``_anchors.problem_step``: no set-up):
   S² on ducc0 (one thread; ~L³ expected once the Legendre transforms' L³ dominates their FFTs' L² log L), the
   shtns loop of ``bench_table`` (4 transforms per right-hand side; drawn where shtns imports: it is optional and
   needs FFTW to build), and the zonal grid of S^{d−1}, d = 16 (dense Gegenbauer transforms: ~L² expected). Beside
   the S² step, at the same L in the same run, ducc0's own bare transforms: one ``synthesis_2d`` and one
   ``adjoint_synthesis_2d`` of spin 0 on a Gauss–Legendre grid of L + 1 rings of 2L + 2 points (one thread; not the
   grid's 2L + 1, where ducc0's one-call transforms pay 3–4× in ring FFTs of prime length, 127 at L = 63, which the
   library's batched ring FFTs avoid: :mod:`meanfield.domains.sphere.ducc`), the anchor curve with its own fitted exponent: where the step's curve runs parallel to it, the step costs a fixed
   number of transforms and its exponent is ducc0's (Legendre transforms O(L³) with a small constant against the
   O(L² log L) ring FFTs at these L, so below 3); the printed ratio step / (synthesis + adjoint) is that number.
3. The pairwise field of n = 2048 particles on S^{d−1} against d (the d-dimensional dot products: ~d once d exceeds
   the exponential's own cost, flat below).

The fitted exponent is the least-squares slope of log t against log n (L, d) over the sizes shown (panel 3: over
d >= 16, where the dot products dominate), printed with its 95 % interval (Student t on the fit's residuals). Under
another session's load the times move; the slopes much less.

``--crossover`` measures instead the particle count from which ``strategy="auto"`` takes the point sums on S¹ and S²
(``SPECTRAL_CROSSOVER`` of :mod:`meanfield.domains.circle` and :mod:`meanfield.domains.sphere`): for each β, the
point sums' field at the n particles (``Domain.point_sums(d).field``, what ``particles.simulate`` calls) against
``kernels.pairwise_field`` (the pairwise strategy), one thread, the two timed in alternation in one process
(``_timing.interleaved``: a ratio of two costs, robust to another session's load), n on a grid of ratio 2^{1/4}; the
crossover n*(β) is the log-log interpolation where the ratio falls below 1 for good. It prints n*(β), n*/(L + 1), and
the rule max(floor, per_degree (L + 1)) that is at or above every n* measured with the least excess: the values to
store in ``SPECTRAL_CROSSOVER``.

``--studies`` times, for the particle systems of the example studies whose counts lie between the old rule and the
measured crossover (where ``auto`` now takes the point sums: S¹ from 1024 → max(192, 9 (L + 1)), S² from 6 (L + 1)²
→ max(2048, 19 (L + 1))), ``particles.simulate`` with ``strategy="auto"`` against ``strategy="pairwise"`` (the old
choice), alternating in one process, on one thread and on the default thread count: the ratio new/old is the
study's change (< 1: faster).

``--large`` times, at L = 1023, 2047, 4095, 8191, the S² step, ducc0's bare transforms and the shtns loop, each where
its memory fits ``--budget-gb`` (the step needs ~40 grid-sized arrays: 12 GB at L = 4095, 43 GB at 8191), and prints
the local exponent of each doubling: how far the curves of the page are from their L³ asymptote.

Run:  python benchmarks/bench_cost_curves.py [--repeat 5] [--out docs/_static/cost_curves.png] [--quick]
      python benchmarks/bench_cost_curves.py --large [--budget-gb 16]
      python benchmarks/bench_cost_curves.py --triples
      python benchmarks/bench_cost_curves.py --crossover [--repeat 7]
      python benchmarks/bench_cost_curves.py --studies [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
from functools import partial
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread for shtns's OpenMP too (set before it loads)

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best, interleaved  # noqa: E402

import numba  # noqa: E402

import meanfield as mf  # noqa: E402
from meanfield import kernels  # noqa: E402
from meanfield.domains.sphere.point_sums import sphere_spectral_field  # noqa: E402
from particles import uniform_sphere  # noqa: E402

BETA = 4.0
ZONAL_D = 16
# the fits the figure's labels read (the table prints every fit)
RING_FIT = f"zonal S^{ZONAL_D - 1} rings, field and divergence, t(n), n >= 10⁴"
BARE_FIT = "ducc0 bare synthesis + adjoint (GL grid, same L), t(L)"
BARE_FIT_TOP = "ducc0 bare synthesis + adjoint, t(L), L >= 255"
SHTNS_FIT = "S² RK4 step, shtns loop (4 transforms per RHS), t(L)"
ZONAL_FIT = f"zonal S^{ZONAL_D - 1} density RK4 step, t(L)"
DIM_FIT = "pairwise field n = 2048 on S^(d−1), t(d), d >= 16"


def slope(x, t):
    """The least-squares exponent of t ~ x^p and its prefactor: (p, c) with t ≈ c x^p."""
    p, logc = np.polyfit(np.log(x), np.log(t), 1)
    return float(p), float(np.exp(logc))


def slope_interval(x, t, level=0.95):
    """The least-squares exponent p of t ~ x^p with its ``level`` confidence interval (Student t on the residuals of
    the log-log fit; (p, p) for two sizes, where no residual is left)."""
    from scipy import stats

    fit = stats.linregress(np.log(x), np.log(t))
    if len(x) < 3:
        return float(fit.slope) if len(x) == 2 else float("nan"), float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, len(x) - 2) * fit.stderr
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half)


def measured_crossover(n_pair, t_pair, n_point, t_point) -> float:
    """The n above which the point sums are cheaper, from the sizes measured both ways: log-log interpolation of the
    ratio t_point/t_pair between the sizes that bracket 1 (NaN where it does not cross in the sizes measured)."""
    common = np.array([n for n in n_pair if n in set(n_point.tolist())])
    ratio = np.array([t_point[list(n_point).index(n)] / t_pair[list(n_pair).index(n)] for n in common])
    for k in range(len(common) - 1):
        if ratio[k] >= 1.0 > ratio[k + 1]:
            a, b = np.log(ratio[k]), np.log(ratio[k + 1])
            return float(np.exp(np.log(common[k]) + a / (a - b) * np.log(common[k + 1] / common[k])))
    return float("nan")


def crossing(ns, ratios) -> float:
    """The n where ``ratios`` (point/pair) falls below 1 for good: log-log interpolation between the last size at or
    above 1 and the next (the first size if none is above 1; NaN if the last is above 1)."""
    ns, ratios = np.asarray(ns, float), np.asarray(ratios, float)
    above = np.flatnonzero(ratios >= 1.0)
    if not above.size:
        return float(ns[0])
    k = int(above[-1])
    if k == len(ns) - 1:
        return float("nan")
    a, b = np.log(ratios[k]), np.log(ratios[k + 1])
    return float(np.exp(np.log(ns[k]) + a / (a - b) * np.log(ns[k + 1] / ns[k])))


def crossover_rule(degrees, crossings):
    """(floor, per_degree): the rule n >= max(floor, per_degree (L + 1)) at or above every measured crossing, with
    the least total log-excess over them (floors tried: each crossing, and 0)."""
    L1, nx = np.asarray(degrees, float) + 1.0, np.asarray(crossings, float)
    chosen = None
    for floor in [0.0] + sorted(nx):
        above = nx > floor
        per = float(np.max(nx[above] / L1[above])) if above.any() else 0.0
        rule = np.maximum(floor, per * L1)
        excess = float(np.sum(np.log(rule / nx)))
        if chosen is None or excess < chosen[0]:
            chosen = (excess, int(np.ceil(floor)), float(np.ceil(per)))
    return chosen[1], chosen[2]


def measure_crossovers(repeat):
    """The crossover table of the point sums against the pairwise sums, S¹ and S² (module docstring)."""
    from meanfield.domains import CIRCLE, SPHERE

    plans = ((CIRCLE, 2, (0.5, 1.0, 4.0, 16.0, 64.0), 64),
             (SPHERE, 3, (1.0, 4.0, 16.0, 64.0, 256.0), 512))
    out = {}
    for domain, d, betas, n0 in plans:
        sums = domain.point_sums(d)
        degrees, crossings = [], []
        for beta in betas:
            model = mf.SelfAttention(beta)
            ns, ratios = [], []
            n, below = n0, 0
            while below < 2 and n <= 64 * n0:
                x = uniform_sphere(n, d, rng=n)
                w = np.full(n, 1.0 / n)
                t_pair, t_point, _ = interleaved(lambda: kernels.pairwise_field(model, x, w, x),
                                                 lambda: sums.field(x, w, x, beta, True, 1.0),
                                                 repeat=repeat, min_time=0.05)
                ns.append(n)
                ratios.append(t_point / t_pair)
                below = below + 1 if ratios[-1] < 1.0 else 0
                n = int(round(n * 2 ** 0.25))
            L = sums.degree(beta)
            nx = crossing(ns, ratios)
            degrees.append(L)
            crossings.append(nx)
            print(f"{domain.symbol(d)} β = {beta:g} (L = {L}): crossover n* ≈ {nx:.0f}, "
                  f"n*/(L + 1) = {nx / (L + 1):.1f};"
                  " point/pair: " + ", ".join(f"{m}: {r:.2f}" for m, r in zip(ns, ratios)), flush=True)
        floor, per = crossover_rule(degrees, crossings)
        module = type(domain).__module__
        print(f"{domain.symbol(d)}: store SPECTRAL_CROSSOVER = Crossover(floor={floor}, per_degree={per:g}) "
              f"(now {module}.SPECTRAL_CROSSOVER = {sys.modules[module].SPECTRAL_CROSSOVER})", flush=True)
        out[domain.symbol(d)] = (betas, degrees, crossings, (floor, per))
    return out


def studies_before_after(repeat):
    """``simulate`` with 'auto' (now the point sums) against 'pairwise' (the old rule's choice), same process."""
    import particles as pt

    circle = lambda n, seed: uniform_sphere(n, 2, rng=seed)  # noqa: E731
    cases = [  # (what, model, x0, t_eval, keywords)
        ("circle_clusters: S¹ SA β = 4, n = 1000, rk45 to t = 0.5", mf.SelfAttention(4.0), circle(1000, 1),
         [0.0, 0.5], dict(method="rk45")),
        ("compare_pde_particles: S¹ SA β = 1, n = 316, RK4 50 steps", mf.SelfAttention(1.0), circle(316, 2),
         [0.0, 0.5], dict(dt=0.01)),
        ("compare_pde_particles: S¹ SA β = 1, n = 1000, RK4 50 steps", mf.SelfAttention(1.0), circle(1000, 3),
         [0.0, 0.5], dict(dt=0.01)),
        ("metastability: S¹ SA β = 5, n = 1000, RK4 50 steps", mf.SelfAttention(5.0), circle(1000, 4),
         [0.0, 0.5], dict(dt=0.01)),
        ("noisy_phase_transition: S¹ USA β = 3, D = 1.3, 4 × n = 512, 50 steps",
         mf.SelfAttention(3.0, normalized=False, noise=1.3), uniform_sphere(512, 2, rng=5, batch=4),
         [0.0, 0.5], dict(dt=0.01, rng=0)),
        ("bench_table particles: S² SA β = 4, n = 4096, RK4 5 steps", mf.SelfAttention(4.0),
         uniform_sphere(4096, 3, rng=6), [0.0, 0.05], dict(dt=0.01)),
        ("S² SA β = 16, n = 3000, RK4 5 steps", mf.SelfAttention(16.0), uniform_sphere(3000, 3, rng=7),
         [0.0, 0.05], dict(dt=0.01)),
    ]
    default = numba.config.NUMBA_NUM_THREADS
    print("| system | threads | auto takes | auto / pairwise (median of pairs) | spread of the pairs |")
    print("|---|---|---|---|---|")
    for what, model, x0, t, kw in cases:
        for threads in (1, default):
            numba.set_num_threads(threads)
            path = pt.simulate(model, x0, t, progress=False, **kw).strategy
            t_new, t_old, ratios = interleaved(lambda: pt.simulate(model, x0, t, progress=False, **kw),
                                               lambda: pt.simulate(model, x0, t, strategy="pairwise", progress=False,
                                                                   **kw), repeat=repeat)
            print(f"| {what} | {threads} | {path} | {t_new / t_old:.2f} ({t_new * 1e3:.0f} ms / {t_old * 1e3:.0f} ms)"
                  f" | {min(ratios):.2f}–{max(ratios):.2f} |", flush=True)
    numba.set_num_threads(1)


def pair_and_point_sums(repeat, quick):
    model = mf.SelfAttention(BETA)
    n_pair = [512, 1024, 2048, 4096] + ([] if quick else [8192])
    n_point = [512, 1024, 2048, 4096, 8192, 10**4, 3 * 10**4, 10**5] + ([] if quick else [3 * 10**5, 10**6])
    t_pair, t_point = [], []
    for n in n_pair:
        x = uniform_sphere(n, 3, rng=n)
        w = np.full(n, 1.0 / n)
        t_pair.append(best(lambda: kernels.field(model, x, w, x), repeat))
    for n in n_point:
        x = uniform_sphere(n, 3, rng=n)
        w = np.full(n, 1.0 / n)
        t_point.append(best(lambda: sphere_spectral_field(x, w, x, BETA), repeat))
    return np.array(n_pair), np.array(t_pair), np.array(n_point), np.array(t_point)


def ring_sums(repeat, quick):
    """Seconds per field and divergence of n rings at the rings on S^{d−1}, d = ZONAL_D (one thread)."""
    from meanfield.domains.zonal_sphere.point_sums import ring_field_and_divergence

    n_ring = [10**3, 10**4, 10**5] + ([] if quick else [10**6])
    t = []
    for n in n_ring:
        theta = np.random.default_rng(n).uniform(0.0, np.pi, (n, 1))
        w = np.full(n, 1.0 / n)
        t.append(best(lambda: ring_field_and_divergence(theta, w, theta, BETA, d=ZONAL_D), repeat))
    return np.array(n_ring), np.array(t)


def shtns_loop(L, beta):
    """The shtns anchor of ``bench_table`` (SA on S², state = coefficients, 4 transforms per right-hand side) and its
    initial coefficients, or None where shtns does not import (it is optional: it needs FFTW to build)."""
    try:
        import shtns
        from bench_table import shtns_rhs
    except ImportError:
        return None
    plan = shtns.sht
    shtns.sht = partial(plan, nthreads=1)  # its default, 0, takes every core whatever OMP_NUM_THREADS says
    try:
        sh, rhs, theta, phi = shtns_rhs(L, beta)
    finally:
        shtns.sht = plan
    tt, pp = np.meshgrid(theta, phi, indexing="ij")
    x = np.stack([np.sin(tt) * np.cos(pp), np.sin(tt) * np.sin(pp), np.cos(tt)], -1)
    return rhs, sh.analys(np.exp(2.0 * x[..., 2]))


def density_steps(repeat, quick):
    """Seconds per RK4 step as ``solve`` takes it (``_anchors.problem_step``: no set-up), against L: S² on ducc0
    (one thread), the shtns loop where shtns imports, and the zonal grid of S^{d−1}, d = ZONAL_D."""
    from _anchors import problem_step, rk4_step
    from meanfield.domains import ZonalGrid
    from meanfield.domains.sphere import DuccBackend

    DuccBackend.nthreads = 1
    model = mf.SelfAttention(BETA)
    degrees = [31, 63, 127, 255] + ([] if quick else [511, 1023])
    # shtns plans (times its variants) first, in a quiet process (bench_table's note)
    loops = {L: shtns_loop(L, BETA) for L in degrees}
    t_s2, t_sht, t_bare = [], [], []
    for L in degrees:
        grid = mf.SphereGrid(L, backend="ducc0")
        y = mf.Density.from_function(grid, lambda x: np.exp(2.0 * x[..., 2])).values
        t_s2.append(best(problem_step(model, grid, y), repeat))
        t_bare.append(best(ducc_transforms(L), repeat))
        if loops[L] is not None:
            rhs, alm = loops[L]
            t_sht.append(best(lambda: rk4_step(rhs, alm), repeat))
    zonal_degrees = [32, 64, 128, 256] + ([] if quick else [512, 1024, 2048])
    t_zonal = []
    for L in zonal_degrees:
        grid = ZonalGrid(ZONAL_D, L)
        y = mf.Density.from_function(grid, mf.laws.uniform_noise(grid, 0.2, 4, rng=1)).values
        t_zonal.append(best(problem_step(model, grid, y), repeat))
    sht = (np.array(degrees[:len(t_sht)]), np.array(t_sht)) if t_sht else None
    return np.array(degrees), np.array(t_s2), sht, np.array(zonal_degrees), np.array(t_zonal), np.array(t_bare)


def ducc_transforms(L):
    """ducc0's bare transforms at degree L on a Gauss–Legendre grid of L + 1 rings of 2L + 2 longitudes: one spin-0
    ``synthesis_2d`` and one ``adjoint_synthesis_2d``, one thread, as a callable (the anchor of the S² step's curve;
    module docstring)."""
    from ducc0.sht import adjoint_synthesis_2d, synthesis_2d

    rng = np.random.default_rng(L)
    nalm = (L + 1) * (L + 2) // 2
    alm = (rng.standard_normal((1, nalm)) + 1j * rng.standard_normal((1, nalm))).astype(np.complex128)
    alm[0, : L + 1] = alm[0, : L + 1].real  # m = 0: real coefficients of a real map
    ntheta, nphi = L + 1, 2 * L + 2
    values = np.empty((1, ntheta, nphi))
    out = np.empty_like(alm)

    def pair():
        synthesis_2d(alm=alm, spin=0, lmax=L, geometry="GL", ntheta=ntheta, nphi=nphi, nthreads=1, map=values)
        adjoint_synthesis_2d(map=values, spin=0, lmax=L, geometry="GL", nthreads=1, alm=out)

    return pair


#: Memory of one S² RK4 step as ``solve`` takes it, in grid-sized float64 arrays: 32 measured at L = 2047 (peak
#: resident 2.95 GB against 0.79 GB before the step, grid 67 MB); 40 with a margin, plus the process's 1 GB.
STEP_GRIDS = 40
#: The shtns loop's grids (on the dealiased grid of ``bench_table.shtns_rhs``): ρ, u, ∇u, f ∇u, their analysis
#: and RK4's stage sums; 16 with a margin.
SHTNS_GRIDS = 16


def large_degrees(budget_gb, degrees=(1023, 2047, 4095, 8191)):
    """The S² step, ducc0's bare transforms and the shtns loop at large L (``--large``), each where its memory
    (``STEP_GRIDS``, ``SHTNS_GRIDS`` grid-sized arrays: the study's own need, not the machine's free memory) fits
    ``budget_gb``. One thread, the best of two calls (three below L = 2047) after a warm-up below L = 4095 (a call
    at L = 8191 takes half a minute: the first call is timed too there, the plans being made before it)."""
    from _anchors import problem_step, rk4_step
    from meanfield.domains.sphere import DuccBackend
    from meanfield.domains.sphere.transforms import dealiased_degree

    DuccBackend.nthreads = 1
    model = mf.SelfAttention(BETA)
    budget = budget_gb * 1e9
    rows = {"S² step (ducc0)": [], "ducc0 synthesis + adjoint": [], "shtns loop step": []}
    for L in degrees:
        repeat, warm = (3, True) if L < 2047 else (2, L < 4095)
        rows["ducc0 synthesis + adjoint"].append((L, best(ducc_transforms(L), repeat, warmup=warm)))
        Ld = dealiased_degree(L)
        if SHTNS_GRIDS * 8.0 * (Ld + 1) * 2 * (Ld + 1) + 1e9 <= budget:
            loop = shtns_loop(L, BETA)
            if loop is not None:
                rhs, alm = loop
                rows["shtns loop step"].append((L, best(lambda: rk4_step(rhs, alm), repeat, warmup=warm)))
                del loop, rhs, alm
        if STEP_GRIDS * 8.0 * (L + 1) * (2 * L + 1) + 1e9 <= budget:
            grid = mf.SphereGrid(L, backend="ducc0")
            y = mf.Density.from_function(grid, lambda x: np.exp(2.0 * x[..., 2])).values
            rows["S² step (ducc0)"].append((L, best(problem_step(model, grid, y), repeat, warmup=warm)))
            del grid, y
        print(f"L = {L}: " + ", ".join(f"{k} {v[-1][1]:.3g} s" for k, v in rows.items() if v and v[-1][0] == L),
              flush=True)
    print("\n| curve | L | seconds | local exponent (from the previous L) |\n|---|---|---|---|")
    fits = {}
    for name, pts in rows.items():
        if not pts:
            continue
        Ls, ts = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
        for i, (L, t) in enumerate(pts):
            local = f"{np.log(t / ts[i - 1]) / np.log((L + 1) / (Ls[i - 1] + 1)):.2f}" if i else "–"
            print(f"| {name} | {L} | {t:.3g} | {local} |")
        if len(pts) >= 2:
            fits[name] = slope_interval(Ls + 1.0, ts)
    for name, (p, lo, hi) in fits.items():
        print(f"{name}: fitted exponent in L over L = {rows[name][0][0]}…{rows[name][-1][0]}: {p:.2f} "
              f"[{lo:.2f}, {hi:.2f}]")
    return rows, fits


def ring_limit_triples(L: int) -> float:
    """The (ℓ, m, ring) triples of one spin-0 transform of degree L on L + 1 Gauss–Legendre rings that survive
    libsharp's and ducc0's ring limit m <= L sin θ + max(100, 0.01 L) (the orders whose P_ℓ^m are negligible on a
    ring near the poles are skipped): Σ_rings Σ_{m <= m_lim} (L − m + 1), the Legendre part's work, L³/2 at most."""
    x = np.polynomial.legendre.leggauss(L + 1)[0]
    m_lim = np.minimum(L, np.floor(L * np.sqrt(1.0 - x * x) + max(100.0, 0.01 * L) + 0.5))
    return float(np.sum((m_lim + 1) * (L + 1) - m_lim * (m_lim + 1) / 2))


def print_triples(degrees=(255, 511, 1023, 2047, 4095, 8191)):
    """``--triples``: the count of :func:`ring_limit_triples` against L³/2 and its local exponents (no timing):
    the work of the Legendre transforms approaches L³ from below."""
    print("| L | triples | / (L³/2) | local exponent |\n|---|---|---|---|")
    prev = None
    for L in degrees:
        n = ring_limit_triples(L)
        local = "–" if prev is None else f"{np.log(n / prev[1]) / np.log((L + 1) / (prev[0] + 1)):.3f}"
        print(f"| {L} | {n:.3e} | {n / ((L + 1) ** 3 / 2):.3f} | {local} |")
        prev = (L, n)


def particle_dims(repeat, quick):
    n = 2048
    dims = [2, 4, 8, 16, 32, 64] + ([] if quick else [128])
    out = []
    for d in dims:
        x = uniform_sphere(n, d, rng=d)
        w = np.full(n, 1.0 / n)
        model = mf.SelfAttention(BETA)
        out.append(best(lambda: kernels.field(model, x, w, x), repeat))
    return np.array(dims), np.array(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "cost_curves.png"))
    ap.add_argument("--quick", action="store_true", help="the smaller sizes only (a minute)")
    ap.add_argument("--crossover", action="store_true", help="measure the crossovers of 'auto' on S¹ and S² only")
    ap.add_argument("--studies", action="store_true", help="the example studies' particles: 'auto' against the "
                    "pairwise sums (the old rule's choice), same process")
    ap.add_argument("--large", action="store_true", help="the S² step, ducc0's transforms and the shtns loop at "
                    "L = 1023 … 8191 where their memory fits --budget-gb (about 15 minutes)")
    ap.add_argument("--budget-gb", type=float, default=16.0, help="the memory --large may use (default 16 GB)")
    ap.add_argument("--triples", action="store_true", help="the Legendre transforms' work at L = 255 … 8191 counted "
                    "(no timing): how it approaches L³")
    args = ap.parse_args()
    numba.set_num_threads(1)
    if args.triples:
        print_triples()
        return
    if args.large:
        large_degrees(args.budget_gb)
        return
    if args.crossover:
        measure_crossovers(max(args.repeat, 5))
        return
    if args.studies:
        studies_before_after(max(args.repeat, 5))
        return

    # the density steps first: shtns's OpenMP loop, timed after numba's parallel kernels have started their
    # thread pool, ran 10–100× slower under load
    L, t_step, sht, Lz, t_zonal, t_bare = density_steps(args.repeat, args.quick)
    n_pair, t_pair, n_point, t_point = pair_and_point_sums(args.repeat, args.quick)
    n_ring, t_ring = ring_sums(args.repeat, args.quick)
    dims, t_dim = particle_dims(args.repeat, args.quick)
    large = n_point >= 10**4
    big = dims >= 16
    top = L >= 255  # the S² step's asymptotic regime: the transforms' L³ (L² log L FFTs are a lower order)
    crossover = measured_crossover(n_pair, t_pair, n_point, t_point)
    fits = [  # (curve, sizes, x, t, expected)
        ("S² field, pair sums, t(n)", "n", n_pair, t_pair, "2"),
        ("S² field, point sums, t(n)", "n", n_point[large], t_point[large], "~1"),
        (RING_FIT, "n", n_ring[n_ring >= 10**4],
         t_ring[n_ring >= 10**4], "1"),
        ("S² density RK4 step (ducc0), t(L)", "L", L, t_step, "~3 (L³ transforms; L² log L below)"),
        ("S² density RK4 step (ducc0), t(L), L >= 255", "L", L[top], t_step[top], "3"),
        (BARE_FIT, "L", L, t_bare, "the step's if it follows them"),
        (BARE_FIT_TOP, "L", L[top], t_bare[top], "the step's from 255"),
    ]
    if sht is not None:
        fits.append((SHTNS_FIT, "L", sht[0], sht[1], "~3"))
    fits += [
        (ZONAL_FIT, "L", Lz, t_zonal, "~2 (dense Gegenbauer transforms)"),
        (DIM_FIT, "d", dims[big], t_dim[big], "~1"),
    ]
    print("| curve | sizes | fitted exponent [95 % interval] | expected |")
    print("|---|---|---|---|")
    exponents = {}
    for name, var, x, t, expected in fits:
        p, lo, hi = slope_interval(x, t)
        exponents[name] = p
        print(f"| {name} | {var} = {x[0]:g}…{x[-1]:g} | {p:.2f} [{lo:.2f}, {hi:.2f}] | {expected} |")
    print(f"S² field crossover (these sizes, log-log interpolation): point sums cheaper above n ≈ {crossover:.3g}; "
          "'auto' uses the crossovers of --crossover (meanfield.domains.sphere/circle.SPECTRAL_CROSSOVER)")
    if sht is None:
        print("shtns: not importable here (optional; it needs FFTW to build): its loop is not drawn")
    print("S² step / ducc0 (synthesis + adjoint) at the same L: " + ", ".join(
        f"L = {x:g}: {a / b:.1f}" for x, a, b in zip(L, t_step, t_bare)) + " (flat: the step follows the transforms)")
    rows = [("pair", n_pair, t_pair), ("point", n_point, t_point), ("rings", n_ring, t_ring), ("S² step L", L, t_step),
            ("ducc0 synthesis + adjoint L", L, t_bare),
            ("zonal step L", Lz, t_zonal), ("dim d", dims, t_dim)] + ([("shtns L", *sht)] if sht is not None else [])
    for name, xs, ts in rows:
        print(f"{name}: " + ", ".join(f"{x:g}: {t:.3g} s" for x, t in zip(xs, ts)))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def guide(ax, x, t, p):  # a dashed line of slope p through the curve's last point
        x = np.asarray(x, float)
        ax.loglog(x, t[-1] * (x / x[-1]) ** p, "--", color="0.7", lw=0.8)

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4), constrained_layout=True)
    ax = axes[0]
    p_pair, p_point = exponents["S² field, pair sums, t(n)"], exponents["S² field, point sums, t(n)"]
    ax.loglog(n_pair, t_pair, "o-", label=f"pair sums: n^{p_pair:.2f}")
    ax.loglog(n_point, t_point, "s-", label=f"point sums: n^{p_point:.2f} (n >= 10⁴)")
    ax.loglog(n_ring, t_ring, "v-", label=f"zonal S^{ZONAL_D - 1} rings (θ̇, div): n^{exponents[RING_FIT]:.2f} "
              "(n >= 10⁴)")
    if np.isfinite(crossover):
        ax.axvline(crossover, color="0.5", ls=":", label=f"crossover of these curves n ≈ {crossover:.2g}")
    from meanfield.domains.sphere import SPECTRAL_CROSSOVER
    from meanfield.domains.sphere.point_sums import sphere_degree

    n_auto = SPECTRAL_CROSSOVER.at(sphere_degree(BETA))
    ax.axvline(n_auto, color="k", ls="--", lw=0.8, label=f"'auto' takes point sums from n = {n_auto}")
    ax.set(xlabel=f"n (particles on S², rings on S^{ZONAL_D - 1})", ylabel="seconds per field",
           title=f"S² field, SA β = {BETA:g}, one thread")
    ax.legend(fontsize=8)
    ax = axes[1]
    p_all = exponents["S² density RK4 step (ducc0), t(L)"]
    p_top = exponents["S² density RK4 step (ducc0), t(L), L >= 255"]
    ax.loglog(L, t_step, "o-", label=f"S² (ducc0): L^{p_all:.2f}; L^{p_top:.2f} from 255")
    guide(ax, L, t_step, 3.0)
    ax.loglog(L, t_bare, "d:", color="C3", label=f"ducc0 alone, synthesis + adjoint: L^{exponents[BARE_FIT]:.2f}; "
              f"L^{exponents[BARE_FIT_TOP]:.2f} from 255")
    if sht is not None:
        ax.loglog(sht[0], sht[1], "^-", label=f"S² shtns loop: L^{exponents[SHTNS_FIT]:.2f}")
    ax.loglog(Lz, t_zonal, "s-", label=f"zonal S^{ZONAL_D - 1}: L^{exponents[ZONAL_FIT]:.2f}")
    ax.set(xlabel="degree L", ylabel="seconds per RK4 step", title="density RK4 step (dashed: L³)")
    ax.legend(fontsize=8)
    ax = axes[2]
    ax.loglog(dims, t_dim, "o-", label=f"d^{exponents[DIM_FIT]:.2f} (d >= 16)")
    ax.set(xlabel="d", ylabel="seconds per field", title="pairwise field, n = 2048 on S^(d−1)")
    ax.legend(fontsize=8)
    from matplotlib.ticker import NullFormatter

    for ax in axes:
        ax.xaxis.set_minor_formatter(NullFormatter())
    fig.savefig(args.out, dpi=110)
    print(f"figure: {args.out}")


if __name__ == "__main__":
    main()
