"""Sweeps: a LocalCluster gives the numbers of the serial run; the grid of points is a product."""

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.study import StudyError, StudyInterrupted, sweep

STUDY = {"name": "sw", "domain": "circle", "seed": 3, "grid": {"n": 64},
         "initial": {"kind": "uniform-noise", "amplitude": 0.1}, "time": {"t_end": 1.0, "frames": 3},
         "particles": {"n": [40, 80], "repeats": 2}, "distances": {"p": [1]}}


def test_local_cluster_equals_serial(tmp_path):
    over = ["beta=0.5:2:4", "seed=0,1"]
    serial = sweep(STUDY, over, scheduler="serial", output=tmp_path / "serial.nc", progress=False)
    local = sweep(STUDY, over, workers=2, output=tmp_path / "local.nc", progress=False)
    assert serial.sizes["beta"] == 4 and serial.sizes["seed"] == 2
    assert np.all(serial.status == "success")
    # same seeds, same numbers, bit for bit, whatever ran where and in which order
    xr.testing.assert_identical(serial.drop_attrs(), local.drop_attrs())
    xr.testing.assert_identical(serial, meanfield.load(tmp_path / "serial.nc"))
    # each point equals the single run of the study with that key replaced
    from meanfield.study import run

    one = run({**STUDY, "seed": 1, "model": {"beta": 1.5}}, output=False, progress=False)
    point = serial.sel(beta=1.5, seed=1)
    for v in ("energy", "mass", "pair_fraction", "wasserstein", "particle_energy"):
        np.testing.assert_array_equal(point[v].values, one[v].values)
    # different seeds give different draws
    assert not np.allclose(serial.wasserstein.sel(seed=0), serial.wasserstein.sel(seed=1))


def test_sweep_over_particle_number_and_repeats():
    """A sweep over N with 3 repeats equals, bit for bit, the one run of the study with those N and repeats (the
    N particles are drawn from the stream [seed, 3, N] whatever else runs): the per-N statistics and the density's
    energy and mass (one density: the sweep keeps one copy, checked equal across N)."""
    from meanfield.study import run

    ds = sweep(STUDY, {"n": [30, 60, 90]}, repeats=3, scheduler="serial", output=False, progress=False)
    assert list(ds.n_particles.values) == [30, 60, 90] and ds.sizes["repeat"] == 3
    one = run({**STUDY, "particles": {"n": [30, 60, 90], "repeats": 3}}, output=False, progress=False)
    for v in ("pair_fraction", "wasserstein", "particle_energy", "energy", "mass"):
        xr.testing.assert_equal(ds[v], one[v])


def test_bad_sweeps_are_refused_before_running():
    with pytest.raises(StudyError, match=r"\[model\] noise: must be >= 0"):
        sweep(STUDY, ["noise=-1:1:3"], scheduler="serial", output=False)
    with pytest.raises(StudyError, match="--repeats"):
        sweep(STUDY, ["beta=1"], repeats=0, scheduler="serial", output=False)
    with pytest.raises(StudyError, match="swept twice"):
        sweep(STUDY, ["beta=1", "model.beta=2"], scheduler="serial", output=False)


@pytest.mark.slow  # a second LocalCluster (6 s); the workers' bit-for-bit equality is tested by the local cluster
def test_a_running_scheduler_by_address():
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        remote = sweep(STUDY, ["beta=1,2"], scheduler=cluster.scheduler_address, output=False, progress=False)
    serial = sweep(STUDY, ["beta=1,2"], scheduler="serial", output=False, progress=False)
    xr.testing.assert_identical(serial.drop_attrs(), remote.drop_attrs())
    assert "tcp://" in remote.attrs["sweep"]


def test_ctrl_c_keeps_the_finished_points(tmp_path, monkeypatch):
    import importlib


    module = importlib.import_module("meanfield.study.sweep")  # the attribute `sweep` is the function
    task, calls = module._task, {"n": 0}

    def interrupting(cfg):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return task(cfg)

    monkeypatch.setattr(module, "_task", interrupting)
    with pytest.raises(StudyInterrupted) as e:
        sweep(STUDY, ["beta=1:4:4"], scheduler="serial", output=tmp_path / "i.nc", progress=False)
    ds = meanfield.load(tmp_path / "i.nc")
    xr.testing.assert_identical(ds, e.value.dataset)
    assert ds.attrs["status"] == "interrupted"
    assert list(ds.status.values) == ["success", "success", "not run", "not run"]
    assert np.all(np.isfinite(ds.energy.sel(beta=[1.0, 2.0]))) and np.all(np.isnan(ds.energy.sel(beta=[3.0, 4.0])))
    assert np.all(np.isnan(ds.nfev.sel(beta=[3.0, 4.0])))


def test_ctrl_c_stops_the_workers_without_waiting_for_their_tasks(monkeypatch):
    import time

    import distributed

    def interrupted(futures, *args, **kwargs):
        time.sleep(1.0)  # the cluster is up and computing
        raise KeyboardInterrupt

    monkeypatch.setattr(distributed, "wait", interrupted)
    slow = {**STUDY, "particles": {"n": [40], "repeats": 1}, "time": {"t_end": 1e5, "frames": 2}}
    start = time.perf_counter()
    with pytest.raises(StudyInterrupted) as e:  # no point finished: every point "not run"
        sweep(slow, ["beta=1,2"], workers=2, output=False, progress=False)
    assert time.perf_counter() - start < 60  # each task would run for hours
    assert list(e.value.dataset.status.values) == ["not run", "not run"]
