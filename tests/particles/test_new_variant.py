r"""A normalisation variant is one class: a variant defined and registered here, in the test, runs as particles, as
discrete layers and from a study file, with no library file changed (issue 47, item 1).

The variant is a *sandwich* LN with a learned gain g > 0: attention between two normalisations, scaled,

    ẋ = g N(A(N(x))),        layer of depth h: x ↦ x + h g N(A(N(x))),

A the heads' average at the directions θ = N(x) = x/|x| (meanfield.models.normalization). It is peri-LN's velocity
times the constant g, so its flow is peri-LN's with the time changed, x_sandwich(t) = x_peri(g t), and its layer of
depth h is peri-LN's layer of depth g h — checked against ``particles.simulate`` and ``particles.discrete_depth`` of
peri-LN, and its study run against the direct call. No library file mentions it: the study schema, the builder,
the particles and the density solvers' refusals reach it through the variants' table alone.
"""

from pathlib import Path

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield.solvers import cylinder
from meanfield.models import NORMALIZATIONS, Normalization, SelfAttention, Transformer
from meanfield.models import normalization as variants
from meanfield.study import StudyError, build, read, run
from meanfield.study.config import SCHEMA, reference_markdown
from tests.helpers import EPS

GAIN = variants.VariantParameter("gain", "float", None, "the sandwich's learned gain g > 0", positive=True,
                                 needs="its gain g > 0")


class Sandwich(Normalization):
    """Sandwich LN: ẋ = g N(A(N(x))) (module docstring): tokens x = rθ with a radius, like peri-LN."""

    name, words, doc = "sandwich", "sandwich-LN", "ẋ = g N(A(N(x))), g > 0 [model] gain (a test's variant)"
    parameters = (GAIN,)
    radial = True

    def velocity(self, x, A):
        return self.gain * (A / self.length(A))

    def layer(self, x, A, h):
        return x + (h * self.gain) * (A / self.length(A))

    def step_scale(self, inverse_radius, smallest_length):
        return self.gain * inverse_radius / smallest_length()  # θ̇ = g P_θA/(r|A|)

    def scale_average(self, components, length):
        L = length()
        return tuple(self.gain * c / L for c in components)

    def speed_bound(self, average_bound):
        return self.gain


@pytest.fixture
def sandwich():
    """The variant registered for one test, removed after it (VARIANTS is the variants' one table)."""
    variants.register(Sandwich)
    yield Sandwich
    variants.unregister(Sandwich.name)


G, BETA = 1.7, 1.5


def _models(gain=G):
    att = SelfAttention(BETA, V=np.diag([1.0, 0.6, 1.3]))
    return Transformer(att, normalization=Normalization("sandwich", gain=gain)), Transformer(att, normalization="peri")


def _tokens(rng, n=12, d=3):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True) * rng.uniform(0.5, 2.0, (n, 1))


def test_the_variant_is_a_normalization_like_the_built_in_ones(sandwich):
    norm = Normalization("sandwich", gain=G)
    assert isinstance(norm, Sandwich) and norm == Normalization("sandwich", gain=G) != Normalization("sandwich",
                                                                                                        gain=1.0)
    assert repr(norm) == "Normalization('sandwich', gain=1.7)" and "sandwich" in NORMALIZATIONS
    assert variants.as_normalization("peri") == Normalization("peri") and norm.radial and not norm.heads_field
    model, _ = _models()
    assert model.describe().startswith("Transformer (sandwich-LN; SA")  # the variant's words in the titles
    with pytest.raises(ValueError, match=r"needs its gain g > 0: `gain` is missing"):
        Normalization("sandwich")
    with pytest.raises(ValueError, match=r"`gain`.*must be finite and > 0, got -1"):
        Normalization("sandwich", gain=-1.0)
    with pytest.raises(ValueError, match=r"`gain` belongs to sandwich-LN \(normalization 'sandwich'\); "
                                         r"normalization 'pre' takes none"):
        Normalization("pre", gain=2.0)
    grid = mf.CircleGrid(16)
    on_circle = Transformer(SelfAttention(1.0), normalization=norm)
    with pytest.raises(ValueError, match="carries the radius"):  # the density solvers refuse it, saying why
        mf.solve(on_circle, mf.Density(grid, np.full(16, 1 / (2 * np.pi))), (0, 0.1))


def test_the_registry_is_left_as_it_was():
    assert "sandwich" not in NORMALIZATIONS and "gain" not in SCHEMA["model"] and "sandwich" not in reference_markdown()
    with pytest.raises(ValueError, match=r"one of \('post', 'pre', 'peri', 'mix', 'ngpt'\), got 'sandwich'"):
        Normalization("sandwich", gain=G)


def test_no_library_file_mentions_the_variant():
    root = Path(__file__).parents[2]
    for package in ("meanfield", "particles", "validation"):
        for f in (root / package).rglob("*.py"):
            assert "sandwich" not in f.read_text().lower(), f


# ------------------------------------------------------------------ particles: the time change
def test_particles_at_t_are_peri_lns_at_g_t(sandwich, rng):
    """RK4 with steps dt (sandwich) and g·dt (peri-LN) takes the same stages (k_sandwich = g k_peri at the same
    points), so the runs agree to round-off: a few ulps per step (g·dt/2 against (g·dt)/2), 400 steps, amplified by
    the flow's Lipschitz growth (measured <= 2 EPS relative over three seeds; bound 200 EPS). Adaptive DOP853 at
    rtol 1e-12 each: two integrations of the same flow, each to ~1e-11 here (bound 1e-9; measured 7e-14, the step
    control being time-changed too). The default step of each divides 0.05 by its step scale (g/(min r · min|A|)
    and 1/(min r · min|A|)), so both take the same number of steps."""
    model, peri = _models()
    x0 = _tokens(rng)
    T, dt = 2.0, 0.005
    a = pt.simulate(model, x0, [0.0, T / 2, T], dt=dt)
    b = pt.simulate(peri, x0, [0.0, G * T / 2, G * T], dt=G * dt)
    assert a.nsteps == b.nsteps == 400
    assert np.max(np.abs(a.x - b.x)) <= 200 * EPS * np.max(np.abs(b.x))
    a = pt.simulate(model, x0, [0.0, T], method="dop853", rtol=1e-12, atol=1e-14)
    b = pt.simulate(peri, x0, [0.0, G * T], method="dop853", rtol=1e-12, atol=1e-14)
    assert np.max(np.abs(a.x[-1] - b.x[-1])) <= 1e-9
    assert pt.simulate(model, x0, [0.0, T]).nsteps == pt.simulate(peri, x0, [0.0, G * T]).nsteps
    assert np.allclose(pt.velocity(model, x0), G * pt.velocity(peri, x0), rtol=4 * EPS, atol=0)


def test_layers_of_depth_h_are_peri_lns_of_depth_g_h(sandwich, rng):
    """x + (h g) N(A) is peri-LN's x + h' N(A) at h' = g h, the same floating-point operations: equal to round-off
    (one multiplication h·g either way: measured exactly equal; bound 4 EPS)."""
    model, peri = _models()
    x0 = _tokens(rng)
    h, K = 0.1, 8
    a = pt.discrete_depth(model, x0, h, K)
    b = pt.discrete_depth(peri, x0, G * h, K)
    assert np.max(np.abs(a.x - b.x)) <= 4 * EPS * np.max(np.abs(b.x))
    assert np.array_equal(a.t, h * np.arange(K + 1))


def test_the_cylinder_takes_it_as_a_multiple_of_peri_ln(sandwich):
    """Its velocity is f(|A|)A with f = g/|A|: the cylinder S¹ × (0, ∞) of meanfield.solve_radial takes it, its
    speeds g times peri-LN's (one multiplication: to round-off)."""
    att = SelfAttention(2.0)
    model = Transformer(att, normalization=Normalization("sandwich", gain=G))
    peri = Transformer(att, normalization="peri")
    theta = 2 * np.pi * np.arange(32) / 32
    rho = np.exp(np.cos(theta)) / (2 * np.pi * np.i0(1.0))
    s = np.linspace(-1.0, 1.0, 5)
    for got, want in zip(cylinder.velocity(model, rho, s), cylinder.velocity(peri, rho, s)):
        assert np.allclose(got, G * want, rtol=4 * EPS, atol=4 * EPS * np.max(np.abs(want)))


# ------------------------------------------------------------------ a study file
STUDY = """\
name = "sandwich"
domain = "sphere"
dimension = 3
seed = 7

[model]
beta = 1.5
normalization = "sandwich"
gain = 1.7

[initial]
kind = "von-mises-fisher"
centres = [[0.0, 0.0, 1.0]]
kappa = [2.0]

[time]
t_end = 1.0
frames = 3

[particles]
n = [10]
repeats = 2
dt = 0.01
"""


def test_a_study_file_runs_the_variant_and_its_particles_are_the_direct_calls(sandwich, tmp_path):
    path = tmp_path / "sandwich.toml"
    path.write_text(STUDY)
    model = SCHEMA["model"]
    assert "sandwich" in model["normalization"].choices and model["gain"].positive
    assert ("| `gain` | number | — | normalization = 'sandwich': the sandwich's learned gain g > 0 (required there, "
            "refused elsewhere) |") in reference_markdown()
    cfg = read(path)
    built = build.build_model(cfg)
    assert built.normalization == Normalization("sandwich", gain=G)
    ds = run(path, output=False, progress=False)
    assert ds.attrs["status"] == "success" and ds.attrs["model_label"].startswith("Transformer (sandwich-LN;")
    x0 = build.initial_particles(cfg, None, 10)
    direct = pt.simulate(built, x0, ds["time"].values, dt=0.01)
    stored = ds["positions_10"].values  # (repeat, time, n, d)
    assert np.array_equal(stored, np.moveaxis(direct.x, 0, 1))  # the same call: bit for bit
    r = np.linalg.norm(stored, axis=-1)
    assert "radius_mean" in ds and np.allclose(ds["radius_mean"].values[0], r.mean(axis=-1), rtol=0, atol=1e-13)
    peri = pt.simulate(Transformer(built.attention, normalization="peri"), x0, G * ds["time"].values, dt=G * 0.01)
    assert np.max(np.abs(stored - np.moveaxis(peri.x, 0, 1))) <= 200 * EPS * np.max(np.abs(stored))


@pytest.mark.parametrize("model, words", [
    ({"normalization": "sandwich"}, ["[model] gain", "missing", "'sandwich'"]),
    ({"normalization": "sandwich", "gain": 0.0}, ["[model] gain", "> 0"]),
    ({"normalization": "pre", "gain": 2.0}, ["[model] gain", "'sandwich'", "'pre'", "2"]),
    ({"normalization": "sandwich", "gain": 1.0, "alpha": 0.2}, ["[model] alpha", "'ngpt'", "'sandwich'"]),
])
def test_a_study_names_the_variants_keys(sandwich, model, words):
    s = {"domain": "sphere", "dimension": 3, "model": {"beta": 1.0, **model}, "initial": {"kind": "uniform"},
         "time": {"t_end": 1.0, "frames": 2}, "particles": {"n": [4]}}
    with pytest.raises(StudyError) as err:
        read(s)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_a_variant_states_its_own_step_scale_and_parameter_names():
    """No variant is stepped at another's speed: a variant without ``step_scale`` is refused where the step is set
    (NotImplementedError naming it), not given pre-LN's 1/min r; and a parameter name is one variant's (study files
    name it by its key alone): registering another variant with nGPT's ``alpha`` fails naming both."""

    class Quiet(Normalization):
        name, words, doc = "quiet", "quiet-LN", "a test's variant with no step scale"
        radial = True

        def velocity(self, x, A):
            return np.array(A, dtype=float, copy=True)

    with pytest.raises(NotImplementedError, match="Quiet states no step scale"):
        Quiet().step_scale(1.0, lambda: 1.0)

    class Shadow(Normalization):
        name, words, doc = "shadow", "shadow-LN", "a test's variant reusing nGPT's parameter"
        parameters = variants.NGPT.parameters

    with pytest.raises(ValueError, match="'alpha' is 'ngpt'"):
        variants.register(Shadow)
    assert "shadow" not in NORMALIZATIONS


def test_a_variant_parameter_of_the_wrong_type_names_its_key():
    """The study names the key of a bad value: the error carries the parameter (ParameterError), a TypeError too."""
    with pytest.raises(variants.ParameterError) as info:
        Normalization("ngpt", alpha="fast")
    assert info.value.parameter == "alpha" and isinstance(info.value, TypeError)
