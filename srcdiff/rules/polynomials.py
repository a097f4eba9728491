"""Rules of polynomials (coefficients highest power first, as in ``np.polyval``) and of
convolutions.

``np.polyval``, ``np.vander``, ``np.convolve`` and ``np.correlate`` are primitives; the
arithmetic of coefficients (``np.polyadd``, ``np.polyder``, ``np.polyfit``...) is written
with primitives, as NumPy writes it (expansions), so each keeps NumPy's values."""
import warnings

import numpy as np

from .registry import defexpansion, defform, defvjp, primitive

RANK_WARNING = getattr(np, "exceptions", np).RankWarning  # (NumPy 1.24: np.RankWarning)


def polyval_adjoint(k, g, p, x):
    """The adjoint of ``(p, x)[k]`` in ``np.polyval(p, x) = sum_j p_j x^(n-1-j)``: ``g``
    times the powers of x, summed over the values (of p); ``g`` times the value of the
    derivative (of x)."""
    if np.ndim(p) != 1:
        raise NotImplementedError("the gradient of np.polyval of coefficients that are not "
                                  "a vector")
    if k == 1:
        return g * np.polyval(np.polyder(p), x)
    return np.ravel(g) @ np.vander(np.ravel(x), np.size(p))


def vander_adjoint(g, ans, increasing):
    """The adjoint of ``x`` in ``np.vander(x, N, increasing)``, whose columns are powers
    of x: each column's adjoint times the power's slope, ``j x^(j-1)``, the column before
    it times j."""
    if not increasing:  # the powers from the first column up
        g, ans = np.flip(g, -1), np.flip(ans, -1)
    return np.sum(g[:, 1:] * ans[:, :-1] * np.arange(1, np.shape(ans)[-1]), axis=-1)


defvjp(np.polyval,
       lambda g, ans, p, x: polyval_adjoint(0, g, p, x),
       lambda g, ans, p, x: polyval_adjoint(1, g, p, x))
defvjp(np.vander, lambda g, ans, x, N=None, increasing=False: vander_adjoint(g, ans, increasing))


def convolution_start(m, n, mode, correlation):
    """Where ``np.convolve(a, v, mode)`` (``np.correlate``), ``len(a) = m``, ``len(v) = n``,
    begins in the full result: 'same' is centred on the longer input, but NumPy
    correlates a shorter ``a`` as ``v`` with it, reversed, which moves the centre."""
    mode = ("valid", "same", "full")[mode] if isinstance(mode, int) else mode  # NumPy's codes
    if mode == "full":
        return 0
    if mode == "valid":
        return min(m, n) - 1
    return m // 2 if correlation and m < n else (min(m, n) - 1) // 2


def convolution_adjoint(k, g, a, v, mode, correlation=False):
    """The adjoint of ``(a, v)[k]`` in ``np.convolve(a, v, mode)``, a slice of the full
    convolution: ``g`` laid into its zeros, correlated with the other input (a 'valid'
    convolution with it reversed)."""
    m, n = np.size(a), np.size(v)
    start = convolution_start(m, n, mode, correlation)
    g = np.pad(g, (start, m + n - 1 - start - np.size(g)))
    return np.reshape(np.convolve(g, np.flip(np.ravel((v, a)[k])), "valid"),
                      np.shape((a, v)[k]))


def correlation_adjoint(k, g, a, v, mode):
    """The adjoint of ``(a, v)[k]`` in ``np.correlate(a, v, mode)``, the convolution of
    ``a`` with ``w = conj(flip(v))``: conjugate-linear in v."""
    w = np.conj(np.flip(v))
    d = convolution_adjoint(k, g, a, w, mode, correlation=True)
    return d if k == 0 else np.conj(np.flip(d))


defvjp(np.convolve,
       lambda g, ans, a, v, mode="full": convolution_adjoint(0, g, a, v, mode),
       lambda g, ans, a, v, mode="full": convolution_adjoint(1, g, a, v, mode))
defvjp(np.correlate,
       lambda g, ans, a, v, mode="valid": correlation_adjoint(0, g, a, v, mode),
       lambda g, ans, a, v, mode="valid": correlation_adjoint(1, g, a, v, mode))


@primitive
def leading_nonzero(a):
    """The coefficients ``a`` from the first that is not 0, as ``np.poly1d(a)`` keeps them
    ([0] if all are 0)."""
    return np.array(np.poly1d(a).coeffs)


def leading_nonzero_adjoint(g, ans, a):
    """``g``, unless a leading 0 was dropped: the result's length jumps as it moves."""
    if np.size(ans) == np.size(a):
        return np.reshape(g, np.shape(a))
    if np.any(g):
        raise NotImplementedError("the gradient of np.polymul (np.poly1d) of coefficients "
                                  "with a leading 0, which it drops: the length of the "
                                  "result changes as that 0 moves")
    return np.zeros(np.shape(a))


defvjp(leading_nonzero, lambda g, ans, a: leading_nonzero_adjoint(g, ans, a))


def aligned(a1, a2):
    """The coefficients ``a1`` and ``a2`` (at least 1-d) given leading zeros to the same
    length, as np.polyadd and np.polysub align them."""
    a1 = np.atleast_1d(a1)
    a2 = np.atleast_1d(a2)
    n = max(len(a1), len(a2))
    return np.pad(a1, (n - len(a1), 0)), np.pad(a2, (n - len(a2), 0))


def polyadd(a1, a2):
    """``np.polyadd``."""
    a1, a2 = aligned(a1, a2)
    return a1 + a2


def polysub(a1, a2):
    """``np.polysub``."""
    a1, a2 = aligned(a1, a2)
    return a1 - a2


def polymul(a1, a2):
    """``np.polymul``: the convolution of the coefficients, without leading zeros."""
    return np.convolve(leading_nonzero(a1), leading_nonzero(a2))


def polyder(p, m=1):
    """``np.polyder``: ``m`` times, each coefficient times its power, the constant dropped."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    for _ in range(m):
        p = p[:-1] * np.arange(len(p) - 1, 0, -1)
    return p


def polyint(p, m=1, k=None):
    """``np.polyint``: ``m`` times, each coefficient over its power plus one, then the
    constant of integration (of ``k``, one for all or one each) appended."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    if k is None:
        k = np.zeros(m)
    k = np.atleast_1d(k)
    if len(k) == 1 and m > 1:
        k = k[0] * np.ones(m)
    if len(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    for j in range(m):
        p = np.concatenate([p / np.arange(len(p), 0, -1), k[j:j + 1]])
    return p


def least_squares(x, y, deg, rcond, w, full):
    """``np.polyfit``'s least squares as NumPy computes them, over the columns of
    ``np.vander(x)`` weighted by ``w``, each scaled to norm 1: the coefficients, the
    squared residuals, the rank, the singular values, rcond, the columns, their scales."""
    order = int(deg) + 1
    x = np.add(x, 0.0)
    y = np.add(y, 0.0)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if np.ndim(x) != 1 or np.size(x) == 0 or np.ndim(y) < 1 or np.ndim(y) > 2:
        raise TypeError("expected a non-empty vector x, and y of 1 or 2 dimensions")
    if len(x) != len(y):
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(x) * np.finfo(np.result_type(x)).eps
    lhs = np.vander(x, order)
    rhs = y
    if w is not None:
        w = np.add(w, 0.0)
        lhs = lhs * w[:, np.newaxis]
        if np.ndim(rhs) == 2:
            rhs = rhs * w[:, np.newaxis]
        else:
            rhs = rhs * w
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = np.linalg.lstsq(lhs, rhs, rcond)
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", RANK_WARNING, stacklevel=3)
    return np.transpose(np.transpose(c) / scale), resids, rank, s, rcond, lhs, scale


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``np.polyfit``: the coefficients (``full=True``, ``cov=True`` by keyword: its forms)."""
    if full or cov:
        raise NotImplementedError("the gradient of np.polyfit's full or cov given by position "
                                  "or by a name: pass full=True or cov=True by keyword")
    return least_squares(x, y, deg, rcond, w, False)[0]


def polyfit_full(x, y, deg, rcond=None, full=True, w=None, cov=False):
    """``np.polyfit(..., full=True)``: the coefficients, the squared residuals, the rank,
    the singular values, rcond."""
    return least_squares(x, y, deg, rcond, w, True)[:5]


def polyfit_covariance(x, y, deg, rcond=None, full=False, w=None, cov=True):
    """``np.polyfit(..., cov=True)``: the coefficients and their covariance, scaled by the
    residuals' variance but for ``cov="unscaled"``."""
    c, resids, rank, s, rcond, lhs, scale = least_squares(x, y, deg, rcond, w, False)
    base = np.linalg.inv(np.dot(np.transpose(lhs), lhs)) / np.outer(scale, scale)
    if np.ndim(y) == 2:
        base = base[:, :, np.newaxis]
    if cov != "unscaled":
        if len(x) <= int(deg) + 1:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        base = base * (resids / (len(x) - int(deg) - 1))
    return c, base


for _f, _expansion in ((np.polyadd, polyadd), (np.polysub, polysub), (np.polymul, polymul),
                       (np.polyder, polyder), (np.polyint, polyint), (np.polyfit, polyfit)):
    defexpansion(_f, _expansion)
defform(np.polyfit, "full", True, polyfit_full)  # NumPy's precedence: full, then cov
defform(np.polyfit, "cov", True, polyfit_covariance)
defform(np.polyfit, "cov", "unscaled", polyfit_covariance)
