"""Studies of the normalised Transformers (issue 37, item 5; docs/MATH.md §10): the [model] keys normalization, alpha
and switch, their refusals (named by key and value), the refusal of a pre/peri/Mix-LN [grid] density by ``meanfield
check`` and ``meanfield run`` alike (solve.prepare's, with the library's reason), nGPT's density on the grid, and the particles' radius statistics and pair
fractions of the directions against the equiangular reduction and the bounds of pre-LN's ṙ = ⟨θ, A⟩."""

import copy

import numpy as np
import pytest

from meanfield.analysis import exact
from meanfield.models import Transformer
from meanfield.models.normalization import NORMALIZATIONS, Normalization, density_refusal
from meanfield.study import build, preflight, read, run
from meanfield.study.config import SCHEMA, StudyError
from meanfield.study.figures import write_figures

BASE = {"domain": "sphere", "dimension": 3, "model": {"beta": 1.0, "normalization": "pre"},
        "initial": {"kind": "von-mises-fisher", "centres": [[0.0, 0.0, 1.0]], "kappa": [50.0]},
        "time": {"t_end": 4.0, "frames": 9}, "particles": {"n": [12], "repeats": 2}}


def _study(**model):
    s = copy.deepcopy(BASE)
    s["model"] = {"beta": 1.0, **model}
    return s


def test_schema_has_the_keys_with_the_librarys_variants():
    keys = SCHEMA["model"]
    assert keys["normalization"].choices == NORMALIZATIONS and keys["normalization"].default == "post"
    assert keys["alpha"].positive and keys["alpha"].default is None
    assert "switch" in keys  # Mix-LN's t_0, named as Normalization names it
    assert read(_study())["model"]["normalization"] == "post"
    cfg = read(_study(normalization="ngpt", alpha=0.2))
    assert build.normalization(cfg) == Normalization("ngpt", alpha=0.2)
    model = build.build_model(read(_study(normalization="mix", switch=1.5)))
    assert isinstance(model, Transformer) and model.normalization == Normalization("mix", switch=1.5)
    assert not isinstance(build.build_model(read(_study())), Transformer)  # post-LN: today's bare attention


@pytest.mark.parametrize("model, words", [
    ({"normalization": "layer"}, ["[model] normalization", "'layer'", "post, pre, peri, mix, ngpt"]),
    ({"normalization": "pre", "alpha": 0.2}, ["[model] alpha", "'ngpt'", "'pre'", "0.2"]),
    ({"alpha": 0.3}, ["[model] alpha", "'post'", "0.3"]),
    ({"normalization": "ngpt"}, ["[model] alpha", "missing", "'ngpt'"]),
    ({"normalization": "ngpt", "alpha": 0.0}, ["[model] alpha", "> 0", "0"]),
    ({"normalization": "ngpt", "alpha": -1.0}, ["[model] alpha", "> 0", "-1"]),
    ({"normalization": "mix"}, ["[model] switch", "missing", "'mix'"]),
    ({"normalization": "peri", "switch": 2.0}, ["[model] switch", "'mix'", "'peri'", "2"]),
    ({"normalization": "mix", "switch": 1.0, "noise": 0.1}, ["[model] noise", "'mix'", "0.1"]),
    ({"normalization": "pre", "causal": True}, ["[model] normalization", "'pre'", "causal"]),
])
def test_bad_keys_are_refused_naming_key_and_value(model, words):
    with pytest.raises(StudyError) as err:
        read(_study(**model))
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_a_variant_in_rd_and_a_stationary_study_are_refused():
    s = {"domain": "euclidean", "model": {"kind": "softmax", "normalization": "peri"},
         "initial": {"kind": "gaussian"}, "particles": {"n": [10]}}
    with pytest.raises(StudyError, match=r"\[model\] normalization: 'peri'.*'softmax'"):
        read(s)
    s = _study(normalization="pre")
    s["stationary"] = {"noise": [0.1]}
    s["domain"], s["dimension"], s["initial"] = "circle", 2, {"kind": "uniform"}
    with pytest.raises(StudyError, match=r"\[model\] normalization: a \[stationary\]"):
        read(s)


@pytest.mark.parametrize("model", [{"normalization": "pre"}, {"normalization": "peri"},
                                   {"normalization": "mix", "switch": 1.0}])
def test_a_grid_density_is_refused_by_check_and_run_alike(model, tmp_path):
    """`meanfield check` (preflight.check → solve.prepare) refuses exactly what `meanfield run` refuses, with the
    library's reason (density_refusal) named by [model] normalization."""
    s = _study(**model)
    s.update(domain="circle", dimension=2, grid={"n": 32}, initial={"kind": "uniform"})
    s["output"] = {"path": str(tmp_path / "x.nc")}
    cfg = read(s)  # the keys are valid: the refusal is the solvers'
    why = density_refusal(build.build_model(cfg))
    assert why is not None
    with pytest.raises(StudyError) as checked:
        preflight.check(cfg, None, announce=False)
    with pytest.raises(StudyError) as ran:
        run(s, output=False, progress=False)
    assert str(checked.value) == str(ran.value)
    assert str(checked.value).startswith(f"[model] normalization: {model['normalization']!r}")
    assert why in str(checked.value)


def test_an_ngpt_study_solves_its_density_on_the_grid():
    """[model] normalization = 'ngpt' with a [grid]: `check` passes and the run stores the density of nGPT's
    continuity equation — that of meanfield.solve with the study's model (to round-off), not post-LN's."""
    import meanfield as mf

    s = {"domain": "circle", "dimension": 2, "model": {"beta": 2.0, "normalization": "ngpt", "alpha": 0.5},
         "initial": {"kind": "von-mises-fisher", "centres": [[1.0, 0.0]], "kappa": [1.0]},
         "grid": {"n": 64}, "time": {"t_end": 1.0, "frames": 3}, "particles": {"n": [12], "repeats": 2}}
    cfg = read(s)
    preflight.check(cfg, None, announce=False)
    ds = run(s, output=False, progress=False)
    assert ds.attrs["status"] == "success" and np.allclose(ds["mass"].values, 1.0, atol=1e-13, rtol=0)
    model = build.build_model(cfg)
    assert model.normalization == Normalization("ngpt", alpha=0.5)
    grid = mf.CircleGrid(64)
    mu0 = mf.Density(grid, np.exp(np.cos(grid.angles)) / (2 * np.pi * np.i0(1.0)))
    solved = {m: mf.solve(m, mu0, (0.0, 1.0), t_eval=[1.0]).densities[-1] for m in (model, model.attention)}
    stored = ds["density"].values[-1]
    out = mf.Density(mf.CircleGrid(stored.size), stored)
    ngpt, post = (solved[m].resampled(out.grid).values for m in (model, model.attention))
    assert np.max(np.abs(stored - ngpt)) <= 1e-10
    assert np.max(np.abs(stored - post)) >= 1e-3


def test_pre_ln_study_from_orthonormal_tokens_follows_the_equiangular_reduction(monkeypatch):
    """n = d = 8 orthonormal tokens (MATH.md §10): every radius is r(t) and every pair has 1 − ρ(t) of
    exact.normalized_equiangular; the stored mean and quantiles of r agree with r(t), and the pair fraction of the
    directions is 0 before 1 − ρ crosses δ and 1 after."""
    t = [0.0, 1.0, 2.0, 3.0, 5.0]
    ref = exact.normalized_equiangular(t, 8, 1.0, "pre")
    delta = float(exact.normalized_equiangular([4.0], 8, 1.0, "pre").one_minus_rho[0])  # crossed at t = 4
    s = {"domain": "sphere", "dimension": 8, "model": {"beta": 1.0, "normalization": "pre"},
         "initial": {"kind": "uniform"}, "time": {"t_eval": t},
         "particles": {"n": [8], "method": "dop853", "delta": delta, "save_positions": False}}
    monkeypatch.setattr(build, "initial_particles", lambda cfg, mu0, n: np.eye(8)[None])
    ds = run(s, output=False, progress=False)
    r = ds["radius_mean"].values[0, 0]
    assert np.max(np.abs(r - ref.r)) < 1e-7
    q = ds["radius_quantiles"].values[0, 0]  # (quantile, time): all radii equal
    assert np.max(np.abs(q - ref.r[None])) < 1e-7
    assert list(ds["pair_fraction"].values[0, 0]) == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert np.all(np.diff(r) > 0) and np.all(r <= 1.0 + np.array(t) + 1e-12)  # ṙ = ⟨θ, A⟩ in (0, |A|], |A| <= 1


@pytest.mark.parametrize("kind", ["pre", "peri"])
def test_radii_of_a_clustered_start_grow_like_t_between_the_cap_bounds(kind, tmp_path):
    """Tokens in a cap of angular radius φ_0 < π/4 stay in it (each moves toward a convex combination of the
    others), so ⟨θ_i, θ_j⟩ >= c = cos 2φ_0; then pre-LN's ṙ_i = ⟨θ_i, A_i⟩ and peri-LN's ⟨θ_i, A_i⟩/|A_i| lie in
    [c, 1] (V = I: |A_i| <= 1), and 1 + ct <= r_i(t) <= 1 + t for every token (MATH.md §10: r ~ t). The stored
    statistics are those of the stored positions; the directions cluster (their pair fraction grows)."""
    s = _study(normalization=kind)
    s["time"] = {"t_end": 6.0, "frames": 7}
    s["particles"]["delta"] = 1e-3
    s["output"] = {"path": str(tmp_path / "pre.nc")}
    ds = run(s, progress=False)
    x = ds["positions_12"].values  # (repeat, time, n, d)
    r = np.linalg.norm(x, axis=-1)
    theta0 = x[:, 0] / r[:, 0, :, None]
    centre = theta0.sum(axis=1)
    centre /= np.linalg.norm(centre, axis=-1, keepdims=True)
    phi0 = np.arccos(np.clip(np.einsum("rnd,rd->rn", theta0, centre), -1, 1)).max(axis=1)
    assert np.all(phi0 < np.pi / 4)
    c = np.cos(2 * phi0)[:, None, None]
    t = ds["time"].values[None, :, None]
    assert np.all(r[:, 0] == pytest.approx(1.0, abs=1e-15))
    assert np.all(r >= 1 + c * t - 1e-9) and np.all(r <= 1 + t + 1e-9)
    assert np.allclose(ds["radius_mean"].values[0], r.mean(axis=-1), rtol=0, atol=1e-13)
    assert np.allclose(ds["radius_quantiles"].values[0], np.moveaxis(np.quantile(r, (0.1, 0.5, 0.9), axis=-1), 0, 1),
                       rtol=0, atol=1e-13)
    pairs = ds["pair_fraction"].values[0]
    assert np.all(pairs[:, -1] > pairs[:, 0])
    files = write_figures(ds, tmp_path / "pre.nc")
    assert tmp_path / "pre-radius.png" in files and (tmp_path / "pre-radius.png").stat().st_size > 0
    assert (tmp_path / "pre-clusters.png").exists()


def test_unit_vector_variants_store_no_radius():
    """Post-LN and nGPT keep unit vectors: no radius variables; nGPT's pair fraction is of its unit tokens."""
    for model in ({}, {"normalization": "ngpt", "alpha": 0.5}):
        s = _study(**model)
        s["time"] = {"t_end": 1.0, "frames": 3}
        ds = run(s, output=False, progress=False)
        assert "radius_mean" not in ds and "pair_fraction" in ds
        x = ds["positions_12"].values
        assert np.allclose(np.linalg.norm(x, axis=-1), 1.0, atol=1e-12)
