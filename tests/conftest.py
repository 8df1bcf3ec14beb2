"""Shared fixtures. Under pytest-xdist (``-n 2`` in pyproject's addopts) each worker gets its share of the
cores, numba's threads and the BLAS's set to cores // workers: two workers on two cores must not run four threads
(oversubscribed, a parallel kernel's barrier waits for a descheduled thread). A test that needs two threads asks
for them (``numba.set_num_threads``, within ``NUMBA_NUM_THREADS``, which stays the machine's).

Memory (issue 50, item 4): every test's peak resident memory is measured (:func:`_peak_memory`) and a test whose
process holds more than :data:`MEMORY_BUDGET` at any moment of it fails; the terminal summary lists the largest
ten. A study checked inside the tests gets the budget :data:`STUDY_MEMORY` (``MEANFIELD_MEMORY``, read by
:func:`meanfield.study.preflight.memory_budget`): a generated study that would need more is refused by its preflight
instead of allocating it. (One CI run held 21 GB in its test process: the mutated studies of
tests/study/test_preflight.py drew [particles] n and repeats up to 10⁴, which a preflight against the memory then
free accepted — it counted only the trajectories, a few of the ~20 copies of the state the sampling and the first
steps hold — and ``meanfield check`` then drew and stepped them.)"""

import os

import numpy as np
import pytest

_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))

#: the most resident memory a test's process may hold at any moment of the test (bytes; 2 GB; MEANFIELD_TEST_MEMORY
#: changes it, e.g. to see the fixture fail)
MEMORY_BUDGET = float(os.environ.get("MEANFIELD_TEST_MEMORY", 2e9))
#: the memory budget of the studies the tests check and run (three quarters of the test's: the interpreter and its
#: libraries hold ~0.3-0.5 GB; the preflight's peak is an upper bound, 2-8× the measured growth)
STUDY_MEMORY = "1.5GB"

_STATUS, _CLEAR_REFS = "/proc/self/status", "/proc/self/clear_refs"


def _status_bytes(field):
    """A ``kB`` field of /proc/self/status in bytes (None where it cannot be read)."""
    try:
        with open(_STATUS) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Set the kernel's high-water mark of resident memory (VmHWM) to the current resident size: writing 5 to
    /proc/self/clear_refs (Linux >= 4.0). False where it cannot be done."""
    try:
        with open(_CLEAR_REFS, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _lifetime_peak() -> int:
    """The process's peak resident memory in bytes (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


_PEAK_RESETS = _reset_peak()  # whether the per-test peak is exact here (else ru_maxrss: see _peak_memory)
_PEAKS = []  # (peak bytes, growth bytes, test id), gathered from every report (the workers' too, under xdist)


@pytest.fixture(autouse=True)
def _peak_memory(request):
    """Each test's peak resident memory, from the kernel's own accounting: the high-water mark VmHWM is reset
    before the test (/proc/self/clear_refs) and read after it, so every allocation counts — numpy's, numba's,
    BLAS's, the C and Fortran libraries' — at no cost but two small reads of /proc. (tracemalloc sees only the
    allocations reported to Python — not numba's runtime, not BLAS or ducc0 — and slows every allocation; a sampling
    thread misses short peaks and costs a core; ru_maxrss is the process's lifetime peak, so it shows only the
    tests that beat every earlier one: the fallback where clear_refs cannot be written.) Subprocesses are not
    counted. Fails the test (an error at its teardown) when the peak exceeds :data:`MEMORY_BUDGET`."""
    if _PEAK_RESETS:
        _reset_peak()
    start = _status_bytes("VmRSS")
    before = None if _PEAK_RESETS else _lifetime_peak()
    yield
    peak = _status_bytes("VmHWM") if _PEAK_RESETS else None
    if peak is None:  # the lifetime peak: this test's only where it raised it (else it says nothing of this test)
        peak = _lifetime_peak()
        if before is not None and peak <= before:
            return
    request.node.user_properties.append(("peak_memory", (peak, peak - (start or 0))))
    if peak > MEMORY_BUDGET:
        pytest.fail(f"the test's process held {peak / 1e9:.2f} GB of resident memory at its peak (it started at "
                    f"{(start or 0) / 1e9:.2f} GB), above the {MEMORY_BUDGET / 1e9:g} GB budget of a test",
                    pytrace=False)


def pytest_runtest_logreport(report):
    """Gather the peaks (on the controller under xdist: the reports carry the user properties)."""
    if report.when == "teardown":
        for name, value in report.user_properties:
            if name == "peak_memory":
                _PEAKS.append((value[0], value[1], report.nodeid))


def pytest_terminal_summary(terminalreporter):
    """The ten tests whose process held the most resident memory, with the growth during each."""
    if not _PEAKS or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    terminalreporter.section("peak resident memory per test (largest ten)")
    how = "VmHWM reset per test" if _PEAK_RESETS else "ru_maxrss: a lower bound except for new maxima"
    terminalreporter.write_line(f"budget {MEMORY_BUDGET / 1e9:g} GB per test; {how}")
    for peak, growth, nodeid in sorted(_PEAKS, reverse=True)[:10]:
        terminalreporter.write_line(f"{peak / 1e9:7.3f} GB  (+{growth / 1e9:.3f} GB in the test)  {nodeid}")


def pytest_configure(config):
    os.environ.setdefault("MEANFIELD_MEMORY", STUDY_MEMORY)  # the workers inherit it (and set it again here)
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
