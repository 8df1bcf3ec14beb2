"""Studies of causal attention ([model] causal = true): the study runs on [0, 1] × the tokens' domain.

Asserted: the density's rows keep their masses and the first row follows the circle's own equation (the study
against a direct solve), the tokens' positions never move, the law turned along the positions (twist) is the
one drawn, the figures show the positions and the density, and the study file's refusals."""

import numpy as np
import pytest

import meanfield as mf
from meanfield.models import SelfAttention
from meanfield.study import StudyError, read, run

STUDY = """
domain = "circle"
seed = 1
[model]
beta = 2.0
causal = true
[grid]
n = 64
positions = 9
[initial]
kind = "von-mises-fisher"
angles = [0.5]
kappa = [1.5]
twist = 0.25
[time]
t_end = 1.0
frames = 3
[particles]
n = [100, 400]
repeats = 2
[distances]
p = [1]
"""


def test_causal_study_runs_on_positions_times_the_circle(tmp_path, monkeypatch, saved_figures):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "causal.toml"
    f.write_text(STUDY)
    cfg = read(f)
    assert cfg["domain"] == "sequence" and cfg["dimension"] == 3
    ds = run(f, progress=False, plot=True)
    assert ds.attrs["status"] == "success" and ds.attrs["domain"] == "sequence"
    rho = ds.density.values  # (time, position, theta)
    g = mf.SequenceGrid(ds.theta.size, ds.position.size)
    np.testing.assert_allclose(rho @ g.circle.weights, np.broadcast_to(rho[0] @ g.circle.weights, rho.shape[:2]),
                               atol=1e-13)
    # the initial law: a von Mises law at 0.5 + 2π·0.25·s at every position s
    peaks = g.angles[np.argmax(rho[0], axis=1)]
    np.testing.assert_allclose(peaks, np.round((0.5 + 0.5 * np.pi * g.positions) / (2 * np.pi / 64)) * 2 * np.pi / 64,
                               atol=1e-12)
    # the first row is the circle's own equation of its density (it sees only the tokens at s = 0)
    circle = mf.solve(SelfAttention(2.0), mf.Density(mf.CircleGrid(ds.theta.size), rho[0, 0]), (0.0, 1.0),
                      ds.time.values, representation="grid")
    assert np.max(np.abs(circle.densities[-1].values - rho[-1, 0])) <= 1e-6 * np.max(rho[-1, 0])
    for n in (100, 400):
        x = ds[f"positions_{n}"].values  # (repeat, time, token, component): positions in component 0
        assert np.array_equal(x[:, :, :, 0], np.broadcast_to(x[:, :1, :, 0], x.shape[:3]))
        assert np.all((x[..., 0] >= 0) & (x[..., 0] <= 1))
    assert np.all(np.isfinite(ds.wasserstein.values)) and np.all(ds.wasserstein.values > 0)
    density = saved_figures["causal-density.png"]
    ax = density.axes[0]
    assert ax.get_xlabel() == "position s" and ax.get_ylabel() == "θ"
    assert density.get_suptitle().startswith("causal SA, β = 2 on [0, 1] × S¹ · 9 positions × grid n")
    maps = [a for a in density.axes if a.get_title().startswith("t = ")]
    assert [a.get_title() for a in maps][-1] == f"t = {ds.time.values[-1]:.3g}" and all(a.collections for a in maps)
    assert "f(s, θ)" in [a for a in density.axes if a not in maps][0].get_ylabel()  # one labelled colour bar


@pytest.mark.parametrize("change,message", [
    ({"domain": '"euclidean"', "kind": '"softmax"'}, "causal"),
    ({"twist_only": True}, "twist"),
    ({"lmax": True}, r"bad.toml: domain: densities of tokens with positions .* on the circle only \(dimension 2\), "
                     r"not for the sphere"),  # no dimension given: not "dimension ... got 4" (issue 39)
])
def test_causal_study_refusals(tmp_path, change, message):
    text = STUDY
    if "domain" in change:
        text = text.replace('domain = "circle"', f"domain = {change['domain']}").replace(
            "beta = 2.0\ncausal = true", f"kind = {change['kind']}\ncausal = true")
    if change.get("twist_only"):
        text = text.replace("causal = true\n", "").replace("positions = 9\n", "")
    if change.get("lmax"):
        text = text.replace('domain = "circle"', 'domain = "sphere"').replace("n = 64\npositions = 9", "lmax = 8")
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(StudyError, match=message):
        read(f)
