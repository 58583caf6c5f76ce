"""HDF5 attributes and datasets as typed Python values, both ways.

Reading: text comes back as `str` whether stored fixed-length, variable-length or as
bytes; numpy scalars as Python scalars; booleans as `bool`. Writing: parameters keep
their type (int64, float64, bool), so a float parameter 0.05 is never read back as an
int and an int parameter 5 never as 5.0.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import h5py
import numpy as np

from .._errors import InputFileError
from .._model import shown


def read_attributes(attrs: Any, what: str, hint: str = "") -> dict[str, Any]:
    """An HDF5 object's attributes as `{str: str | int | float | bool | ndarray}`.

    A name that is not text, or bytes that are not UTF-8, is an `InputFileError`
    ("`what`: ...`hint`").
    """
    out: dict[str, Any] = {}
    for key in attrs.keys():
        if not isinstance(key, str):
            raise InputFileError(
                f"{what} has an attribute whose name is not UTF-8 text ({shown(key)}){hint}"
            )
        value = attrs[key]
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if isinstance(value, (bytes, np.bytes_)):
            try:
                value = bytes(value).decode()
            except UnicodeDecodeError:
                raise InputFileError(f"{what}: attribute {key} is not UTF-8 text{hint}") from None
        elif isinstance(value, np.generic):
            value = value.item()
        out[key] = value
    return out


def attribute_value(value: Any) -> Any:
    """A Python value as the attribute that keeps its type (bool, int64, float64, text)."""
    if isinstance(value, (bool, np.bool_)):
        return np.bool_(value)
    if isinstance(value, (int, np.integer)):
        return np.int64(value)
    if isinstance(value, (float, np.floating)):
        return np.float64(value)
    return value


def write_attributes(node: Any, attrs: Mapping[str, Any]) -> None:
    for key, value in attrs.items():
        node.attrs[key] = attribute_value(value)


def write_array(f: h5py.File, where: str, a: np.ndarray) -> h5py.Dataset:
    """One dataset holding `a` exactly: its dtype, its shape (0-d as a scalar dataset),
    C order, no timestamps (files are byte-identical on every regeneration)."""
    a = np.asarray(a)
    return f.create_dataset(where, data=np.ascontiguousarray(a) if a.ndim else a, track_times=False)


def read_array(node: Any, where: str, hint: str = "") -> np.ndarray:
    """The values of a dataset as a numpy array (a scalar dataset as a 0-d array)."""
    if not isinstance(node, h5py.Dataset):
        raise InputFileError(f"{where} is a group, not a dataset{hint}")
    return np.asarray(node[()])


def array_sha256(a: np.ndarray) -> str:
    """Digest of an array's values: little-endian, its own dtype, C order."""
    a = np.asarray(a)
    # the array's own buffer where it is little-endian and C-ordered: no copy of it
    data = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).reshape(-1)
    return hashlib.sha256(data.view(np.uint8) if data.size else b"").hexdigest()
