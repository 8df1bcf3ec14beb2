"""A model kind is one place: a kind defined and registered here, in the test, is a study kind end to end.

The kind is *linear attention* in R^d, Γ(x) = g ∫ V y ⟨Ax, y⟩ dμ(y) = g V S_μ A x with A = KᵀQ and
S_μ = ∫ y yᵀ dμ the second-moment matrix: a field linear in x, so a Gaussian stays Gaussian and its
mean and covariance solve the closed ODE

    m' = B m,  Σ' = BΣ + ΣBᵀ,  B = g V (Σ + m mᵀ) A,

which the study's density and particles are checked against. No library file mentions it: the schema's
[model] section, the builder and the runner reach it through :mod:`meanfield.models.registry` alone.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from meanfield import study
from meanfield.models import registry
from meanfield.models.bounds import HeadConstants
from meanfield.models.euclidean import EuclideanAttention, check_points
from meanfield.study import StudyError, build, read
from meanfield.study.config import SCHEMA, reference_markdown


@dataclass(frozen=True, eq=False)
class LinearAttention(EuclideanAttention):
    r"""Linear attention in R^d: Γ(x) = g V S_μ A x, S_μ = Σ_j w_j y_j y_jᵀ; div Γ = g tr(V S_μ A)."""

    gain: float = 1.0

    kind = "linear"

    def _matrix(self, points, weights):
        """B = g V S_μ A, shape (..., d, d)."""
        d = points.shape[-1]
        S = np.swapaxes(points * weights[..., None], -1, -2) @ points
        return self.gain * (self.matrices(d)[2] @ S @ self.A(d))

    def field(self, points, weights, queries):
        points, weights, queries = check_points(points, weights, queries, self.dim)
        return queries @ np.swapaxes(self._matrix(points, weights), -1, -2)

    def field_and_divergence(self, points, weights, queries):
        points, weights, queries = check_points(points, weights, queries, self.dim)
        B = self._matrix(points, weights)
        out = queries @ np.swapaxes(B, -1, -2)
        div = np.trace(B, axis1=-2, axis2=-1)[..., None] * np.ones(out.shape[:-1])
        return out, div

    def constants(self, radius=None) -> HeadConstants:
        """|y| <= R: L_x = |g| v‖A‖R² (DΓ = gVSA, ‖S‖ <= R²); L_μ = 2|g| v‖A‖R² (y ↦ Vy⟨Ax, y⟩ is
        v(|⟨Ax,y⟩| + |y||Ax|)-Lipschitz); no normaliser; DΓ constant in x."""
        R, _, _, v, nA = self._support(radius)
        g = abs(self.gain)
        return HeadConstants(v, g * v * nA * R * R, 2.0 * g * v * nA * R * R, None, 0.0, 0.0)


LINEAR = registry.ModelKind("linear", LinearAttention, "euclidean",
                            (registry.Parameter("gain", "float", 1.0, "gain g of the linear field"),),
                            doc="linear attention g V ∫ y ⟨Ax, y⟩ dμ (a test's kind)")


@pytest.fixture
def linear():
    """The kind registered for one test, removed after it (KINDS is the registry's one table)."""
    registry.register(LINEAR)
    yield LINEAR
    registry.KINDS.pop(LINEAR.name, None)


def gaussian_moments(t_eval, m0, cov0, gain, V, A):
    """(m(t), Σ(t)) of the closed Gaussian ODE (module docstring), to 1e-12."""
    d = len(m0)

    def rhs(_, y):
        m, C = y[:d], y[d:].reshape(d, d)
        B = gain * V @ (C + np.outer(m, m)) @ A
        return np.concatenate([B @ m, (B @ C + C @ B.T).ravel()])

    sol = solve_ivp(rhs, (0, t_eval[-1]), np.concatenate([m0, np.ravel(cov0)]), t_eval=t_eval, rtol=1e-12, atol=1e-14)
    return sol.y[:d].T, sol.y[d:].T.reshape(-1, d, d)


STUDY = {"domain": "euclidean", "seed": 5,
         "grid": {"bounds": [[-3.0, 3.0]], "shape": 600},
         "model": {"kind": "linear", "gain": -1.0},
         "initial": {"kind": "gaussian", "mean": [0.5], "cov": 0.1},
         "time": {"t_end": 2.0, "frames": 5, "method": "ssprk3"},
         "particles": {"n": [200, 800, 3200], "repeats": 4, "dt": 0.01},
         "distances": {"p": [1]}}


def test_a_kind_registered_in_a_test_is_a_study_kind(linear):
    model = SCHEMA["model"]
    assert "linear" in model["kind"].choices and model["gain"].default is None
    row = "| `gain` | number | — | linear: gain g of the linear field (default 1.0) |"
    assert row in reference_markdown()
    from tests.helpers import docs_generators

    assert row in docs_generators().study_reference_page()  # the site's page, generated when the site is built
    cfg = read(STUDY)
    assert cfg["model"]["kind"] == "linear" and cfg["model"]["gain"] == -1.0 and cfg["model"]["beta"] is None
    assert read({**STUDY, "model": {"kind": "linear"}})["model"]["gain"] == 1.0  # the kind's own default
    head = build.build_model(cfg)
    assert isinstance(head, LinearAttention) and head.gain == -1.0
    with pytest.raises(StudyError, match=r"\[model\] gain: does not apply to kind 'softmax' \(it takes beta, noise\)"):
        read({**STUDY, "model": {"kind": "softmax", "gain": 2.0}})
    with pytest.raises(StudyError, match=r"\[model\] kind: 'linear' moves points of the euclidean manifold but "
                                         r"domain 'circle' is on the sphere manifold"):
        read({"domain": "circle", "grid": {"n": 16}, "model": {"kind": "linear"}})
    with pytest.raises(StudyError, match=r"\[model\] gain: must be a number"):
        read({**STUDY, "model": {"kind": "linear", "gain": "loud"}})


def test_the_registry_is_left_as_it_was():
    """After the fixture the kind is gone: the schema and the reference (the site's page is generated from it)
    agree again without it."""
    assert "linear" not in registry.KINDS and "gain" not in SCHEMA["model"]
    assert "linear" not in reference_markdown()
    with pytest.raises(StudyError, match=r"\[model\] gain: unknown key"):
        read(STUDY)
    with pytest.raises(StudyError, match=r"\[model\] kind: must be one of"):
        read({**STUDY, "model": {"kind": "linear"}})


def test_no_library_file_mentions_the_kind():
    root = Path(__file__).parents[2]
    for package in ("meanfield", "particles", "validation"):
        for f in (root / package).rglob("*.py"):
            text = f.read_text()
            assert "LinearAttention" not in text and 'ModelKind("linear"' not in text, f


def test_linear_attention_study_runs_and_follows_the_gaussian_ode(linear):
    """The density's mean and variance follow the closed ODE; mass is conserved (the flow contracts, nothing
    leaves the box); the particles' means follow it to their sampling error and W1(density, particles) decays
    like N^{-1/2} (intrinsic dimension 1)."""
    ds = study.run(STUDY, output=False, progress=False)
    assert ds.attrs["status"] == "success" and ds.attrs["model"].startswith("LinearAttention")
    t, x = ds["time"].values, ds["x"].values
    m_ode, cov_ode = gaussian_moments(t, np.array([0.5]), np.array([[0.1]]), -1.0, np.eye(1), np.eye(1))
    rho = ds["density"].values  # (time, x), cells of width h
    h = x[1] - x[0]
    mass = rho.sum(axis=1) * h
    assert np.allclose(mass, 1.0, atol=1e-12)
    mean = (rho * x).sum(axis=1) * h
    var = (rho * x**2).sum(axis=1) * h - mean**2
    # the cells' second moment exceeds the law's by h²/12 (a cell's own spread); the mean sees no such term
    assert np.allclose(mean, m_ode[:, 0], rtol=0, atol=5e-5), (mean, m_ode[:, 0])
    assert np.allclose(var, cov_ode[:, 0, 0] + h * h / 12, rtol=0, atol=1e-4), (var, cov_ode[:, 0, 0])
    exact = np.exp(-(x - m_ode[:, :1]) ** 2 / (2 * cov_ode[:, :, 0])) / np.sqrt(2 * np.pi * cov_ode[:, :, 0])
    l1 = np.abs(rho - exact).sum(axis=1) * h  # the Gaussian stays Gaussian
    assert np.all(l1 < 2e-3), l1
    assert m_ode[-1, 0] < 0.7 * m_ode[0, 0] and cov_ode[-1, 0, 0] < 0.7 * cov_ode[0, 0, 0], (m_ode, cov_ode)

    for n in STUDY["particles"]["n"]:
        xs = ds[f"positions_{n}"].values  # (repeat, time, N, 1)
        err = xs[..., 0].mean(axis=(0, 2)) - m_ode[:, 0]
        assert np.all(np.abs(err) < 5.0 * np.sqrt(cov_ode[:, 0, 0] / (n * xs.shape[0]))), (n, err)
    w = ds["wasserstein"].isel(p=0).values  # (N, repeat, time)
    assert np.all(np.diff(w.mean(axis=1), axis=0) < 0)  # decays in N at every time
    rate = ds["rate"].isel(p=0).values
    assert ds["rate"].attrs["law"] == "W_p ~ N^α"  # intrinsic dimension 1: no √(log N)
    assert np.all((rate > -0.6) & (rate < -0.4)), rate
