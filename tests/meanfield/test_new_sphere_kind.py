r"""A model kind on the sphere is one place: a kind defined and registered here, in the test, runs end to end.

The kind is *linear attention* on S^{d-1}: X[μ](x) = g P_x(∫ ⟨Ax, y⟩ V y dμ(y)) = g P_x(V M A x) with A = KᵀQ and
M = ∫ y yᵀ dμ the second-moment matrix. Its field is written below as the sum over the points; the tests compare it
with the closed form P_x(g V M A x).

On the circle with Q = K = V = I, y = e^{iφ} and z₂ = ∫ e^{2iφ} dμ, the field is θ̇ = (g/2) Im(z₂ e^{−2iθ}): in the
doubled angle ψ = 2θ, ψ̇ = g Im(z₂ e^{−iψ}), the Kuramoto model of identical oscillators (MATH.md §2.1 has it at
β = 0 for θ itself). Its Ott–Antonsen manifold gives an exact solution: if ρ₀(θ) = f_{a₀}(2θ), f_a the wrapped
Cauchy (Poisson) density with first moment a, then ρ(t, θ) = f_{a(t)}(2θ) with ȧ = (g/2) a(1 − |a|²) — for g = 1
the ODE of :func:`meanfield.analysis.exact.ott_antonsen`. The uniform law (M = I/2, P_x M x = 0) is stationary.

No library file mentions the kind: the particles (:func:`particles.simulate`), the circle's density solver
(:func:`meanfield.solve`, strategy "quadrature") and a study file reach it through the registry and the model's
own ``field``; its fast paths are none (``exp_kernel``, ``compiled_rows``, ``gaussian_closure`` keep their
defaults), so every strategy but "quadrature" refuses it.
"""

from dataclasses import dataclass, field as dc_field
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import meanfield as mf
import particles
from meanfield.analysis import exact
from meanfield import study
from meanfield.models import registry
from meanfield.models.base import Head, check_weights
from meanfield.models.bounds import HeadConstants, norm2
from meanfield.models.sphere import check_measure, divergence_from_average
from meanfield.domains.sphere.geometry import project_tangent
from meanfield.study import build, read
from tests.helpers import EPS, l1_error


@dataclass(frozen=True, eq=False)
class LinearSphere(Head):
    r"""Linear attention on S^{d-1}: X[μ](x) = g P_x Σ_j w_j ⟨Ax, y_j⟩ V y_j (module docstring)."""

    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None
    gain: float = 1.0
    noise: float = dc_field(default=0.0, kw_only=True)

    kind = "linear-sphere"
    manifold = "sphere"
    zonal = None
    causal = False
    normalized = False
    time_fields = ("Q", "K", "V")

    def __post_init__(self):
        self._check_matrices()
        self._check_noise()
        object.__setattr__(self, "gain", float(self.gain))

    def _average(self, points, weights, queries):
        """u(x) = g Σ_j w_j ⟨Ax, y_j⟩ V y_j, the sum over the points (shape (..., m, d)), and Du = g V M A."""
        d = points.shape[-1]
        Q, K, V = self.matrices(d)
        scores = (queries @ Q.T) @ np.swapaxes(points @ K.T, -1, -2)  # ⟨Qx_i, Ky_j⟩ = ⟨Ax_i, y_j⟩
        u = self.gain * (scores * weights[..., None, :]) @ (points @ V.T)
        M = np.swapaxes(points * weights[..., None], -1, -2) @ points
        return u, self.gain * V @ M @ K.T @ Q

    def field(self, points, weights, queries):
        points, weights, queries = check_measure(points, weights, queries)
        return project_tangent(queries, self._average(points, weights, queries)[0])

    def field_and_divergence(self, points, weights, queries):
        """X and div_S X = tr(P_x Du) − (d − 1)⟨x, u⟩ with Du = g V M A constant in x (MATH.md §6)."""
        points, weights, queries = check_measure(points, weights, queries)
        u, Du = self._average(points, weights, queries)
        Dux = queries @ np.swapaxes(Du, -1, -2)
        strain = np.trace(Du, axis1=-2, axis2=-1)[..., None] - np.sum(queries * Dux, axis=-1)
        return project_tangent(queries, u), divergence_from_average(queries, u, strain)

    @staticmethod
    def sum_of_fields(heads, points, weights, queries, divergence: bool = False):
        parts = [h.field_and_divergence(points, weights, queries) if divergence else h.field(points, weights, queries)
                 for h in heads]
        if divergence:
            return sum(p[0] for p in parts), sum(p[1] for p in parts)
        return sum(parts)

    def constants(self, radius=None) -> HeadConstants:
        """|y| = 1: |u| <= |g| v‖A‖ = L_x (Du = gVMA, ‖M‖ <= 1); L_μ = 2|g| v‖A‖ (y ↦ ⟨Ax, y⟩Vy); no normaliser."""
        v, a = norm2(self.V), norm2(self.A(self.dim or 2)) if self.dim else 1.0
        g = abs(self.gain)
        return HeadConstants(v, 2.0 * g * v * a, 2.0 * g * v * a, None, 0.0, 0.0)

    def speed_bound(self) -> float:
        return 2.0 * abs(self.gain) * norm2(self.V) * (norm2(self.A(self.dim)) if self.dim else 1.0)


LINEAR = registry.ModelKind("linear-sphere", LinearSphere, "sphere",
                            (registry.Parameter("gain", "float", 1.0, "gain g of the linear field"), registry.NOISE),
                            doc="linear attention g P_x ∫ ⟨Ax, y⟩ Vy dμ on the sphere (a test's kind)",
                            words="linear attention")


@pytest.fixture
def linear():
    """The kind registered for one test, removed after it (KINDS is the registry's one table)."""
    registry.register(LINEAR)
    yield LINEAR
    registry.KINDS.pop(LINEAR.name, None)


def closed_form(points, weights, queries, gain=1.0, Q=None, K=None, V=None):
    """P_x(g V M A x), M = Σ_j w_j y_j y_jᵀ (module docstring)."""
    d = points.shape[-1]
    Q, K, V = (np.eye(d) if X is None else X for X in (Q, K, V))
    M = (points * weights[:, None]).T @ points
    u = gain * queries @ (V @ M @ K.T @ Q).T
    return u - np.sum(u * queries, axis=-1, keepdims=True) * queries


def doubled_cauchy(n, a):
    """ρ(θ) = f_a(2θ) on CircleGrid(n): the Ott–Antonsen law of the doubled angle (module docstring)."""
    grid = mf.CircleGrid(n)
    return mf.Density.from_function(grid, lambda x: exact.wrapped_cauchy(2.0 * np.arctan2(x[..., 1], x[..., 0]), a))


def unit(rng, shape):
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# ------------------------------------------------------------------ the field
@pytest.mark.parametrize("d", [2, 3, 5])
def test_field_is_its_closed_form(d):
    """The sum over the points equals P_x(g V M A x) to round-off: each entry is a sum of n products of unit-size
    terms, the two orders of summation differing by ~n ε |g|‖V‖‖A‖; bound 10³ n ε (margin ≥ 10×)."""
    rng = np.random.default_rng(d)
    n, m = 40, 30
    y, x = unit(rng, (n, d)), unit(rng, (m, d))
    w = rng.random(n)
    w /= w.sum()
    Q, K, V = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
    model = LinearSphere(Q, K, V, gain=-0.7)
    X = model.field(y, w, x)
    assert np.max(np.abs(X - closed_form(y, w, x, -0.7, Q, K, V))) <= 1e3 * n * EPS
    assert np.max(np.abs(np.sum(X * x, axis=-1))) <= 1e3 * n * EPS  # tangent
    # the divergence against a centred difference of the field along the tangent directions (h² error ~1e-10)
    _, div = model.field_and_divergence(y, w, x)
    h, ref = 1e-5, np.zeros(m)
    for i in range(m):
        P = np.eye(d) - np.outer(x[i], x[i])
        basis = np.linalg.svd(P)[0][:, : d - 1]
        for e in basis.T:
            plus, minus = x[i] + h * e, x[i] - h * e
            plus, minus = plus / np.linalg.norm(plus), minus / np.linalg.norm(minus)
            Xp, Xm = model.field(y, w, plus[None])[0], model.field(y, w, minus[None])[0]
            ref[i] += e @ (Xp - Xm) / (2 * h)
    assert np.max(np.abs(div - ref)) <= 1e-7, np.max(np.abs(div - ref))


def test_the_uniform_law_is_stationary():
    """The uniform law on the circle has M = I/2 (the trapezoid sums of cos², sin cos are exact): P_x M x = 0 at every
    node, to the round-off of n-term sums of unit terms (~n ε; bound 10 n ε), and its density does not move."""
    grid = mf.CircleGrid(64)
    w = np.full(grid.n, 1.0 / grid.n)
    X = LinearSphere(gain=1.0).field(grid.points, w, grid.points)
    assert np.max(np.abs(X)) <= 10 * grid.n * EPS
    rho0 = mf.Density.from_function(grid, lambda x: np.full(x.shape[:-1], 1.0 / (2 * np.pi)))
    sol = mf.solve(LinearSphere(gain=1.0), rho0, (0, 1), t_eval=[0, 1], strategy="quadrature")
    assert np.max(np.abs(sol.densities[-1].values - rho0.values)) <= 10 * grid.n * EPS


def test_no_fast_path_is_claimed():
    """A new kind states no fast path: the library's defaults refuse what it has not written."""
    m = LinearSphere()
    assert not m.exp_kernel and m.compiled_rows is None and m.layer_map is None
    with pytest.raises(TypeError, match="no Gaussian closure for LinearSphere"):
        m.gaussian_closure(np.zeros(2), np.eye(2))
    assert mf.kernels.pairwise_refusal(m) is not None


# ------------------------------------------------------------------ particles
def test_particles_follow_the_angle_ode():
    """particles.simulate (strategy "quadrature": the model's own field) against an independent integration of the
    angles, θ̇_i = (g/2) Im(z₂ e^{−2iθ_i}), z₂ = (1/N) Σ_j e^{2iθ_j}: both to tolerance 1e-10."""
    rng = np.random.default_rng(3)
    N, g, T = 24, 1.5, 2.0
    theta0 = rng.uniform(0, 2 * np.pi, N)
    x0 = np.stack([np.cos(theta0), np.sin(theta0)], axis=-1)
    model = LinearSphere(gain=g)
    traj = particles.simulate(model, x0, [0.0, T / 2, T], method="rk45", rtol=1e-12, atol=1e-13,
                              strategy="quadrature")

    def rhs(_, th):
        z2 = np.mean(np.exp(2j * th))
        return 0.5 * g * np.imag(z2 * np.exp(-2j * th))

    ref = solve_ivp(rhs, (0, T), theta0, t_eval=[0.0, T / 2, T], rtol=1e-12, atol=1e-13, method="DOP853")
    x_ref = np.stack([np.cos(ref.y.T), np.sin(ref.y.T)], axis=-1)
    assert np.max(np.abs(traj.x - x_ref)) <= 1e-8, np.max(np.abs(traj.x - x_ref))
    assert np.max(np.abs(np.linalg.norm(traj.x, axis=-1) - 1)) <= 1e-12  # on the circle


# ------------------------------------------------------------------ densities on the circle grid
def test_density_follows_the_ott_antonsen_solution():
    """meanfield.solve on CircleGrid (strategy "quadrature") from ρ₀ = f_{a₀}(2θ): ρ(t) = f_{a(t)}(2θ) with a(t) the
    Ott–Antonsen solution (g = 1) to the integrator's tolerance; the mass is conserved to round-off (the circle's
    flux form sums to 0: ~n ε per step)."""
    a0 = 0.3
    sol = mf.solve(LinearSphere(gain=1.0), doubled_cauchy(256, a0), (0, 2), t_eval=[0, 1, 2], strategy="quadrature",
                   method="rk45")
    assert sol.status is mf.Status.SUCCESS, sol.message
    for t, d in zip(sol.t, sol.densities):  # seen: L1 7e-11, |z₂ − a| 3e-13 (rk45 at the solver's tolerances)
        a = exact.ott_antonsen(t, a0)
        th = d.grid.angles
        assert l1_error(d, exact.wrapped_cauchy(2.0 * th, a)) <= 1e-9, (t, l1_error(d, exact.wrapped_cauchy(2 * th, a)))
        z2 = d.grid.integrate(d.values * np.exp(2j * th))
        assert abs(z2 - a) <= 1e-11
    assert np.max(np.abs(np.asarray(sol.mass) - 1.0)) <= 1e-12
    assert abs(exact.ott_antonsen(2.0, a0)) > 2 * a0  # the doubled angle synchronises: two antipodal clusters form


def test_other_strategies_refuse_it():
    """Spectral sums need a zonal kernel e^{β⟨x,y⟩} (``zonal`` None here): solve refuses them, naming why."""
    with pytest.raises(ValueError, match="spectral"):
        mf.solve(LinearSphere(), doubled_cauchy(64, 0.3), (0, 0.1), strategy="spectral")


# ------------------------------------------------------------------ a study file
STUDY = {"domain": "circle", "seed": 7,
         "grid": {"n": 128},
         "model": {"kind": "linear-sphere", "gain": 1.0},
         "initial": {"kind": "uniform-noise"},
         "time": {"t_end": 1.0, "frames": 3},
         "particles": {"n": [50, 200, 800], "repeats": 2},
         "distances": {"p": [1]}}


def test_a_sphere_kind_registered_in_a_test_is_a_study_kind(linear):
    cfg = read(STUDY)
    assert cfg["model"]["kind"] == "linear-sphere" and cfg["model"]["gain"] == 1.0
    head = build.build_model(cfg)
    assert isinstance(head, LinearSphere) and head.gain == 1.0
    assert registry.words("linear-sphere", cfg["model"]) == "linear attention"


def test_the_registry_is_left_as_it_was():
    assert "linear-sphere" not in registry.KINDS


def test_no_library_file_mentions_the_kind():
    root = Path(__file__).parents[2]
    for package in ("meanfield", "particles", "validation"):
        for f in (root / package).rglob("*.py"):
            text = f.read_text()
            assert "LinearSphere" not in text and "linear-sphere" not in text, f


def test_linear_sphere_study_runs(linear):
    """The study's density keeps its mass; the particles approach it: W1(density, particles) decreases in N."""
    ds = study.run(STUDY, output=False, progress=False)
    assert ds.attrs["status"] == "success" and ds.attrs["model"].startswith("LinearSphere")
    rho = ds["density"].values
    n = rho.shape[-1]
    mass = rho.sum(axis=-1) * (2 * np.pi / n)
    assert np.allclose(mass, mass[0], rtol=0, atol=1e-12)
    w = ds["wasserstein"].isel(p=0).values  # (N, repeat, time)
    assert np.all(np.diff(w.mean(axis=1)[:, 1:], axis=0) < 0)
