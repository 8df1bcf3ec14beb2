"""The performance table: each row against its anchor measured in the same run (the figures docs/install.md and
the user guide quote).

One thread unless a row says otherwise (NUMBA_NUM_THREADS, OMP_NUM_THREADS and
the ducc0 transforms all follow it). Each figure is the median of ``--repeat``
(default 5) timed calls after one warm-up call; the ratio is anchor / ours
(> 1: ours is faster). Anchors needing packages that are not installed (shtns)
are skipped with a note.

Rows
----
s2-step      S² SA β = 4, one RK4 step, L = 63 / 127 / 255: the solver's step (``solve``'s
             fixed stepper: stages on the coefficients where the version has them, else
             four right-hand sides on grid values; ``_anchors.grid_rhs``) against a loop on shtns
             (scalar synthesis of ρ and u, gradient synthesis of u, one vector analysis of
             the flux, on the same dealiased Gauss grid, state = coefficients); also the cilm
             reference path (scalar form), and the solver on the optional shtns backend
             (where shtns is installed).
s2-heads     S² two random heads (general Q, K, V), one RK4 step at lmax 24 and 48: the
             solver's default path (the moment path where the version has it; its step as
             ``solve`` takes it, stages on the coefficients where the version has them) and
             the quadrature path with the compiled sum, against the quadrature path with the
             models' NumPy sum.
particles    S² particles n = 4096, d = 3, SA β = 4: one field (fused kernel against
             NumPy, and against a numba loop that only evaluates the n² exponentials
             with the kernel's own vectorised exp: the kernel's share of that limit), and one RK4 step of ``simulate``
             against a NumPy RK4 step, 1 and 2 threads.
s2-spectral  One S² field for 10⁶ points by the spectral sums, against the fused
             pairwise kernel at 2·10⁴ points scaled by n².
rd           R^d softmax, L2, sigmoid and masked attention, n = 4096, d = 2 and 16: the
             compiled field against the models' NumPy sums, and one softmax RK4 step of
             ``simulate`` against a plain NumPy RK4 step.
circle       Circle n = 1024, SA β = 4, solve to t = 10 against a plain NumPy FFT RK4
             loop taking the same steps.

The cost of new capabilities against the nearest existing step (issues 31 and 32; each pair timed in
alternation in one process, medians of max(3 × repeat, 15) timings for calls of a few ms, each the mean of
enough calls to last ~20 ms (``_timing.interleaved``), of max(repeat, 7) or ``repeat`` for the longer ones;
the note gives the cost ours/anchor, the spread of the pairs' ratios, the target and whether it is met):

noise        Issue 31. S² SA β = 4, noise D = 0.1 against D = 0, L = 63 and 127: one RK4 step of the grid
             problem as ``solve`` takes it (``_anchors.problem_step``: coefficient stages, with noise the
             integrating factor of DΔ; target ≤ 1.2×). Particles n = 4096 on S², SA β = 4, dt = 0.01, one
             thread: one step within an output interval (the Strang splitting stepper's merged step, one RK4
             drift step and one Brownian draw, against the RK4 stepper's step; target ≤ 1.3×); and ``simulate``
             over one output interval of one step and of ten (the splitting's extra half drift step per interval
             included).
layers       Issue 32. S² SA with β a schedule of layers (``meanfield.models.layers``: 4, 4.5, 3.5, 4 on unit
             depths) against constant β = 4, L = 63 and 127: one RK4 step inside a layer (as ``solve`` takes
             it), and ``solve`` over an output interval [0.9, 1.1] (dt = 0.01) that crosses the boundary at 1
             (the right-hand side rebuilt there; no E_β monitor for time-dependent weights) against the same
             interval with constant weights. Target: within 5 %.
feedforward  Issue 32. S² at L = 127: SA β = 4 + FeedForward(W, A, b, 'gelu', 'sphere'), d = 3, m = 8 (a
             Transformer; the block a fixed drift on the grid) against SA alone: one RK4 step as ``solve``
             takes it. Target: at most +10 %.
causal       Issue 32. The causal field of n = 4096 tokens on S² (SA β = 4, causal=True, rows from
             ``particles.with_positions``: n(n + 1)/2 pairs) against the full field (n² pairs), both through
             ``meanfield.kernels.field``, as throughput per pair computed, on one and on two threads.
             Target: ≥ 0.9× the full field's pairs per second.

Run:  python benchmarks/bench_table.py [--rows s2-step circle ...] [--repeat 5]
"""

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "2")
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import sys  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy.fft as sfft  # noqa: E402

import meanfield as mf  # noqa: E402
from meanfield.kernels.fastexp import FASTMATH, vexp  # noqa: E402
from _anchors import grid_rhs, numpy_field, rk4_step, solver_step  # noqa: E402
from _anchors import problem_step  # noqa: E402
from _timing import interleaved, median  # noqa: E402

ROWS = ("s2-step", "s2-heads", "particles", "s2-spectral", "rd", "circle", "noise", "layers", "feedforward", "causal")


def report(work, ours, anchor, name, note=""):
    ratio = f"{anchor / ours:7.2f}" if anchor else "      —"
    a = f"{anchor * 1e3:10.2f} ms" if anchor else "           —"
    line = f"| {work:<52} | {ours * 1e3:10.2f} ms | {name:<34} | {a} | {ratio} | {note}"
    print(line, flush=True)


def report_cost(work, ours, anchor, name, ratios, target, what="cost"):
    """A row of a new capability against its nearest existing step: ``ratios`` ours/anchor of the timed pairs;
    ``target``: the largest cost allowed (ours/anchor), or with ``what="throughput"`` the least throughput
    (anchor/ours per unit of work, already scaled into ``ours``)."""
    r = ours / anchor
    lo, hi = min(ratios), max(ratios)
    if target is None:
        note = f"cost ×{r:.3f} (pairs {lo:.3f}–{hi:.3f})"
    elif what == "cost":
        note = (f"cost ×{r:.3f} (pairs {lo:.3f}–{hi:.3f}); target ≤ ×{target:g}: "
                f"{'met' if r <= target else 'NOT met'}")
    else:
        note = (f"throughput per pair ×{1 / r:.3f} (pairs {1 / hi:.3f}–{1 / lo:.3f}); target ≥ ×{target:g}: "
                f"{'met' if 1 / r >= target else 'NOT met'}")
    report(work, ours, anchor, name, note)


# ------------------------------------------------------------------ S² density steps
def shtns_rhs(L, beta):
    """The anchor: SA on S² with shtns, state = coefficients, 4 transforms per right-hand side."""
    import shtns

    from meanfield.domains.sphere import funk_hecke
    from meanfield.domains.sphere.transforms import dealiased_degree

    Ld = dealiased_degree(L)
    sh = shtns.sht(L, L, 1, shtns.sht_orthonormal + shtns.SHT_NO_CS_PHASE)
    sh.set_grid(nlat=Ld + 1, nphi=2 * (Ld + 1), flags=shtns.sht_gauss)
    l = sh.l
    D, N = funk_hecke(L, beta)
    Nl, ll1 = N[l], l * (l + 1.0)
    y00 = 1.0 / np.sqrt(4.0 * np.pi)

    def rhs(alm):
        u_lm = Nl * alm
        rho, u = sh.synth(alm), sh.synth(u_lm)
        u_t, u_p = sh.synth_grad(u_lm)
        s = 1.0 / (D[0] * alm[0].real * y00)
        f = rho * s / (1.0 + beta * s * u)  # ρ∇φ = ρ s∇u/(1 + βsu)
        S, _ = sh.analys(f * u_t, f * u_p)
        out = ll1 * S  # −div(ρ∇φ) = −ΔS = l(l+1)S
        out[0] = 0.0
        return out

    theta = np.arccos(sh.cos_theta)
    phi = 2.0 * np.pi * np.arange(2 * (Ld + 1)) / (2 * (Ld + 1))
    return sh, rhs, theta, phi


def row_s2_step(repeat):
    from meanfield.domains.sphere import DuccBackend, SphereSpectral

    DuccBackend.nthreads = 1  # one thread (older versions fixed it at 2 whatever the setting)
    beta = 4.0
    f = lambda x: np.exp(2.0 * x[..., 2] + x[..., 0] * x[..., 1])  # noqa: E731
    # shtns times its algorithm variants when it plans a grid; planned after the ducc0 steps have run, the
    # anchor picked a variant 1.7× slower at L = 255 (33 ms against 19 ms). So every shtns plan (the anchor's
    # and the shtns backend's) is made first, in a quiet process.
    anchors, shtns_rates = {}, {}
    for L in (63, 127, 255):
        try:
            anchors[L] = shtns_rhs(L, beta)
        except ImportError:
            continue
        try:
            shtns_rates[L] = grid_rhs(mf.SelfAttention(beta), mf.SphereGrid(L, backend="shtns"))
        except (ValueError, ImportError):  # a version without the optional shtns backend
            pass
    for L in (63, 127, 255):
        g = mf.SphereGrid(L, backend="ducc0")
        y = mf.Density.from_function(g, f).values
        rate = grid_rhs(mf.SelfAttention(beta), g)
        t_ours = median(solver_step(rate, y), repeat)
        try:
            ref = SphereSpectral(g, beta, 1.0, True, fast=False)
        except TypeError:  # a version without the ring-plan path
            ref = None
        if ref is not None:
            t_ref = median(lambda: rk4_step(ref.rate, y), repeat)
            report(f"S² SA β=4 RK4 step, L = {L}", t_ours, t_ref, "cilm path (scalar form)")
        if L not in anchors:
            report(f"S² SA β=4 RK4 step, L = {L}", t_ours, None, "shtns loop", "shtns not installed: skipped")
            continue
        sh, rhs, theta, phi = anchors[L]
        tt, pp = np.meshgrid(theta, phi, indexing="ij")
        x = np.stack([np.sin(tt) * np.cos(pp), np.sin(tt) * np.sin(pp), np.cos(tt)], -1)
        alm = sh.analys(f(x))
        t_sht = median(lambda: rk4_step(rhs, alm), repeat)
        note = ""
        if L == 63:  # the anchor solves the same equation: its tendency at our nodes against ours
            mass = alm[0].real * np.sqrt(4.0 * np.pi)
            ours = rate.rate(y)
            theirs = np.array([[sh.SH_to_point(rhs(alm), np.cos(t), p) for p in g.longitudes]
                               for t in g.colatitudes]) / mass
            note = f"tendencies agree to {np.max(np.abs(ours - theirs)) / np.max(np.abs(ours)):.0e}"
        report(f"S² SA β=4 RK4 step, L = {L}", t_ours, t_sht, "shtns loop (4 transforms/RHS)", note)
        if L in shtns_rates:
            t_s = median(solver_step(shtns_rates[L], y), repeat)
            report(f"S² SA β=4 RK4 step, L = {L}, backend='shtns'", t_s, t_sht, "shtns loop (4 transforms/RHS)")


def two_heads(d=3, beta=2.0):
    heads = []
    for seed in (1, 2):
        r = np.random.default_rng(seed)
        Q, K, V = (r.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
        heads.append(mf.SelfAttention(beta, Q=Q, K=K, V=V))
    return mf.MultiHeadAttention(heads)


def row_s2_heads(repeat):
    numba.set_num_threads(1)
    model = two_heads()
    for L in (24, 48):
        g = mf.SphereGrid(L)
        y = mf.Density.from_function(g, lambda x: np.exp(x[..., 2] + 0.5 * x[..., 0] * x[..., 1])).values
        default = grid_rhs(model, g)  # as solve builds it: the strategy 'auto' picks, compiled sums
        ref = grid_rhs(model, g, "quadrature", own_sum=True)  # the models' own NumPy sum
        t_ref = median(lambda: rk4_step(ref.rate, y), min(repeat, 5))
        paths = [(default.strategy, default)]
        if default.strategy != "quadrature":
            paths.append(("quadrature, compiled sum", grid_rhs(model, g, "quadrature")))
        for name, rate in paths:
            t = median(solver_step(rate, y), repeat)  # on the coefficients where the path has stages there
            report(f"S² two random heads, RK4 step, lmax {L}, {name}", t, t_ref, "quadrature, the models' NumPy sum",
                   "target ≤ 500 ms at lmax 48" if L == 48 else "")


# ------------------------------------------------------------------ particles
@numba.njit(fastmath=FASTMATH, nogil=True)
def _exps_only(x, beta, out):
    """The n² exponentials of the field alone, with the kernel's own vectorised exp (``vexp``).

    xT is allocated here rather than passed in: the same loop over an argument array runs 14 % slower
    (6.8 against 5.9 ms at n = 4096, whatever its alignment), so this is the stricter limit."""
    n = x.shape[0]
    xT = np.ascontiguousarray(x.T)
    for i in range(n):
        a0, a1, a2 = beta * x[i, 0], beta * x[i, 1], beta * x[i, 2]
        s = 0.0
        for j in range(n):
            s += vexp(a0 * xT[0, j] + a1 * xT[1, j] + a2 * xT[2, j] - beta)
        out[i] = s


def numpy_rk4(x, beta, h):
    def F(y):
        return numpy_field(y / np.linalg.norm(y, axis=1, keepdims=True), beta)

    y = rk4_step(F, x, h)
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def row_particles(repeat):
    from meanfield import kernels
    from particles import simulate, uniform_sphere

    n, beta = 4096, 4.0
    x = uniform_sphere(n, 3, rng=0)
    w = np.full(n, 1.0 / n)
    model = mf.SelfAttention(beta)
    numba.set_num_threads(1)
    out = np.empty(n)
    t_field = median(lambda: kernels.field(model, x, w, x), repeat)
    t_np = median(lambda: numpy_field(x, beta), repeat)
    t_exp = median(lambda: _exps_only(x, beta, out), repeat)
    from meanfield.kernels.pairwise import pairwise_sums

    t_sums = median(lambda: pairwise_sums(x, w, x, beta), repeat)
    report("S² particle field n=4096 d=3 SA β=4", t_field, t_np, "NumPy (Gram, exp, matmul)")
    report("  its fused sums, against the n² exponentials alone", t_sums, t_exp, "numba loop of its exps (vexp)",
           f"kernel at {t_exp / t_sums:.0%} of the exp limit (target ≥ 80 %)")
    try:
        single = kernels.field(model, x, w, x, precision="single")
    except TypeError:  # a version without single precision
        single = None
    if single is not None:
        ref = kernels.field(model, x, w, x)
        t_single = median(lambda: kernels.field(model, x, w, x, precision="single"), repeat)
        err = np.max(np.abs(single - ref)) / np.max(np.abs(ref))
        report("  same field in single precision (float32 sums)", t_single, t_field, "the float64 field",
               f"relative error {err:.1e}")
    h = 0.01
    for threads in (1, 2):
        numba.set_num_threads(threads)
        t_sim = median(lambda: simulate(model, x, [0.0, h], dt=h), repeat)
        t_nrk = median(lambda: numpy_rk4(x, beta, h), repeat)
        report(f"S² particles RK4 step n=4096 via simulate, {threads} thr", t_sim, t_nrk, "NumPy RK4 step",
               "target ≥ 10× on one thread" if threads == 1 else "")
    numba.set_num_threads(1)


def row_s2_spectral(repeat):
    from meanfield import kernels
    from meanfield.domains.sphere.point_sums import sphere_spectral_field
    from particles import uniform_sphere

    beta = 4.0
    model = mf.SelfAttention(beta)
    numba.set_num_threads(1)
    n_small, n_big = 20000, 10**6
    xs = uniform_sphere(n_small, 3, rng=1)
    ws = np.full(n_small, 1.0 / n_small)
    t_pair = median(lambda: kernels.field(model, xs, ws, xs), min(repeat, 5))
    xb = uniform_sphere(n_big, 3, rng=2)
    wb = np.full(n_big, 1.0 / n_big)
    t_spec = median(lambda: sphere_spectral_field(xb, wb, xb, beta), min(repeat, 5))
    scaled = t_pair * (n_big / n_small) ** 2
    report("S² one field, 10⁶ points, spectral sums", t_spec, scaled, "pairwise at 2·10⁴, × (50)²",
           f"pairwise 2·10⁴ points: {t_pair:.2f} s; target < 3 s")
    from particles import simulate

    t_auto = median(lambda: simulate(model, xs, [0.0, 0.01], dt=0.01), min(repeat, 5))
    strategy = simulate(model, xs, [0.0, 0.01], dt=0.01).strategy
    t_pw = median(lambda: simulate(model, xs, [0.0, 0.01], dt=0.01, strategy="pairwise"), min(repeat, 5))
    report("S² particles RK4 step n=2·10⁴ via simulate ('auto')", t_auto, t_pw, "strategy='pairwise'",
           f"strategy {strategy!r}")


def row_rd(repeat):
    from meanfield import kernels
    from meanfield.models import L2, Masked, Sigmoid, Sinkhorn, Softmax
    from particles import simulate

    numba.set_num_threads(1)
    compiled = getattr(kernels, "euclidean_field", None)
    for d in (2, 16):
        n = 4096
        x = np.random.default_rng(d).standard_normal((n, d))
        w = np.full(n, 1.0 / n)
        # Sinkhorn with τ = d: logits ⟨x, y⟩/τ of order 1 (at τ = 1, d = 16 the iteration needs > 10³ steps)
        for model in (Softmax(beta=1.0), L2(), Sigmoid(), Masked(), Sinkhorn(tau=float(d))):
            y = x.copy()
            if model.kind == "masked":
                y[:, 0] = np.linspace(0.0, 1.0, n)
            t_model = median(lambda: model.field(y, w, y), repeat)
            if compiled is None or model.kind not in getattr(kernels, "compiled_models", ("softmax",)):
                report(f"R^d {model.kind} field n=4096 d={d}", t_model, None, "—", "no compiled sum in this version")
                continue
            t_kernel = median(lambda: compiled(model, y, w, y), repeat)
            report(f"R^d {model.kind} field n=4096 d={d}, compiled", t_kernel, t_model, "model.field (NumPy)",
                   "target ≥ 10×")

        def numpy_softmax_at(y):
            G = y @ y.T
            E = np.exp(G - G.max(axis=1, keepdims=True))
            return (E @ y) / E.sum(axis=1, keepdims=True)

        model = Softmax(beta=1.0)
        t_sim = median(lambda: simulate(model, x, [0.0, 0.01], dt=0.01), repeat)
        t_nrk = median(lambda: rk4_step(numpy_softmax_at, x, 0.01), repeat)
        strategy = simulate(model, x, [0.0, 0.01], dt=0.01).strategy
        report(f"R^d softmax RK4 step n=4096 d={d} via simulate", t_sim, t_nrk, "plain NumPy RK4 step",
               f"strategy {strategy!r}")


# ------------------------------------------------------------------ circle
def numpy_circle_loop(values, beta, t1, nsteps, rfft=sfft.rfft, irfft=sfft.irfft):
    """Plain NumPy RK4 of the circle SA equation with 3/2 padding and the same multipliers (scipy's FFTs, or
    others with their signatures)."""
    from meanfield.domains.circle import bessel_multipliers
    from meanfield.domains.circle.fourier import padded_size

    n = values.size
    M = padded_size(n)
    D, N = bessel_multipliers(M // 2, beta)
    k = np.arange(n // 2 + 1)

    def rhs(y):
        P = np.zeros(M // 2 + 1, dtype=complex)
        P[: n // 2 + 1] = rfft(y) * (M / n)
        if n % 2 == 0:
            P[n // 2] *= 0.5
        rho, num, den = irfft(P, M), irfft(P * N, M), irfft(P * D, M)
        F = rfft(rho * num / den)[: n // 2 + 1] * (n / M) * (-1j * k)
        if n % 2 == 0:
            F[-1] = 0.0
        return irfft(F, n)

    h = t1 / nsteps
    y = values.copy()
    for _ in range(nsteps):
        y = rk4_step(rhs, y, h)
    return y


def row_circle(repeat):
    n, beta = 1024, 4.0
    rng = np.random.default_rng(0)
    g = mf.CircleGrid(n)
    kk = np.arange(1, 6)
    v = 1 + 1e-3 * np.cos(np.multiply.outer(g.angles, kk) + rng.uniform(0, 2 * np.pi, kk.size)).sum(-1)
    mu0 = mf.Density(g, v / g.integrate(v))
    model = mf.SelfAttention(beta)
    sol = mf.solve(model, mu0, (0.0, 10.0), method="rk4")
    t_solve = median(lambda: mf.solve(model, mu0, (0.0, 10.0), method="rk4"), repeat)
    t_loop = median(lambda: numpy_circle_loop(mu0.values, beta, 10.0, sol.nsteps), repeat)
    end = numpy_circle_loop(mu0.values, beta, 10.0, sol.nsteps)
    diff = np.max(np.abs(end - sol.densities[-1].values)) / np.max(np.abs(end))
    report("circle n=1024 SA β=4, solve to t=10", t_solve, t_loop, f"NumPy FFT RK4 loop, {sol.nsteps} steps",
           f"same end state to {diff:.0e} (steps differ in length); target ratio ≥ 1/1.2")
    try:
        from ducc0.fft import c2r, r2c
    except ImportError:
        return
    t_ducc = median(lambda: numpy_circle_loop(mu0.values, beta, 10.0, sol.nsteps, r2c,
                                              lambda c, m: c2r(c, lastsize=m, forward=False, inorm=2)), repeat)
    report("circle n=1024 SA β=4, solve to t=10", t_solve, t_ducc, "same loop on ducc0's FFTs",
           "the solver uses ducc0's FFTs too; its monitor and energy checks are the difference")


# ------------------------------------------------------------------ new capabilities against the nearest step
def _s2_density(L):
    g = mf.SphereGrid(L)
    return g, mf.Density.from_function(g, lambda x: np.exp(2.0 * x[..., 2] + x[..., 0] * x[..., 1])).unit_mass()


def row_noise(repeat):
    from meanfield import kernels
    from meanfield.domains import SPHERE
    from meanfield.domains.sphere import DuccBackend
    from meanfield.integrate import FixedStepper
    from particles import simulate, uniform_sphere
    from particles.system import SplittingStepper

    DuccBackend.nthreads = 1
    numba.set_num_threads(1)
    for L in (63, 127):
        g, mu = _s2_density(L)
        noisy = problem_step(mf.SelfAttention(4.0, noise=0.1), g, mu.values)
        plain = problem_step(mf.SelfAttention(4.0), g, mu.values)
        t_n, t_p, r = interleaved(noisy, plain, max(3 * repeat, 15), min_time=0.02)
        report_cost(f"S² SA β=4 D=0.1 RK4 step, L = {L}", t_n, t_p, "the noiseless step (D = 0)", r, 1.2)

    n, h = 4096, 0.01
    x = uniform_sphere(n, 3, rng=0)
    w = np.full(n, 1.0 / n)
    noisy_model, plain_model = mf.SelfAttention(4.0, noise=0.1), mf.SelfAttention(4.0)
    strategies = {simulate(m, x, [0.0, h], dt=h, rng=1).strategy for m in (noisy_model, plain_model)}
    assert strategies == {"pairwise"}, strategies  # the field simulate sums at n = 4096 for both

    def velocity(y):  # simulate's velocity on the pairwise path: the field at the retracted points
        y = SPHERE.retract(y)
        return kernels.field(plain_model, y, w, y)

    split = SplittingStepper(velocity, 0.0, x, 1e6 * h, h, 0.1, SPHERE, np.random.default_rng(2))
    fixed = FixedStepper(velocity, 0.0, x, 1e6 * h, method="rk4", h=h, subdivide=True)

    def stepped(stepper):
        def step():  # the stepper's step, then the retraction the integrator applies to every step
            stepper.step()
            stepper.y = SPHERE.retract(stepper.y)
        return step

    t_n, t_p, r = interleaved(stepped(split), stepped(fixed), max(repeat, 7))
    report_cost("S² particles n=4096 D=0.1, one step in an interval", t_n, t_p, "RK4 stepper's step, D = 0", r, 1.3)
    for steps in (1, 10):
        t_n, t_p, r = interleaved(lambda: simulate(noisy_model, x, [0.0, steps * h], dt=h, rng=3),
                                  lambda: simulate(plain_model, x, [0.0, steps * h], dt=h), repeat)
        report_cost(f"S² particles n=4096 D=0.1, simulate, {steps} step{'s' if steps > 1 else ''}", t_n, t_p,
                    "simulate, D = 0", r, None)
        print(f"|   (an output interval of {steps} step{'s' if steps > 1 else ''} drifts {steps + 1} RK4 steps' worth "
              f"with noise: ×{(steps + 1) / steps:g} expected, plus the draws; the step's target is the row above)",
              flush=True)


def row_layers(repeat):
    from meanfield.domains.sphere import DuccBackend
    from meanfield.models import layers

    DuccBackend.nthreads = 1
    numba.set_num_threads(1)
    schedule = mf.SelfAttention(layers([4.0, 4.5, 3.5, 4.0]))  # layer k on [k, k + 1)
    constant = mf.SelfAttention(4.0)
    for L in (63, 127):
        g, mu = _s2_density(L)
        # steps of 1e-4 from t = 0.25: every timed step inside the first layer [0, 1)
        t_s, t_c, r = interleaved(problem_step(schedule, g, mu.values, h=1e-4, t0=0.25),
                                  problem_step(constant, g, mu.values, h=1e-4, t0=0.25), max(3 * repeat, 15),
                                  min_time=0.02)
        report_cost(f"S² SA β layers, RK4 step inside a layer, L = {L}", t_s, t_c, "constant β = 4", r, 1.05)
        span = (0.9, 1.1)
        sol = mf.solve(schedule, mu, span, method="rk4", dt=0.01, representation="grid", refine=False)
        ref = mf.solve(constant, mu, span, method="rk4", dt=0.01, representation="grid", refine=False)
        t_s, t_c, r = interleaved(
            lambda: mf.solve(schedule, mu, span, method="rk4", dt=0.01, representation="grid", refine=False),
            lambda: mf.solve(constant, mu, span, method="rk4", dt=0.01, representation="grid", refine=False),
            max(repeat, 7))
        report_cost(f"S² SA β layers, solve [0.9, 1.1] across t = 1, L = {L}", t_s, t_c,
                    f"constant β = 4, {ref.nsteps} steps", r, 1.05)
        print(f"|   (the schedule's solve: {sol.nsteps} steps, {sol.nfev} RHS; constant: {ref.nsteps} steps, "
              f"{ref.nfev} RHS)", flush=True)


def row_feedforward(repeat):
    from meanfield.domains.sphere import DuccBackend
    from meanfield.models import FeedForward

    DuccBackend.nthreads = 1
    numba.set_num_threads(1)
    d, m = 3, 8
    rng = np.random.default_rng(4)
    block = FeedForward(rng.standard_normal((d, m)) / np.sqrt(m), rng.standard_normal((m, d)), rng.standard_normal(m),
                        "gelu", "sphere")
    layer = mf.SelfAttention(4.0) + block
    g, mu = _s2_density(127)
    t_f, t_a, r = interleaved(problem_step(layer, g, mu.values), problem_step(mf.SelfAttention(4.0), g, mu.values),
                              max(3 * repeat, 15), min_time=0.02)
    report_cost("S² SA β=4 + FeedForward (gelu, m=8) RK4 step, L = 127", t_f, t_a, "SA β=4 alone", r, 1.1)


def row_causal(repeat):
    from meanfield import kernels
    from meanfield.kernels.pairwise import pairwise_sums
    from particles import uniform_sphere, with_positions

    n = 4096
    x = uniform_sphere(n, 3, rng=0)
    xs = with_positions(x)
    w = np.full(n, 1.0 / n)
    causal, full = mf.SelfAttention(4.0, causal=True), mf.SelfAttention(4.0)
    pairs_causal, pairs_full = n * (n + 1) / 2, float(n * n)
    # the compiled sums without the field's bookkeeping (sorting by position, the stops, the projection): the
    # tokens are in position order already, so row i sums the first i + 1 points
    sorted_rows, stops = (x, w, x), np.arange(1, n + 1)
    for threads in (1, 2):
        numba.set_num_threads(threads)
        t_c, t_f, r = interleaved(lambda: kernels.field(causal, xs, w, xs), lambda: kernels.field(full, x, w, x),
                                  max(3 * repeat, 15), min_time=0.02)
        scale = pairs_full / pairs_causal  # time per pair, in units of the full field's n² pairs
        report_cost(f"S² causal field n=4096, per pair, {threads} thr (time × n²/pairs)", t_c * scale, t_f,
                    "full field, n² pairs", [q * scale for q in r], 0.9, what="throughput")
        report(f"  the causal field itself, {threads} thr", t_c, t_f, "full field, n² pairs",
               f"{pairs_causal:.4g} of {pairs_full:.4g} pairs")
        t_c, t_f, r = interleaved(lambda: pairwise_sums(*sorted_rows, 4.0, None, None, None, "double", stops),
                                  lambda: pairwise_sums(x, w, x, 4.0), max(3 * repeat, 15), min_time=0.02)
        report_cost(f"  its compiled sums alone, per pair, {threads} thr", t_c * scale, t_f, "the full field's sums",
                    [q * scale for q in r], 0.9, what="throughput")
    numba.set_num_threads(1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", nargs="*", choices=ROWS, default=list(ROWS))
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    print(f"numpy {np.__version__}, numba {numba.__version__}, python {sys.version.split()[0]}; medians of "
          f"{args.repeat}; ratio = anchor / ours")
    print(f"| {'work':<52} | {'ours':>13} | {'anchor':<34} | {'anchor':>13} | {'ratio':>7} | note")
    for row in args.rows:
        globals()["row_" + row.replace("-", "_")](args.repeat)


if __name__ == "__main__":
    main()
