"""Noisy particles against the mean field (docs/MATH.md §7): three tables.

1. Weak order of the splitting scheme: two SA particles on the circle (β = 1, D = 0.2), E cos(θ₁ − θ₂) at T = 2
   for steps h = 0.2 … 0.025, computed exactly through the Markov chain of their relative angle (no Monte Carlo),
   against h/64; the order fitted.
2. The invariant law's order parameter: SA β = 2 on the circle at D = 0.8 D_c, N = 10³ … 10⁵ particles drawn from
   the stationary density (:func:`meanfield.analysis.stationary.stationary_state`) and run to T; the RMS deviation of
   r_N(t) = |mean of the positions| from the stationary r over the frames and repeats, and its rate in N with the
   95% interval (:func:`validation.meanfield_limit.fit_exponent`).
3. The mean-field limit with noise: W1 between N noisy particles and the noisy density (SA β = 1, D = 0.2) at
   t = 1, with the rate and interval (:func:`validation.meanfield_limit.meanfield_limit`).

Run:  python scripts/noisy_particles.py [--quick]
"""

import argparse
import time

import numpy as np

import meanfield as mf
import particles as pt
from meanfield.analysis import stationary as st
from meanfield.domains import CIRCLE
from validation.meanfield_limit import fit_exponent, meanfield_limit


def _step_moments(tau: float, K: int) -> np.ndarray:
    """c_k = E cos(kα) of the circle's Brownian step over time τ (``Domain.brownian_step``: α = √(2τ) Z, exact),
    k = 0..K: the heat kernel's e^{−k²τ}."""
    return np.exp(-np.arange(K + 1) ** 2 * tau)


def weak_order(beta=1.0, D=0.2, T=2.0, M=64):
    r"""Two SA particles on the circle: their relative angle ψ = θ₁ − θ₂ is a Markov chain under the scheme (the
    drift step, RK4 of the pair, depends on ψ only; the noise adds α₁ − α₂, two independent Brownian steps). So
    E cos ψ_T is computed *exactly* (no Monte Carlo): backwards, f ← f∘Φ_{h/2} (trigonometric interpolation on M
    nodes) and f̂_k ← c_k² f̂_k (the noise), in the scheme's order, from f = cos ψ; averaged over ψ_0 uniform.
    The reference: the same at h/64."""
    from meanfield.domains.circle import fourier
    from meanfield.integrate import rk4

    model = mf.SelfAttention(beta, noise=D)
    psi = 2 * np.pi * np.arange(M) / M
    pair = np.stack([np.stack([np.cos(psi / 2), np.sin(psi / 2)], -1),
                     np.stack([np.cos(-psi / 2), np.sin(-psi / 2)], -1)], axis=1)  # (M, 2, 2)
    w = np.full((M, 2), 0.5)

    def drift(h):
        """ψ after one retracted RK4 step of size h of the pair (the scheme's drift step)."""
        y = rk4(lambda z: model.field(z / np.linalg.norm(z, axis=-1, keepdims=True), w,
                                      z / np.linalg.norm(z, axis=-1, keepdims=True)), pair, h)
        a = np.arctan2(y[..., 1], y[..., 0])
        return a[:, 0] - a[:, 1]

    def expectation(h):
        n = round(T / h)
        half, full = drift(0.5 * h), drift(h)
        c2 = _step_moments(D * h, M // 2) ** 2
        f = np.cos(psi)
        for i in range(n):  # backwards: the last drift first
            f = fourier.evaluate(f, half if i == 0 else full)
            f = fourier.irfft(fourier.rfft(f) * c2, M)
        f = fourier.evaluate(f, half)
        return float(f.mean())

    hs = [0.2, 0.1, 0.05, 0.025]
    ref = expectation(hs[-1] / 64)
    e = np.array([expectation(h) - ref for h in hs])
    print(f"\nweak error of the scheme, two SA particles on the circle (β = {beta:g}, D = {D:g}), E cos(θ₁ − θ₂) at "
          f"T = {T:g} = {ref:.12f} (h = {hs[-1] / 64:g}), computed exactly from the chain of ψ")
    print("| h | error | ratio |\n|---|---|---|")
    for k, h in enumerate(hs):
        print(f"| {h:g} | {e[k]:+.3e} | {'' if k == 0 else f'{e[k - 1] / e[k]:.2f}'} |")
    print(f"fitted weak order: {np.polyfit(np.log(hs), np.log(np.abs(e)), 1)[0]:.2f}")
    return np.array(hs), e


def invariant_order(ns, repeats: int, T: float, rng=0):
    model0 = mf.SelfAttention(2.0)
    D = 0.8 * st.critical_noise(model0, CIRCLE)
    model = mf.SelfAttention(2.0, noise=D)
    state = st.stationary_state(model, CIRCLE)
    rho = state.density(mf.CircleGrid(256))
    t_eval = np.linspace(0, T, 21)
    dev = np.empty((len(ns), repeats))
    print(f"\nSA β = 2, D = 0.8 D_c = {D:.5f}: stationary r = {state.r:.8f}")
    print("| N | RMS of r_N(t) − r over t ∈ [0, T], repeats | seconds |\n|---|---|---|")
    for i, n in enumerate(ns):
        t0 = time.perf_counter()
        x0 = pt.sample(rho, n, rng=[rng, 1, n], batch=repeats)
        x = pt.simulate(model, x0, t_eval, dt=0.05, rng=[rng, 2, n]).x
        r = np.linalg.norm(x.mean(axis=-2), axis=-1)  # (T, repeats)
        dev[i] = np.sqrt(np.mean((r - state.r) ** 2, axis=0))
        print(f"| {n} | {dev[i].mean():.3e} | {time.perf_counter() - t0:.1f} |")
    a, (lo, hi) = fit_exponent(np.array(ns), dev)
    print(f"rate: RMS deviation ~ N^{a:.3f}, 95% interval [{lo:.3f}, {hi:.3f}] (the central limit's −1/2)")


def noisy_limit(ns, repeats: int):
    model = mf.SelfAttention(1.0, noise=0.2)
    g = mf.CircleGrid(128)
    mu0 = mf.Density.from_function(g, lambda x: np.exp(np.cos(np.arctan2(x[..., 1], x[..., 0]))))
    r = meanfield_limit(model, mu0, ns, [0.0, 1.0], repeats=repeats, rng=0)
    print("\nmean-field limit with noise, SA β = 1, D = 0.2 on the circle: W1(μ^N_t, μ_t)")
    print("| N | W1 at t = 0 | W1 at t = 1 |\n|---|---|---|")
    for n, d in zip(ns, r.distances):
        print(f"| {n} | {d[:, 0].mean():.3e} | {d[:, 1].mean():.3e} |")
    for k, t in enumerate(r.t):
        print(f"t = {t:g}: W1 ~ N^{r.exponent[k]:.3f}, 95% interval [{r.exponent_ci[k][0]:.3f}, {r.exponent_ci[k][1]:.3f}]")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller runs")
    args = ap.parse_args(argv)
    weak_order()
    invariant_order([1000, 3162, 10000] if args.quick else [1000, 3162, 10000, 31623, 100000], 4 if args.quick else 8,
                    10.0)
    noisy_limit([100, 316, 1000, 3162], 4 if args.quick else 8)


if __name__ == "__main__":
    main()
