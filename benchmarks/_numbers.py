r"""Representative computations through the public API, saved bit for bit (one process per tree).

Solves on every domain and strategy (with and without refinement, a lost resolution), particles on
every strategy, the kernel sums, sampling, distances, stability, the mean-field limit and two
studies, with every argument given whose default may differ between revisions.
"""
# This file runs in both trees of a comparison (bench_revisions): it imports the modules by their earlier paths
# (meanfield.exact, meanfield.strategies, ...), which this tree keeps as aliases (meanfield.MOVED).
import sys
import warnings

sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
import numpy as np

import meanfield as mf
import particles as pt
from meanfield import exact, gaussian as G
from meanfield.models import L2, MultiHeadAttention, Sigmoid, Sinkhorn, Softmax
import validation
from validation.meanfield_limit import meanfield_limit
from validation.stability import stability

try:
    from meanfield import kernels  # new layout
except ImportError:
    from particles import kernels  # old layout
import inspect

#: since the representations (issue 30): ``strategy=`` names the field strategy (was ``path=``) and a lost resolution
#: is a status of the returned Solution unless raising is asked for
NEW = "strategy" in inspect.signature(mf.solve).parameters


def kw(strategy=None, raising=False):
    out = {} if strategy is None else ({"strategy": strategy} if NEW else {"path": strategy})
    return out | ({"raise_on_failure": True} if raising and NEW else {})


out = {}


def put(name, sol):
    out[f"{name}.t"] = np.asarray(sol.t)
    for i, d in enumerate(sol.densities):
        out[f"{name}.rho{i}"] = d.values
    out[f"{name}.mass"] = sol.mass
    if sol.energy is not None:
        out[f"{name}.energy"] = sol.energy
        out[f"{name}.energy_steps"] = sol.energy_steps
    out[f"{name}.t_steps"] = sol.t_steps
    out[f"{name}.mass_steps"] = sol.mass_steps
    out[f"{name}.nsteps"] = np.array(sol.nsteps)
    out[f"{name}.refinements"] = np.array(sol.refinements, dtype=float).reshape(-1, 3)


def angles(x):
    return np.mod(np.arctan2(x[..., 1], x[..., 0]), 2 * np.pi)


def smooth(n):
    return mf.Density.from_function(mf.CircleGrid(n), lambda x: np.exp(np.cos(angles(x)) + 0.5 * np.sin(2 * angles(x))))


def cauchy(n, a):
    return mf.Density.from_function(mf.CircleGrid(n), lambda x: exact.wrapped_cauchy(angles(x), a))


def noisy(n, seed=0, eps=1e-2):
    """The benchmarks' perturbed uniform density, with a 1 % perturbation."""
    from bench_circle import perturbed_uniform  # this script's directory: the same helper for both trees

    return perturbed_uniform(n, seed, eps)


# --- circle
put("c_rk4", mf.solve(mf.SelfAttention(4.0), noisy(128), (0, 2), t_eval=[0, 0.5, 1, 2], refine=False))
put("c_refine", mf.solve(mf.SelfAttention(0.0), cauchy(64, 0.3), (0, 5), refine=True))
put("c_rk45", mf.solve(mf.SelfAttention(1.0), smooth(96), (0, 1), t_eval=[0, 0.3, 1], method="rk45", refine=False,
                       rtol=1e-10, atol=1e-12))
put("c_dop", mf.solve(mf.SelfAttention(2.0, normalized=False), smooth(64), (0, 0.2), method="dop853", refine=True,
                      rtol=1e-10, atol=1e-12))
put("c_ssp", mf.solve(mf.SelfAttention(3.0, V=-np.eye(2)), smooth(64), (0, 0.5), method="ssprk3", dt=0.01, refine=True))
heads = [mf.SelfAttention(1.0), mf.SelfAttention(2.0, V=np.array([[0.5, 0.2], [-0.1, 1.0]]))]
put("c_multi", mf.solve(MultiHeadAttention(heads), smooth(64), (0, 1), dt=0.02, refine=True))
put("c_quad", mf.solve(mf.SelfAttention(3.0), smooth(96), (0, 1), dt=0.01, refine=False, **kw("quadrature")))
try:
    mf.solve(mf.SelfAttention(4.0), mf.Density.from_function(mf.CircleGrid(64), lambda x: np.exp(4 * x[..., 0])),
             (0, 30), t_eval=np.linspace(0, 30, 31), refine=False, representation="grid", **kw(raising=True))
except mf.ResolutionError as e:
    out["c_fail.t"] = np.array(e.t)
    put("c_fail", e.solution)

# --- sphere
def sph(L):
    return mf.Density.from_function(mf.SphereGrid(L), lambda x: np.exp(x[..., 0] + 0.5 * x[..., 2] ** 2 - 0.3 * x[..., 1] * x[..., 2]))


put("s_rk4", mf.solve(mf.SelfAttention(4.0), sph(24), (0, 0.3), t_eval=[0, 0.1, 0.3], refine=False))
w0 = np.array([0.0, 0.1, 0.3])
put("s_mob", mf.solve(mf.SelfAttention(0.0), mf.Density.from_function(mf.SphereGrid(24), lambda x: exact.mobius_density(x, w0)),
                      (0, 1), t_eval=[0, 0.5, 1], method="rk45", refine=True, rtol=1e-10, atol=1e-12))
rng = np.random.default_rng(2)
sh = [mf.SelfAttention(1.0, *(rng.normal(size=(3, 3)) for _ in range(3))), mf.SelfAttention(0.5, normalized=False)]
put("s_multi", mf.solve(MultiHeadAttention(sh), sph(24), (0, 0.04), dt=0.01, refine=True))
put("s_pysh", mf.solve(mf.SelfAttention(2.0), mf.Density.from_function(mf.SphereGrid(24, backend="pyshtools"),
                                                                        lambda x: np.exp(x[..., 0] + x[..., 2] ** 2)),
                       (0, 0.2), dt=0.02, refine=False))

# --- R^d
m0, S0 = np.array([0.2, -0.1]), np.array([[0.3, 0.05], [0.05, 0.2]])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for name, model, d, n in (("e_soft2", Softmax(Q=np.array([[0.5, 0.2], [0.0, 0.3]])), 2, 48),
                              ("e_l22", L2(Q=np.diag([1.0, 0.7]), K=np.diag([1.0, 0.7])), 2, 40),
                              ("e_soft1", Softmax(Q=[[0.6]], V=[[0.8]]), 1, 64),
                              ("e_sig", Sigmoid(Q=[[0.6]]), 1, 64)):
        g = mf.EuclideanGrid([(-4, 4)] * d, n)
        mm, SS = (m0, S0) if d == 2 else (np.array([0.2]), np.array([[0.3]]))
        rho0 = mf.Density.from_function(g, lambda x: G.gaussian_pdf(x, mm, SS))
        put(name, mf.solve(model, rho0, (0, 0.3), t_eval=[0, 0.1, 0.3]))
        put(name + "_q", mf.solve(model, rho0, (0, 0.1), **kw("quadrature")))

# --- particles
x0 = pt.uniform_sphere(200, 3, rng=1, batch=2)
out["p_pair"] = pt.simulate(mf.SelfAttention(2.0), x0, [0, 0.5, 1.0], dt=0.02).x
out["p_fused"] = pt.simulate(mf.SelfAttention(3.0), pt.uniform_sphere(16, 3, rng=2, batch=8), [0, 1, 2]).x
th = np.random.default_rng(3).uniform(0, 2 * np.pi, 2000)
out["p_spec"] = pt.simulate(mf.SelfAttention(4.0), np.stack([np.cos(th), np.sin(th)], -1), [0, 0.5], dt=0.02).x
out["p_dop"] = pt.simulate(mf.SelfAttention(2.0, Q=np.diag([1.0, 2.0, 0.5])), pt.orthogonal(3, 3, rng=4), np.linspace(0, 2, 5),
                           method="dop853", rtol=1e-10, atol=1e-12).x
out["p_rk45"] = pt.simulate(mf.SelfAttention(1.0), pt.uniform_sphere(20, 4, rng=5), np.linspace(0, 1, 4), method="rk45").x
out["p_multi"] = pt.simulate(MultiHeadAttention(heads), np.stack([np.cos(th[:50]), np.sin(th[:50])], -1), [0, 0.5], dt=0.05).x
xg, wg = G.gauss_hermite(m0, S0, 6)
out["p_soft"] = pt.simulate(Softmax(Q=np.eye(2) * 0.5), xg, [0, 0.5], method="dop853", weights=wg, rtol=1e-10, atol=1e-12).x
out["p_sink"] = pt.simulate(Sinkhorn(tau=1.3), np.random.default_rng(6).normal(size=(30, 2)), [0, 0.3], dt=0.01).x
out["p_usa"] = pt.simulate(mf.SelfAttention(1.0, normalized=False), pt.uniform_sphere(30, 3, rng=7), [0, 0.3], dt=0.01).x
y = pt.uniform_sphere(40, 10, rng=8, batch=2)
out["k_rows"] = kernels.field(mf.SelfAttention(2.0), y, np.full((2, 40), 1 / 40), y)
out["k_energy"] = kernels.energy(pt.uniform_sphere(80, 3, rng=9, batch=3), np.full((3, 80), 1 / 80), 2.0)
out["k_energy_small"] = kernels.energy(pt.uniform_sphere(30, 3, rng=9, batch=3), np.full((3, 30), 1 / 30), 2.0)
cx = np.stack([np.cos(th), np.sin(th)], -1)
out["k_circ"], out["k_circ_b"] = kernels.circle_spectral_field(cx, np.full(2000, 1 / 2000), cx, 5.0)

# --- sampling
out["sample_c"] = pt.sample(cauchy(256, 0.5 + 0.2j), 5000, rng=5)
out["sample_s"] = pt.sample(sph(24), 2000, rng=6)
ge = mf.EuclideanGrid([(-4, 4), (-3, 3)], (32, 24))
out["sample_e"] = pt.sample(G.gaussian_density(ge, [0.5, -0.2], [[0.4, 0.1], [0.1, 0.3]]), 3000, rng=3)
out["cdf"] = pt.sampling.circle_cdf(cauchy(128, 0.4 - 0.3j), np.linspace(0, 2 * np.pi, 77))
out["interp_c"] = cauchy(128, 0.4).grid.interpolate_angles(cauchy(128, 0.4).values, np.linspace(0, 6, 50))
out["interp_s"] = sph(24)(pt.uniform_sphere(30, 3, rng=1))

# --- validation
d = cauchy(256, 0.5 + 0.2j)
xs = out["sample_c"]
out["w_c"] = np.array([validation.w1(d, xs), validation.w2(d, xs), validation.wasserstein(xs[:300], xs[300:700], 3)])
ys = pt.uniform_sphere(300, 3, rng=2)
out["w_s"] = np.array([validation.w1(ys, sph(24).as_measure()), validation.w2(ys[:100], ys[100:])])
ze = np.random.default_rng(0).normal(size=(200, 2))
out["w_e"] = np.array([validation.w2(ze[:100], ze[100:]), validation.w1(ze[:50, :1], ze[50:, :1])])
out["w_sl"] = np.array(validation.sliced_wasserstein_sphere(ys[:100], ys[100:], projections=20, rng=0))
r = stability(mf.SelfAttention(1.0), smooth(64), mf.Density.from_function(
    mf.CircleGrid(64), lambda x: np.exp(np.cos(angles(x) - 0.05) + 0.5 * np.sin(2 * angles(x)))), np.linspace(0, 1, 5))
out["stab"] = np.concatenate([r.distance, r.ratio, r.bound, r.bound_a_posteriori])
ml = meanfield_limit(mf.SelfAttention(1.0), smooth(64), [50, 200], [0.0, 0.5], repeats=2, rng=0, refine=True)
out["mfl"] = np.concatenate([ml.distances.ravel(), ml.exponent])
ml1 = meanfield_limit(L2(Q=[[1.0]], K=[[1.0]], V=[[0.5]]), G.gaussian_density(mf.EuclideanGrid([(-4, 4)], 64), [0.2], [[0.3]]),
                      [20, 40], [0.0, 0.1], repeats=2, rng=1)
out["mfl1"] = np.concatenate([ml1.distances.ravel(), [ml1.discretisation]])
mls = meanfield_limit(mf.SelfAttention(1.0), sph(24), [20, 40], [0.0, 0.1], repeats=1, rng=1, refine=True)
out["mfls"] = np.concatenate([mls.distances.ravel(), [mls.discretisation]])

# --- study
from meanfield import study

ds = study.run({"domain": "circle", "grid": {"n": 32}, "seed": 3, "initial": {"kind": "uniform-noise", "amplitude": 0.1},
                "time": {"t_end": 0.5, "frames": 3, "rtol": 1e-10, "atol": 1e-12}, "particles": {"n": [20, 40], "repeats": 2},
                "distances": {"p": [1]}}, output=False, progress=False)
for v in ds.data_vars:
    if ds[v].dtype.kind == "f":
        out["study." + v] = ds[v].values
dss = study.run({"domain": "sphere", "grid": {"lmax": 24}, "seed": 3, "initial": {"kind": "uniform-noise", "amplitude": 0.5},
                 "model": {"beta": 2.0}, "time": {"t_end": 0.3, "frames": 3, "rtol": 1e-10, "atol": 1e-12},
                 "particles": {"n": [30], "repeats": 2}, "distances": {"p": [1]}}, output=False, progress=False)
for v in dss.data_vars:
    if dss[v].dtype.kind == "f":
        out["study_s." + v] = dss[v].values

np.savez(sys.argv[1], **out)
