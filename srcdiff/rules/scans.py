"""``cumulative_logsumexp``: ``log(cumsum(exp(x)))`` along an axis, as one primitive.

Composed of exp, cumsum and log it would overflow (``exp(1000)``) or lose the small
terms (``log(exp(-1000))`` after a shift by the maximum is ``-inf``); NumPy's
``logaddexp.accumulate`` is exact.  Its rule is TensorFlow's: element j's adjoint is
``sum over i >= j of g_i exp(x_j - ans_i)``, summed in logs with the positive and the
negative parts of ``g`` apart, so that nothing overflows either."""
import numpy as np

from .registry import defvjp, primitive


@primitive
def cumulative_logsumexp(x, axis):
    return np.logaddexp.accumulate(x, axis=axis)


def from_the_end(v, axis):
    """``cumulative_logsumexp`` of ``v`` run from the last element back."""
    return np.flip(cumulative_logsumexp(np.flip(v, axis), axis), axis)


def cumulative_logsumexp_adjoint(g, ans, x, axis):
    """Each part's logs are ``-inf`` where it has no term, whatever ``ans`` is (``ans`` is
    ``-inf`` after ``-inf`` inputs: ``-inf - ans`` would be nan); a nan in ``g`` stays nan."""
    with np.errstate(invalid="ignore"):  # -inf - -inf: masked below
        logs = np.log(np.where(g == 0, 1, np.abs(g))) - ans  # log 0 is never taken
        positive = np.where(g > 0, logs, -np.inf)
        negative = np.where(np.logical_or(g < 0, np.isnan(g)), logs, -np.inf)
        return (np.exp(from_the_end(positive, axis) + x)
                - np.exp(from_the_end(negative, axis) + x))


defvjp(cumulative_logsumexp,
       lambda g, ans, x, axis: cumulative_logsumexp_adjoint(g, ans, x, axis))
