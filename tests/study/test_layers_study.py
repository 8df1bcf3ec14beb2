"""A study of a Transformer with per-layer weights read from an .npz ([model] weights; examples/layers.toml).

Asserted: the model the study builds holds, in each layer [k, k + 1), exactly that layer's arrays of the file
(attention Q, K, V, β and the feed-forward W, A, b), the right end of a layer belonging to the next; the results
record the schedule's boundaries t = 1, 2; the density keeps its mass 1 through the layers and equals a direct solve
of the same Transformer built by hand from the arrays; the density up to t = 1 does not depend on the later
layers' weights (the integrators stop at the boundary); the particles' W1 to the density falls with N at every
time; and every figure with a time axis marks t = 1, 2 with dashed vertical lines."""

import json

import numpy as np

import meanfield as mf
from meanfield.models import FeedForward, SelfAttention, Transformer, layers
from meanfield.study import build, read, run

L, D, M = 3, 3, 4

STUDY = """
name = "layers"
domain = "sphere"
seed = 3
[model]
weights = "weights.npz"
activation = "gelu"
[grid]
lmax = 16
[initial]
kind = "uniform-noise"
amplitude = 0.3
modes = 3
[time]
t_end = 3.0
frames = 7
max_n = 32
[particles]
n = [32, 128]
repeats = 2
[distances]
p = [1]
"""


def _weights(seed=0):
    """Per-layer weights: Q, K near the identity, V = 0.3 (I + 0.15 G) (slower than examples/layers.npz's, so that an
    lmax-32 grid resolves the density to t = 3 and the test stays cheap), β = 1, 2, 3, a small GELU block."""
    rng = np.random.default_rng(seed)
    eye = np.broadcast_to(np.eye(D), (L, D, D))
    return {"Q": eye + 0.15 * rng.standard_normal((L, D, D)), "K": eye + 0.15 * rng.standard_normal((L, D, D)),
            "V": 0.3 * (eye + 0.15 * rng.standard_normal((L, D, D))), "beta": np.array([1.0, 2.0, 3.0]),
            "W": 0.15 * rng.standard_normal((L, D, M)) / np.sqrt(M), "A": 0.3 * rng.standard_normal((L, M, D)),
            "b": 0.3 * rng.standard_normal((L, M)), "depths": np.ones(L)}


def _by_hand(w):
    """The Transformer of the arrays, built without the study: schedules of the layers' weights, summed blocks."""
    sched = {k: layers(list(w[k]), w["depths"]) for k in ("Q", "K", "V", "W", "A", "b")}
    attention = SelfAttention(layers(list(w["beta"]), w["depths"]), Q=sched["Q"], K=sched["K"], V=sched["V"])
    return Transformer(attention, FeedForward(sched["W"], sched["A"], sched["b"], "gelu", "sphere"), "sum")


def _dashed_verticals(ax):
    """The x of the dashed vertical lines (axvline) of an Axes."""
    return sorted(float(line.get_xdata()[0]) for line in ax.get_lines()
                  if line.get_linestyle() == "--" and np.ptp(np.asarray(line.get_xdata(), dtype=float)) == 0)


def test_layers_study_from_an_npz(tmp_path, monkeypatch, saved_figures):
    monkeypatch.chdir(tmp_path)
    w = _weights()
    np.savez(tmp_path / "weights.npz", **w)
    f = tmp_path / "layers.toml"
    f.write_text(STUDY)
    cfg = read(f)

    # the model holds each layer's arrays on [k, k + 1); t = k + 1 is already the next layer's
    model = build.build_model(cfg)
    assert model.time_dependent and model.splitting == "sum"
    np.testing.assert_array_equal(model.breakpoints(0.0, 3.0), [1.0, 2.0])
    for k, t in [(0, 0.0), (0, 0.5), (0, 0.999), (1, 1.0), (1, 1.5), (2, 2.0), (2, 2.999), (2, 3.0)]:
        at = model.at(t)
        for name in ("Q", "K", "V"):
            np.testing.assert_array_equal(getattr(at.attention, name), w[name][k], err_msg=f"{name} at t = {t}")
        assert at.attention.beta == w["beta"][k]
        (block,) = at.feedforward
        for name in ("W", "A", "b"):
            np.testing.assert_array_equal(getattr(block, name), w[name][k], err_msg=f"{name} at t = {t}")
        assert block.activation == "gelu"

    ds = run(f, progress=False, plot=True)
    assert ds.attrs["status"] == "success" and ds.attrs["t_reached"] == 3.0
    assert json.loads(ds.attrs["layer_boundaries"]) == [1.0, 2.0]
    assert ds.attrs["solver_strategy"] == "moments"  # general Q, K, V

    # the mass stays 1 through the layers: the stored mass and the density integrated on its grid
    np.testing.assert_allclose(ds.mass.values, 1.0, atol=1e-12)
    grid = mf.SphereGrid(ds.colatitude.size - 1)
    rho = ds.density.values
    np.testing.assert_allclose([grid.integrate(r) for r in rho], 1.0, atol=1e-12)
    assert np.min(rho) > 0
    # something happens in every layer: the density moves away from its start within each
    change = [np.max(np.abs(rho[i + 2] - rho[i])) / np.max(rho[i]) for i in (0, 2, 4)]
    assert min(change) > 0.05, change

    # the density is the solution of the same Transformer built by hand from the arrays
    mu0 = build.initial_density(cfg, build.build_grid(cfg))
    direct = mf.solve(_by_hand(w), mu0, (0.0, 3.0), t_eval=ds.time.values)
    assert direct.status.value == "success"
    final = direct.densities[-1]
    assert final.grid.lmax == grid.lmax
    np.testing.assert_allclose(final.values, rho[-1], atol=1e-12 * np.max(rho[-1]))

    # up to the first boundary the density sees only the first layer: other weights in layers 2 and 3 leave it
    # unchanged, and change it after t = 1
    other = {k: (v.copy() if k == "depths" else np.concatenate([v[:1], v[:0:-1]])) for k, v in w.items()}
    other["beta"] = np.array([1.0, 0.5, 4.0])
    later = mf.solve(_by_hand(other), mu0, (0.0, 1.5), t_eval=[0.0, 0.5, 1.0, 1.5])
    first = mf.solve(_by_hand(w), mu0, (0.0, 1.5), t_eval=[0.0, 0.5, 1.0, 1.5])
    for i in (1, 2):
        np.testing.assert_allclose(later.densities[i].values, first.densities[i].values, rtol=0, atol=1e-13)
    assert np.max(np.abs(later.densities[3].values - first.densities[3].values)) > 1e-3

    # the particles follow the density: at every time, W1 to it nearly halves from N = 32 to N = 128 (mean over
    # repeats; √(log N / N) gives 0.59 of it, measured 0.48-0.53)
    w1 = ds.wasserstein.sel(p=1.0).mean("repeat").values  # (n_particles, time)
    assert np.all(np.isfinite(w1)) and np.all(w1[1] < 0.7 * w1[0]), w1

    # every axis of time marks the layer boundaries
    with_time = {name: fig for name, fig in saved_figures.items() if name.endswith(("wasserstein.png", "clusters.png"))}
    assert set(with_time) == {"layers-wasserstein.png", "layers-clusters.png"}, sorted(saved_figures)
    for name, fig in with_time.items():
        (ax,) = [a for a in fig.axes if a.get_xlabel() == "t"]
        assert _dashed_verticals(ax) == [1.0, 2.0], name
        assert "layer boundaries" in [t.get_text() for t in ax.get_legend().get_texts()], name  # in the legend
        title = fig.get_suptitle().replace("\n", " ")  # the model's own words, once: no repr of "layers(...)"
        assert title.startswith("3-layer Transformer (SA with per-layer Q, K, V, β; a GELU feed-forward block) on S²") \
            and "layers(" not in title, title
    assert "layers-density.png" in saved_figures
