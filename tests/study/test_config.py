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
        (with_(model={"beta": -1.0}), r"\[model\] beta: must be >= 0, got -1"),
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
        (with_(initial={"kind": "gaussian"}), r"\[initial\] kind: gaussian is a law in R\^d"),
        (with_(time={"t_eval": [0.0, 1.0, 0.5]}), r"\[time\] t_eval: must increase"),
        (with_(time={"method": "euler"}), r"\[time\] method: must be one of"),
        (with_(particles={"n": [10, 10]}), r"\[particles\] n: the particle numbers must differ"),
        (with_(distances={"p": [1]}), r"\[distances\] p: distances compare"),
        (with_(particles={"n": [0]}), r"\[particles\] n: must be >= 1"),
        ({"domain": "sphere", "dimension": 4, "grid": {"lmax": 8}}, "dimension: densities on the sphere"),
        ({"domain": "euclidean", "grid": {"bounds": [[1.0, -1.0]], "shape": 16}}, r"\[grid\] bounds"),
        ({"domain": "euclidean", "model": {"kind": "self-attention"}, "particles": {"n": 4}}, r"\[model\] kind"),
        ({"domain": "circle"}, "the study computes nothing"),
    ],
)
def test_bad_studies_name_the_key(study, message):
    with pytest.raises(StudyError, match=message):
        read(study)


def test_file_errors_name_the_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('domain = "circle"\n[grid]\nn = 32\n[model]\nbeta = -2\n')
    with pytest.raises(StudyError, match=r"s\.toml: \[model\] beta: must be >= 0"):
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


def test_readme_documents_every_key():
    from pathlib import Path

    from meanfield.study.config import SCHEMA

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    reference = readme[readme.index("### Study file reference"):]
    for section, keys in SCHEMA.items():
        header = f"**[{section}]**" if section else "**top level**"
        table = reference[reference.index(header):].split("\n\n", 2)[1]  # the table under the header
        for key in keys:
            assert f"| `{key}` |" in table, (section, key)


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
