import numpy as np
import pytest


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
