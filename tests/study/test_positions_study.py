"""A causal study with the decay mask ([model] decay = λ; docs/MATH.md §13): the key reaches the model, the run's
rows keep their masses, the model's words name the decay, and a decay without causal = true is refused naming why."""

import numpy as np
import pytest

import meanfield as mf
from meanfield.study import StudyError, read, run

STUDY = """
domain = "circle"
seed = 1
[model]
beta = 2.0
causal = true
decay = {decay}
[grid]
n = 32
positions = 9
[initial]
kind = "von-mises-fisher"
angles = [0.5]
kappa = [1.5]
twist = 0.25
[time]
t_end = 0.5
frames = 2
"""


def test_decay_study_runs_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "decay.toml"
    f.write_text(STUDY.format(decay=3.0))
    ds = run(f, progress=False, plot=False)
    assert ds.attrs["status"] == "success"
    assert "decay λ = 3" in ds.attrs["model_label"]
    rho = ds.density.values
    g = mf.SequenceGrid(ds.theta.size, ds.position.size)
    np.testing.assert_allclose(rho @ g.circle.weights, np.broadcast_to(rho[0] @ g.circle.weights, rho.shape[:2]),
                               atol=1e-13)
    # the decay acts: the same study without it ends elsewhere
    f0 = tmp_path / "plain.toml"
    f0.write_text(STUDY.format(decay=0.0))
    plain = run(f0, output=False, progress=False, plot=False)
    assert np.max(np.abs(plain.density.values[-1] - rho[-1])) > 1e-3


def test_decay_without_causal_is_refused(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(STUDY.format(decay=3.0).replace("causal = true", "causal = false").replace("positions = 9\n", "")
                 .replace("twist = 0.25\n", ""))
    with pytest.raises(StudyError, match=r"\[model\]: `decay` = 3.0 weighs the tokens by their positions.*causal=True"):
        run(read(f), output=False, progress=False, plot=False)
