"""A study file with [model] beta_scaling (MATH.md §13): each [particles] N runs with its own β_N, exactly as the
particles given the number β_N; a [grid] density is refused with the reason (a density has no n)."""

import numpy as np
import pytest

import particles
from meanfield.models import SelfAttention
from meanfield.study import StudyError, build, read, run

STUDY = """
domain = "circle"
seed = 2
[model]
beta_scaling = "0.8*log(n)"
[initial]
kind = "uniform"
[time]
t_end = 1.0
frames = 3
[particles]
n = [6, 12]
save_positions = true
"""


def test_each_n_runs_with_its_beta_n(tmp_path):
    """The saved positions of each N equal particles.simulate with the number 0.8 log N, the same start and step,
    bit for bit (one place reads n; a wrong n, e.g. another N's, changes β and the run)."""
    f = tmp_path / "ctx.toml"
    f.write_text(STUDY)
    cfg = read(f)
    ds = run(cfg, output=False, progress=False)
    for n in (6, 12):
        model = SelfAttention(0.8 * np.log(n))
        x0 = build.initial_particles(cfg, None, n)
        direct = particles.simulate(model, x0, cfg["time"]["t_eval"], dt=build.particle_step(cfg, model))
        assert np.array_equal(ds[f"positions_{n}"].values, np.moveaxis(direct.x, 0, 1))


def test_density_is_refused_with_the_reason(tmp_path):
    f = tmp_path / "ctx.toml"
    f.write_text(STUDY.replace("[model]", "[grid]\nn = 32\n[model]"))
    with pytest.raises(StudyError, match="depends on the number of tokens n"):
        run(read(f), output=False, progress=False)
    f.write_text(STUDY.replace('"0.8*log(n)"', '"0.8*log(m)"'))
    with pytest.raises(StudyError, match="beta_scaling"):
        build.build_model(read(f))
