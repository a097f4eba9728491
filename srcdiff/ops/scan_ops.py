"""Running sums, products and log-sum-exps along an axis (``sd.math.cumsum``, ``cumprod``,
``cumulative_logsumexp``), with TensorFlow's ``exclusive`` and ``reverse``.

Each is a scan (of the input reversed, for ``reverse``) whose output is shifted by one
(the scan's identity first) for ``exclusive``, so its gradient is that of ``np.cumsum``,
``np.cumprod`` or rules/scans.py's primitive.  cumprod's is exact where the input has
zeros: TensorFlow's divides by the input there and gives 0 (``tf.math.cumprod`` of
``[2, 0, 3]`` has gradient ``[1, 0, 0]`` from TensorFlow, ``[1, 8, 0]`` from srcdiff),
which would be silently wrong."""
import numpy as np

from ..rules.scans import cumulative_logsumexp as _logsumexp_scan
from ._op import op


def _dtype_of(out, x):
    """TensorFlow keeps an integer tensor's dtype through scans (NumPy widens)."""
    if np.result_type(x).kind in "iu":
        return out.astype(np.result_type(x))
    return out


def _shifted(x, axis, identity):
    """``x`` moved one step along ``axis``: ``identity`` first, the last element dropped."""
    widths = [(1, 0) if a == axis else (0, 0) for a in range(np.ndim(x))]
    padded = np.pad(x, widths, constant_values=identity)
    return np.take(padded, np.arange(np.shape(x)[axis]), axis=axis)


def _scan(scan, x, axis, exclusive, reverse, identity):
    axis = int(axis) % np.ndim(x)  # TensorFlow counts negative axes from the end
    if reverse:
        x = np.flip(x, axis)
    out = scan(x, axis=axis)
    if exclusive:  # the scan's output shifted, not its input: no -inf enters logsumexp's
        out = _shifted(out, axis, identity)
    if reverse:
        out = np.flip(out, axis)
    return _dtype_of(out, x)


@op()
def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running sum along ``axis``: ``sd.cumsum(sd.constant([1.0, 2.0, 3.0]))`` holds
    ``[1, 3, 6]``; ``exclusive=True`` starts at 0 (``[0, 1, 3]``), ``reverse=True`` runs
    from the end (``[6, 5, 3]``)."""
    return _scan(np.cumsum, x, axis, exclusive, reverse, 0)


@op()
def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running product along ``axis``: ``sd.math.cumprod(x)``; ``exclusive=True``
    starts at 1, ``reverse=True`` runs from the end."""
    return _scan(np.cumprod, x, axis, exclusive, reverse, 1)


@op()
def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """``log(cumsum(exp(x)))`` along ``axis``, without overflow (``exclusive=True`` starts
    at ``-inf``): ``sd.math.cumulative_logsumexp(x)``."""
    return _scan(_logsumexp_scan, x, axis, exclusive, reverse, -np.inf)


__all__ = ["cumsum", "cumprod", "cumulative_logsumexp"]
