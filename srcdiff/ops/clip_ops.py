"""Gradient clipping under TensorFlow's names: ``sd.clip_by_norm``, ``sd.clip_by_global_norm``.

Each is TensorFlow's composition, so each gradient is TensorFlow's at the edges too: a
norm equal to ``clip_norm`` sends the gradient of ``maximum``/``minimum`` through the
norm (ties go to the first argument), and a zero tensor's norm is 0 with no nan."""
import collections.abc

import numpy as np

from ..rules import guarded
from ..tensor import convert_to_tensor
from ._op import axis_arg, op


@op(tensors=2)
def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t * clip_norm / max(norm(t), clip_norm)``, the norm over ``axes`` (all by default):
    ``sd.clip_by_norm(g, 1.0)``."""
    square_sum = np.sum(t * t, axis=axis_arg(axes), keepdims=True)
    positive = square_sum > 0
    safe = np.where(positive, square_sum, np.ones_like(square_sum))
    norm = np.where(positive, guarded.sqrt(safe), square_sum)
    return t * clip_norm / np.maximum(norm, clip_norm)


def global_norm(t_list, name=None):
    """``sqrt(sum of the squares of every element of every tensor)``; None entries are
    skipped: ``sd.linalg.global_norm([g1, g2])``."""
    squares = [np.sum(np.square(convert_to_tensor(t))) for t in t_list if t is not None]
    return guarded.sqrt(convert_to_tensor(sum(squares[1:], squares[0]) if squares else 0.0))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """``([t * clip_norm / max(global_norm, clip_norm) for t in t_list], global_norm)``,
    None entries kept: ``grads, norm = sd.clip_by_global_norm(grads, 5.0)``.  An infinite
    norm gives nan, as in TensorFlow."""
    if not isinstance(t_list, collections.abc.Sequence) or isinstance(t_list, str):
        raise TypeError(f"t_list should be a sequence of tensors, got {type(t_list)}")
    t_list = list(t_list)
    norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
    scale = clip_norm * np.minimum(1.0 / norm, 1.0 / np.asarray(clip_norm, norm.dtype))
    scale = scale + (norm - norm)  # nan where the norm is inf
    return [None if t is None else convert_to_tensor(t) * scale for t in t_list], norm
