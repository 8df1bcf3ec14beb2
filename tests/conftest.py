"""Shared fixtures. Under pytest-xdist (``-n 2`` in pyproject's addopts) each worker gets its share of the
cores, numba's threads and the BLAS's set to cores // workers: two workers on two cores must not run four threads
(oversubscribed, a parallel kernel's barrier waits for a descheduled thread). A test that needs two threads asks
for them (``numba.set_num_threads``, within ``NUMBA_NUM_THREADS``, which stays the machine's)."""

import os

import numpy as np
import pytest

_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def pytest_configure(config):
    if _WORKERS > 1:
        import numba
        import threadpoolctl

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        share = max(1, cores // _WORKERS)
        numba.set_num_threads(min(share, numba.config.NUMBA_NUM_THREADS))
        config._blas_limit = threadpoolctl.threadpool_limits(share)  # for the worker's whole session


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


@pytest.fixture
def saved_figures(monkeypatch):
    """The matplotlib Figures saved to files while the test runs, by file name (their contents can be asserted
    where a file's size says nothing). Saves to buffers (animation frames) are not recorded."""
    from pathlib import Path

    import matplotlib.figure

    saved = {}
    save = matplotlib.figure.Figure.savefig

    def recording(fig, fname, *args, **kwargs):
        if isinstance(fname, (str, Path)):
            saved[Path(fname).name] = fig
        return save(fig, fname, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", recording)
    return saved


@pytest.fixture
def tqdm_bars(monkeypatch):
    """(shown, delay) of every tqdm bar made while the test runs (the library's bars come from tqdm.auto.tqdm,
    looked up when each bar starts): shown is ``not disable``."""
    import tqdm.auto

    bars = []

    class Recording(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            bars.append((not kwargs.get("disable", False), kwargs.get("delay", 0.0)))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(tqdm.auto, "tqdm", Recording)
    return bars
