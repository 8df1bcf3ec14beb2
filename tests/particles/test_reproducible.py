"""Same inputs, same bits: in the process that compiles the kernels and in one that loads them from numba's cache.

Kernels compiled with fast-math flags may be reassociated differently by different
compilations; numba's parallel gufuncs were (see ``particles/_threads.py``), which
made the first run after an install differ in the last bits from every later run,
and a sweep on dask workers differ from the same sweep run serially.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = r"""
import sys
import numpy as np
from meanfield.models import SelfAttention
from meanfield import kernels
from particles.fused import rk4_small_systems

rng = np.random.default_rng(0)
def circle(shape):
    th = rng.uniform(0, 2 * np.pi, shape)
    return np.stack([np.cos(th), np.sin(th)], -1)
x40, x80 = circle((3, 40)), circle((3, 80))
y = rng.standard_normal((2, 30, 10))
y /= np.linalg.norm(y, axis=-1, keepdims=True)
m = SelfAttention(beta=1.5)
out = {
    "energy_small": kernels.energy(x40, np.full((3, 40), 1 / 40), 1.5),
    "energy_pairwise": kernels.energy(x80, np.full((3, 80), 1 / 80), 1.5),
    "rk4_small": rk4_small_systems(m, x40, 0.01, 20),
    "field_fused": kernels.field(m, x80, np.full((3, 80), 1 / 80), x80),
    "field_rows": kernels.field(SelfAttention(beta=2.0), y, np.full((2, 30), 1 / 30), y),  # d = 10: row kernel
}
np.savez(sys.argv[1], **out)
"""


@pytest.mark.slow  # 25 s: two fresh processes compile the kernels
def test_compiling_and_cached_processes_agree_bit_for_bit(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_NUM_THREADS": "2"}
    script = tmp_path / "kernels.py"
    script.write_text(SCRIPT)
    files = []
    for run in ("compiles", "loads"):
        f = tmp_path / f"{run}.npz"
        subprocess.run([sys.executable, str(script), str(f)], env=env, check=True, timeout=600)
        files.append(np.load(f))
    assert any((tmp_path / "cache").rglob("*.nbc")), "the first process did not write numba's cache"
    for key in files[0].files:
        np.testing.assert_array_equal(files[0][key], files[1][key], err_msg=key)


def test_thread_count_does_not_change_the_bits(monkeypatch):
    import numba

    from meanfield.models import SelfAttention
    from meanfield import kernels
    from particles.fused import rk4_small_systems

    rng = np.random.default_rng(1)
    th = rng.uniform(0, 2 * np.pi, (5, 50))
    x = np.stack([np.cos(th), np.sin(th)], -1)
    w = np.full((5, 50), 1 / 50)
    y = rng.standard_normal((5, 30, 10))
    y /= np.linalg.norm(y, axis=-1, keepdims=True)
    m = SelfAttention(beta=3.0)
    results = []
    for n in (1, 2, 3):  # 3: uneven chunks, whatever the cores
        monkeypatch.setattr(numba, "get_num_threads", lambda n=n: n)
        results.append((kernels.energy(x, w, 3.0), rk4_small_systems(m, x, 0.01, 10),
                        kernels.field(m, x, w, x), kernels.field(m, y, w[:, :30] * 50 / 30, y)))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)
