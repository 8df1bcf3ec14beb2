"""Study files: every key checked, bad files refused naming the key, --over parsed."""

import numpy as np
import pytest

from meanfield.study import StudyError, read
from meanfield.study.config import parse_over

BASE = {"domain": "circle", "grid": {"n": 32}, "time": {"t_end": 0.5, "frames": 3}}


def with_(**tables):
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in BASE.items()}
    for k, v in tables.items():
        if isinstance(v, dict):
            out.setdefault(k, {}).update(v)
        else:
            out[k] = v
    return out


def test_defaults_are_filled_and_json_serialisable():
    import json

    cfg = read(BASE)
    assert cfg["model"]["kind"] == "self-attention" and cfg["model"]["beta"] == 1.0
    assert cfg["time"]["t_eval"] == [0.0, 0.25, 0.5]
    assert cfg["particles"] is None and cfg["dimension"] == 2
    assert json.loads(json.dumps(cfg)) == cfg
    assert read(cfg) == cfg  # a checked study checks again to itself (results files can be re-run)


@pytest.mark.parametrize(
    "study, message",
    [
        (with_(colour="red"), "colour: unknown key"),
        (with_(grid={"nn": 3}), r"\[grid\] nn: unknown key"),
        ({"domain": "sphere", "grid": {"lmax": 8}, "model": {"beta": -1.0}},
         r"\[model\] beta: -1 < 0 \(repulsive attention\) with a \[grid\] on domain 'sphere': .* on the circle only"),
        ({"domain": "euclidean", "grid": {"bounds": [[-1.0, 1.0]], "shape": 16}, "initial": {"kind": "gaussian"},
          "model": {"kind": "softmax", "beta": -1.0}}, r"\[model\] beta: must be >= 0, got -1"),
        (with_(model={"beta": "four"}), r"\[model\] beta: must be a number"),
        (with_(model={"beta": float("nan")}), r"\[model\] beta: must be finite"),
        (with_(model={"normalized": 1}), r"\[model\] normalized: must be true or false"),
        (with_(model={"Q": [[1.0, 0.0, 0.0]] * 3}), r"\[model\] Q: must be 2×2 for dimension 2, got 3×3"),
        (with_(model={"Q": [[1.0, 0.0], [0.0]]}), r"\[model\] Q: rows must have equal lengths"),
        (with_(model={"V": "diagonal"}), r"\[model\] V: must be a number, a d×d array"),
        (with_(grid={"n": 2}), r"\[grid\] n: must be >= 4"),
        (with_(grid={"lmax": 8}), r"\[grid\] lmax: does not apply to domain 'circle'"),
        (with_(domain="torus"), "domain: must be one of circle, sphere, euclidean"),
        ({"grid": {"n": 8}}, "domain: missing"),
        (with_(initial={"kind": "file", "path": "no/such/file.npz"}), r"\[initial\] path: cannot read"),
        (with_(initial={"kind": "poisson", "a": [0.9, 0.9]}), r"\[initial\] a: must lie inside the unit ball"),
        (with_(initial={"kind": "von-mises-fisher"}), r"\[initial\] centres"),
        (with_(initial={"kind": "gaussian"}), r"\[initial\] kind: gaussian is not a law on the circle \(it takes "
                                              r"uniform, uniform-noise, von-mises-fisher, poisson, file\)"),
        ({"domain": "euclidean", "grid": {"bounds": [[-1.0, 1.0]], "shape": 16}, "initial": {"kind": "poisson"}},
         r"\[initial\] kind: poisson is not a law on the euclidean"),
        ({"domain": "sphere", "particles": {"n": 4}, "initial": {"kind": "von-mises-fisher", "angles": [1.0]}},
         r"\[initial\] angles: mean angles are points of a periodic domain of dimension 1 \(the circle\), "
         r"not of the sphere"),
        ({"domain": "sphere", "dimension": 2, "particles": {"n": 4}}, r"dimension: the sphere S\^\(d-1\) needs d >= 3"),
        (with_(dimension=3), r"dimension: the circle lives in R², so dimension must be 2, got 3"),
        ({"domain": "euclidean", "dimension": 1, "grid": {"bounds": [[-1.0, 1.0], [0.0, 1.0]], "shape": 8}},
         r"dimension: 1 differs from the 2 intervals of \[grid\] bounds"),
        ({"domain": "euclidean", "grid": {"bounds": [[-1.0, 1.0], [0.0, 1.0]], "shape": [8, 8, 8]}},
         r"\[grid\] shape: one integer or one per dimension \(2\)"),
        ({"domain": "sphere", "grid": {"backend": "ducc0"}}, r"\[grid\] lmax: missing \(domain 'sphere' needs lmax\)"),
        ({"domain": "euclidean", "grid": {"bounds": [[-1.0, 1.0]], "shape": 16}, "time": {"refine": True}},
         r"\[time\] refine: the grids of domain 'euclidean' are not refined"),
        (with_(time={"t_eval": [0.0, 1.0, 0.5]}), r"\[time\] t_eval: must increase"),
        (with_(time={"method": "euler"}), r"\[time\] method: must be one of"),
        (with_(particles={"n": [10, 10]}), r"\[particles\] n: the particle numbers must differ"),
        (with_(distances={"p": [1]}), r"\[distances\] p: distances compare"),
        (with_(particles={"n": [0]}), r"\[particles\] n: must be >= 1"),
        ({"domain": "sphere", "dimension": 4, "grid": {"lmax": 8}}, "dimension: densities on the sphere"),
        ({"domain": "euclidean", "grid": {"bounds": [[1.0, -1.0]], "shape": 16}}, r"\[grid\] bounds"),
        ({"domain": "euclidean", "model": {"kind": "self-attention"}, "particles": {"n": 4}},
         r"\[model\] kind: 'self-attention' moves points of the sphere manifold but domain 'euclidean' is on the "
         r"euclidean manifold \(use softmax, l2, sinkhorn, sigmoid\)"),
        (with_(model={"kind": "masked"}), r"\[model\] kind: must be one of self-attention, softmax"),  # study=False
        (with_(model={"tau": 2.0}), r"\[model\] tau: does not apply to kind 'self-attention' \(it takes beta, "
                                    r"beta_scaling, normalized, noise, causal, decay, rope, rope_base\)"),
        ({"domain": "euclidean", "particles": {"n": 4}, "model": {"normalized": False}},
         r"\[model\] normalized: does not apply to kind 'softmax' \(it takes beta, noise\)"),
        ({"domain": "euclidean", "particles": {"n": 4}, "model": {"kind": "l2", "tau": 0.0}},
         r"\[model\] tau: must be > 0, got 0"),
        ({"domain": "circle"}, "the study computes nothing"),
        # a causal density on the sphere: named by the domain where no dimension was given (issue 39: "got 4")
        ({"domain": "sphere", "grid": {"lmax": 8}, "model": {"causal": True}},
         r"^domain: densities of tokens with positions \(\[model\] causal = true with a \[grid\]\) are solved for "
         r"tokens on the circle only \(dimension 2\), not for the sphere: use domain = 'circle', or drop \[grid\]"),
        ({"domain": "sphere", "dimension": 4, "grid": {"lmax": 8}, "model": {"causal": True}},
         r"^dimension: densities of tokens with positions .* not for tokens of dimension 4: "),
    ],
)
def test_bad_studies_name_the_key(study, message):
    with pytest.raises(StudyError, match=message):
        read(study)


def test_file_errors_name_the_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('domain = "sphere"\n[grid]\nlmax = 8\n[model]\nbeta = -2\n')
    with pytest.raises(StudyError, match=r"s\.toml: \[model\] beta: -2 < 0 \(repulsive attention\)"):
        read(f)
    f.write_text("domain = circle\n")
    with pytest.raises(StudyError, match="not valid TOML"):
        read(f)
    with pytest.raises(StudyError, match="cannot read the study file"):
        read(tmp_path / "absent.toml")


def test_relative_initial_path_is_taken_from_the_study_file(tmp_path):
    np.savez(tmp_path / "rho.npz", values=np.ones(32))
    f = tmp_path / "s.toml"
    f.write_text('domain = "circle"\n[grid]\nn = 32\n[initial]\nkind = "file"\npath = "rho.npz"\n')
    assert read(f)["initial"]["path"] == str((tmp_path / "rho.npz").resolve())


def test_over_specifications():
    key, values = parse_over("beta=0.1:9:90")
    assert key == "model.beta" and len(values) == 90
    assert values[0] == 0.1 and values[-1] == pytest.approx(9.0) and np.all(np.diff(values) > 0)
    assert parse_over("n=100,200") == ("particles.n", [100, 200])
    assert parse_over("seed=0:3:4") == ("seed", [0, 1, 2, 3])
    assert parse_over("time.t_end=2") == ("time.t_end", [2.0])
    for bad, msg in (("beta", "expected key="), ("colour=1", "not a key"), ("beta=a:b:c", "cannot read"),
                     ("n=1.5", "cannot read"), ("beta=1,1", "repeated")):
        with pytest.raises(StudyError, match=msg):
            parse_over(bad)


def test_site_reference_is_the_generated_schema(tmp_path):
    """The site's "Study file reference" page (docs/guide/study_reference.md, written by the docs build's
    generator, docs/_ext/meanfield_api.py) holds exactly :func:`reference_markdown` of the schema, once, under its
    "Keys" heading, and a row for every key in its section's table: the reference cannot drift from the schema,
    whatever key is added, removed or redocumented (a model kind registered, a parameter renamed)."""
    from tests.helpers import docs_generators

    from meanfield.study.config import SCHEMA, reference_markdown

    ext = docs_generators()
    path = ext.write_study_reference(tmp_path)  # what the build writes into docs/ at config-inited
    assert path == tmp_path / "guide" / "study_reference.md"
    page = path.read_text(encoding="utf-8")
    generated = reference_markdown()
    assert page.splitlines()[0] == "# Study file reference"
    assert page.count(generated) == 1
    at = page.index("## Keys\n")
    assert page[at:].split("\n", 2)[2].startswith(generated)
    for section, keys in SCHEMA.items():  # every key has a row, in its section's table
        header = f"**[{section}]**" if section else "**top level**"
        table = generated[generated.index(header):].split("\n\n", 2)[1]
        assert [row.split("`")[1] for row in table.splitlines()[2:]] == list(keys)


def test_model_section_is_generated_from_the_registry():
    from meanfield.models import registry
    from meanfield.study.config import SCHEMA

    model = SCHEMA["model"]
    assert model["kind"].choices == ("self-attention", "softmax", "l2", "sinkhorn", "sigmoid")
    for kind in registry.kinds(study=True):
        for p in kind.parameters:
            assert model[p.name].default is None and model[p.name].kind == p.type and kind.name in model[p.name].doc
    assert "masked" not in model["kind"].choices  # registered with study=False


@pytest.mark.parametrize("domain", ["circle", "sphere", "euclidean"])
def test_each_kind_gets_its_own_defaults_and_none_of_the_others(domain):
    from meanfield import domains
    from meanfield.models import registry

    dom = domains.get(domain)
    grid = {"bounds": [[-2.0, 2.0]], "shape": 16} if "bounds" in dom.grid_parameters else \
        {k: 8 for k, required in dom.grid_parameters.items() if required}
    default = read({"domain": domain, "grid": grid})["model"]
    assert default["kind"] == registry.default_kind(dom.manifold).name
    for kind in registry.kinds(dom.manifold, study=True):
        m = read({"domain": domain, "grid": grid, "model": {"kind": kind.name}})["model"]
        own = {p.name: p.default for p in kind.parameters}
        for key in {p.name for k in registry.kinds(study=True) for p in k.parameters}:
            assert m[key] == own.get(key), (kind.name, key)


def test_grid_keys_are_the_domains_grid_parameters():
    from meanfield import domains
    from meanfield.study.config import SCHEMA

    taken = {key for d in domains.DOMAINS for key in d.grid_parameters}
    assert taken == set(SCHEMA["grid"])
    assert SCHEMA[""]["domain"].choices == tuple(d.name for d in domains.DOMAINS)
    for d in domains.DOMAINS:
        for key, required in d.grid_parameters.items():
            assert d.name + (" (required)" if required else "") in SCHEMA["grid"][key].doc


def test_poisson_particles_without_a_grid_on_the_sphere():
    """The Poisson law is sampled exactly without a grid on S^{d-1} too: its mean is a·m(|a|) on S²,
    m(s) = mobius_mean_factor (MATH.md §3); in d = 4 the draws are unit vectors with a mean along a."""
    from meanfield.analysis import exact
    from meanfield.study import build

    a = [0.0, 0.3, 0.4]
    cfg = read({"domain": "sphere", "particles": {"n": 20000, "repeats": 2}, "initial": {"kind": "poisson", "a": a}})
    x = build.initial_particles(cfg, None, 20000)
    assert x.shape == (2, 20000, 3) and np.allclose(np.linalg.norm(x, axis=-1), 1.0)
    mean = x.mean(axis=(0, 1))
    expected = float(exact.mobius_mean_factor(np.array([0.5]))[0]) * np.array(a) / 0.5  # |a| = 0.5
    assert np.allclose(mean, expected, atol=4 / np.sqrt(40000))
    cfg4 = read({"domain": "sphere", "dimension": 4, "particles": {"n": 500},
                 "initial": {"kind": "poisson", "a": [0.6, 0.0, 0.0, 0.0]}})
    y = build.initial_particles(cfg4, None, 500)
    assert y.shape == (1, 500, 4) and np.allclose(np.linalg.norm(y, axis=-1), 1.0) and y[..., 0].mean() > 0.3


def test_domain_dependent_defaults_and_particles_without_n():
    cfg = read({"domain": "euclidean", "grid": {"bounds": [[-3.0, 3.0]], "shape": 32}})
    assert cfg["initial"]["kind"] == "gaussian" and cfg["model"]["kind"] == "softmax" and cfg["dimension"] == 1
    assert cfg["time"]["refine"] is None and cfg["initial"]["cov"] == 0.1  # solve's default: no refinement in R^d
    assert read(BASE)["initial"]["kind"] == "uniform-noise"
    with pytest.raises(StudyError, match=r"\[particles\] n: missing"):
        read(with_(particles={"repeats": 4}))


def test_random_matrices_follow_the_model_seed():
    from meanfield.study import build

    def heads(top=0, **model):
        cfg = read({"domain": "sphere", "dimension": 4, "particles": {"n": 4}, "initial": {"kind": "uniform"},
                    "model": {"Q": "random", "K": "random", "heads": 2, **model}, "seed": top})
        return build.build_model(cfg).heads

    a, b = heads(seed=3), heads(seed=3, top=9)  # particles' seed changed, matrices kept
    assert all(np.array_equal(x.Q, y.Q) and np.array_equal(x.K, y.K) for x, y in zip(a, b))
    assert not np.array_equal(a[0].Q, a[1].Q)  # each head draws its own
    assert not np.array_equal(heads(seed=4)[0].Q, a[0].Q)
    assert a[0].V is None and a[0].Q.shape == (4, 4)


def test_a_feed_forward_block_without_activation_is_the_same_in_python_and_in_study_files(tmp_path):
    """One default (issue 39): the block a study builds from [model] weights that name no ``activation`` moves the
    tokens as ``FeedForward(W, A)`` of the same arrays does, and the other activations would not (on these weights
    relu, gelu, tanh and identity give different velocities, so the comparison tells them apart)."""
    from meanfield.models import ACTIVATIONS, FeedForward
    from meanfield.study import build

    rng = np.random.default_rng(0)
    W, A = rng.standard_normal((3, 4)), rng.standard_normal((4, 3))
    np.savez(tmp_path / "w.npz", W=W, A=A)
    cfg = read({"domain": "sphere", "grid": {"lmax": 8}, "model": {"weights": str(tmp_path / "w.npz")}})
    block = build.build_model(cfg).parts[1]
    x = rng.standard_normal((20, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    python = FeedForward(W, A).velocity(x)
    np.testing.assert_array_equal(block.velocity(x), python)
    for other in set(ACTIVATIONS) - {block.activation}:
        assert not np.allclose(FeedForward(W, A, activation=other).velocity(x), python), other
