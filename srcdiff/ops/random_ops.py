"""``sd.random``: seeded NumPy generators, TensorFlow's signatures."""
import numpy as np

from .. import dtypes
from ..tensor import Tensor
from .array_ops import _shape

_generator = np.random.default_rng()


def set_seed(seed):
    """Make the following random ops repeatable."""
    global _generator
    _generator = np.random.default_rng(seed)


def _rng(seed):
    return _generator if seed is None else np.random.default_rng(seed)


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    return Tensor(_rng(seed).normal(mean, stddev, _shape(shape)).astype(dtype))


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    dtype = np.dtype(dtype)
    if maxval is None:
        if dtype.kind in "iu":
            raise ValueError(f"Must specify maxval for integer dtype {dtype.name}")
        maxval = 1
    if dtype.kind in "iu":
        return Tensor(_rng(seed).integers(minval, maxval, _shape(shape)).astype(dtype))
    return Tensor(_rng(seed).uniform(minval, maxval, _shape(shape)).astype(dtype))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    rng = _rng(seed)
    values = rng.normal(0.0, 1.0, _shape(shape))
    while np.any(bad := np.abs(values) > 2):
        values[bad] = rng.normal(0.0, 1.0, int(bad.sum()))
    return Tensor((mean + stddev * values).astype(dtype))
