"""Results files: an :class:`xarray.Dataset` as NetCDF-4 (HDF5, via h5netcdf) and back (xarray imported on use).

Particle trajectories (variables ``positions_<N>``) are stored in the same
file, compressed (zlib) and chunked by repeat, so large runs stay small on disk
and load lazily with ``meanfield.load(path, lazy=True)``. A Zarr store is
written instead when the path ends in ``.zarr`` (needs the ``zarr`` package).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["save", "load", "check_writable", "status_of", "check_output", "beside", "prepare"]

#: the statuses of a results file that may be replaced without being asked (a run that did not finish)
REPLACEABLE = ("interrupted",)


def check_writable(path) -> Path:
    """Refuse, before any work, a results path whose directory does not exist or cannot be written.

    Raises
    ------
    ValueError
        Naming the path and what is wrong with it.
    """
    path = Path(path)
    if path.suffix not in (".nc", ".zarr"):
        raise ValueError(f"results path {str(path)!r}: must end in .nc (NetCDF) or .zarr (Zarr store).")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"results path {str(path)!r}: the directory {str(parent)!r} does not exist.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"results path {str(path)!r}: the directory {str(parent)!r} is not writable.")
    if path.exists() and path.suffix == ".nc" and not os.access(path, os.W_OK):
        raise ValueError(f"results path {str(path)!r}: the file exists and is not writable.")
    return path


def status_of(path) -> str | None:
    """The ``status`` attribute of the results file at ``path``: None where nothing is there, "unreadable"
    where something is there that is not a results file (it is protected like a complete result)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        if path.suffix == ".zarr":
            import zarr

            return str(zarr.open_group(str(path), mode="r").attrs.get("status", "unreadable"))
        import h5py

        with h5py.File(path, "r") as f:
            status = f.attrs.get("status", "unreadable")
        return status.decode() if isinstance(status, bytes) else str(status)
    except Exception:  # noqa: BLE001 - anything that is not a readable results file is protected
        return "unreadable"


def check_output(path, overwrite: bool = False) -> Path:
    """:func:`check_writable`, and refuse to replace a complete result there unless ``overwrite``.

    A file whose ``status`` is "interrupted" may be replaced; "success", "resolution lost" (a run that
    finished, stopped by the grid) and anything unreadable are kept unless ``overwrite`` is true.

    Raises
    ------
    FileExistsError
        A complete result is at ``path`` (the message names it and the way out).
    ValueError
        From :func:`check_writable`.
    """
    path = check_writable(path)
    status = status_of(path)
    if status is not None and status not in REPLACEABLE and not overwrite:
        what = "a file that is not a results file" if status == "unreadable" else f"a complete result (status {status!r})"
        raise FileExistsError(f"results path {str(path)!r} holds {what}; pass --overwrite (overwrite=True) to "
                              "replace it, or choose another output path.")
    return path


def beside(path, ds) -> Path:
    """Where to write ``ds``: ``path``, unless ``ds`` is an interrupted result and ``path`` holds a complete
    one, which an interrupted run never replaces: then ``<stem>.interrupted<suffix>`` beside it."""
    path = Path(path)
    status = status_of(path)
    if ds.attrs.get("status") == "interrupted" and status is not None and status not in REPLACEABLE:
        return path.with_name(f"{path.stem}.interrupted{path.suffix}")
    return path


def _encoding(ds) -> dict:
    enc = {}
    for name, var in ds.data_vars.items():
        if name.startswith("positions_"):
            chunks = tuple(1 if dim == "repeat" else size for dim, size in var.sizes.items())
            enc[name] = {"zlib": True, "complevel": 4, "chunksizes": chunks}
    return enc


def save(ds, path) -> Path:
    """Write a results Dataset to ``path`` (``.nc``: NetCDF-4 via h5netcdf; ``.zarr``: a Zarr store).

    The file is written beside the target under a temporary name and then renamed onto it
    (``os.replace``, atomic on one file system), so an interrupted or failed write never leaves a
    truncated file and never destroys the file that was there (a Zarr store, a directory, replaces
    the old one only once the new one is complete).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        if path.suffix == ".zarr":
            ds.to_zarr(tmp, mode="w", consolidated=False)
            if path.exists():
                shutil.rmtree(path)
            os.replace(tmp, path)
        else:
            ds.to_netcdf(tmp, engine="h5netcdf", encoding=_encoding(ds), invalid_netcdf=False)
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
    return path


def prepare(path) -> None:
    """Import now what writing a results file at ``path`` imports on its first use — xarray's array backends
    (dask.array where installed), h5netcdf or zarr — by writing a one-number Dataset to a temporary directory:
    0.5–0.8 s on two cores (twice that under load) that the write after a Ctrl-C would otherwise wait for. The run
    writes its results anyway, so this moves the imports, adding nothing. Never fails: a write that cannot
    happen fails later, where it is reported."""
    import tempfile

    import numpy as np
    import xarray as xr

    suffix = Path(path).suffix if Path(path).suffix in (".nc", ".zarr") else ".nc"
    try:
        with tempfile.TemporaryDirectory(prefix="meanfield-prepare-") as folder:
            save(xr.Dataset({"v": ("x", np.zeros(1))}, coords={"x": [0.0]}), Path(folder) / f"prepare{suffix}")
    except Exception:  # noqa: BLE001 - a warm-up only
        pass


def load(path, lazy: bool = False):
    """Read a results file written by ``meanfield run`` / ``meanfield sweep`` / :func:`meanfield.core.io.save`.

    Parameters
    ----------
    path : path
        A ``.nc`` file or a ``.zarr`` store.
    lazy : bool
        Keep the data on disk until used (dask-free lazy arrays); default loads
        everything into memory and closes the file.
    """
    import xarray as xr

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no results file at {str(path)!r}")
    if path.suffix == ".zarr":
        ds = xr.open_zarr(path, consolidated=False)
        return ds if lazy else ds.load()
    if lazy:
        return xr.open_dataset(path, engine="h5netcdf")
    return xr.load_dataset(path, engine="h5netcdf")
