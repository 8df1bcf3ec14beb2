"""The [model] weights file: per-layer arrays (Q, K, V, beta, the feed-forward block's W, A, b, depths), read and
checked against the study's dimension (:func:`layer_weights`)."""

from __future__ import annotations

from .schema import StudyError

__all__ = ["WEIGHT_ARRAYS", "layer_weights"]

#: The arrays of a [model] weights file, and their shapes without the layer axis (d the dimension, m free).
WEIGHT_ARRAYS = {"Q": ("d", "d"), "K": ("d", "d"), "V": ("d", "d"), "beta": (), "W": ("d", "m"), "A": ("m", "d"),
                 "b": ("m",), "depths": ()}


def layer_weights(path, d: int) -> dict:
    """The arrays of a [model] weights file, checked: each with or without a leading layer axis (one length L for
    all), d×d matrices, W/A/b chaining through one hidden width m, depths positive; returns name → array and
    ``"layers"`` → L (1 where nothing is per layer)."""
    import numpy as np

    where = "[model] weights"
    try:
        with np.load(path) as data:
            arrays = {k: np.array(data[k], dtype=float) for k in data}
    except Exception as exc:  # noqa: BLE001 -- any unreadable file: report it and why, in one line
        raise StudyError(f"{where}: cannot read {str(path)!r}: {exc}") from None
    unknown = set(arrays) - set(WEIGHT_ARRAYS)
    if unknown:
        raise StudyError(f"{where}: unknown arrays {', '.join(sorted(unknown))} in {str(path)!r} "
                         f"(it may hold {', '.join(WEIGHT_ARRAYS)})")
    if not arrays.keys() - {"depths"}:
        raise StudyError(f"{where}: {str(path)!r} holds no weights")
    lengths, m = set(), None
    for name, a in arrays.items():
        if not np.all(np.isfinite(a)):
            raise StudyError(f"{where}: array {name} has non-finite entries")
        rank = len(WEIGHT_ARRAYS[name])
        if a.ndim == rank + 1 and name != "depths" or name == "depths" and a.ndim == 1:
            lengths.add(a.shape[0])
            shape = a.shape[1:]
        elif a.ndim == rank:
            shape = a.shape
        else:
            raise StudyError(f"{where}: array {name} must have {rank} or {rank + 1} axes (with the layer axis), got "
                             f"shape {a.shape}")
        for size, symbol in zip(shape, WEIGHT_ARRAYS[name]):
            if symbol == "d" and size != d:
                raise StudyError(f"{where}: array {name} of shape {a.shape} does not act on dimension {d}")
            if symbol == "m":
                if m not in (None, size):
                    raise StudyError(f"{where}: W, A and b must share one hidden width m, got {m} and {size} "
                                     f"(array {name}, shape {a.shape})")
                m = size
    if len(lengths) > 1:
        raise StudyError(f"{where}: the per-layer arrays have different numbers of layers: {sorted(lengths)}")
    if ("W" in arrays) != ("A" in arrays) or "b" in arrays and "W" not in arrays:
        raise StudyError(f"{where}: a feed-forward block needs both W and A (b optional)")
    if "depths" in arrays and np.any(arrays["depths"] <= 0):
        raise StudyError(f"{where}: depths must be positive, got {arrays['depths']}")
    arrays["layers"] = lengths.pop() if lengths else 1
    return arrays
