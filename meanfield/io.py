"""Results files: an :class:`xarray.Dataset` as NetCDF-4 (HDF5, via h5netcdf) and back (xarray imported on use).

Particle trajectories (variables ``positions_<N>``) are stored in the same
file, compressed (zlib) and chunked by repeat, so large runs stay small on disk
and load lazily with ``meanfield.load(path, lazy=True)``. A Zarr store is
written instead when the path ends in ``.zarr`` (needs the ``zarr`` package).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["save", "load"]


def _encoding(ds) -> dict:
    enc = {}
    for name, var in ds.data_vars.items():
        if name.startswith("positions_"):
            chunks = tuple(1 if dim == "repeat" else size for dim, size in var.sizes.items())
            enc[name] = {"zlib": True, "complevel": 4, "chunksizes": chunks}
    return enc


def save(ds, path) -> Path:
    """Write a results Dataset to ``path`` (``.nc``: NetCDF-4 via h5netcdf; ``.zarr``: a Zarr store)."""
    path = Path(path)
    if path.suffix == ".zarr":
        ds.to_zarr(path, mode="w", consolidated=False)
    else:
        ds.to_netcdf(path, engine="h5netcdf", encoding=_encoding(ds), invalid_netcdf=False)
    return path


def load(path, lazy: bool = False):
    """Read a results file written by ``meanfield run`` / ``meanfield sweep`` / :func:`save`.

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
