"""Rules of the discrete Fourier transforms, ``np.fft``.

Each transform is linear, and the matrix of the DFT is symmetric: the adjoint of a
transform along an axis is the same transform of the adjoint (complex values in the
rules' convention, which the tape conjugates), the input's cutting or padding to ``n``
undone.  The transforms along one axis are primitives; those along several, the
Hermitian ones and the shifts are written with them as NumPy writes them (expansions)."""
import numpy as np

from .helpers import real_part
from .registry import defexpansion, defvjp

# The scale of an inverse transform under ``norm`` is that of a forward one under this.
INVERSE = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def fitted(x, n, axis):
    """``x`` cut, or padded with zeros at the end, to length ``n`` along ``axis``: what a
    transform of length ``n`` does to its input first."""
    have = np.shape(x)[axis]
    if have > n:
        return x[(slice(None),) * (axis % np.ndim(x)) + (slice(0, n),)]
    if have < n:
        widths = [(0, 0)] * np.ndim(x)
        widths[axis] = (0, n - have)
        return np.pad(x, widths)
    return x


def same_transform(transform, g, a, axis, norm):
    """The adjoint of ``a`` in ``transform(a, n, axis, norm)`` (``np.fft.fft`` or ``ifft``,
    symmetric): the same transform of ``g``, fitted back to a's length."""
    return fitted(transform(g, None, axis, norm), np.shape(a)[axis], axis)


def rfft_adjoint(g, a, n, axis, norm):
    """The adjoint of ``a`` (real) in ``np.fft.rfft(a, n, axis, norm)``, the first
    ``n // 2 + 1`` terms of ``fft``: the ``fft`` of ``g`` padded to n, its real part."""
    n = np.shape(a)[axis] if n is None else n
    return np.real(same_transform(np.fft.fft, fitted(g, n, axis), a, axis, norm))


def irfft_adjoint(g, a, n, axis, norm):
    """The adjoint of ``a`` in ``np.fft.irfft(a, n, axis, norm)``.  It is real-linear: it
    reads the real part of term 0 (and of term n / 2, for an even n) once, and every other
    term twice, as itself and as its conjugate (a term past n / 2): the conjugate of
    ``rfft`` of ``g`` at the inverse's scale, those other terms doubled."""
    m = np.shape(a)[axis]
    n = 2 * (m - 1) if n is None else n
    k = np.arange(n // 2 + 1)
    twice = np.where(np.logical_or(k == 0, 2 * k == n), 1.0, 2.0)
    twice = np.reshape(twice, (-1,) + (1,) * (np.ndim(a) - 1 - axis % np.ndim(a)))
    d = np.conj(np.fft.rfft(real_part(g), n, axis, INVERSE[norm])) * twice
    return fitted(d if np.iscomplexobj(a) else np.real(d), m, axis)


defvjp(np.fft.fft,
       lambda g, ans, a, n=None, axis=-1, norm=None, out=None:
       same_transform(np.fft.fft, g, a, axis, norm))
defvjp(np.fft.ifft,
       lambda g, ans, a, n=None, axis=-1, norm=None, out=None:
       same_transform(np.fft.ifft, g, a, axis, norm))
defvjp(np.fft.rfft,
       lambda g, ans, a, n=None, axis=-1, norm=None, out=None: rfft_adjoint(g, a, n, axis, norm))
defvjp(np.fft.irfft,
       lambda g, ans, a, n=None, axis=-1, norm=None, out=None: irfft_adjoint(g, a, n, axis, norm))


def transform_axes(shape, s, axes, inverse_real=False):
    """The lengths and the axes of a transform over several axes of an array of ``shape``,
    as NumPy reads them: ``axes`` default to the last len(s), or all; ``s`` to the lengths
    along them (-1: that length), but a real inverse's last to ``2 (m - 1)``."""
    if axes is None:
        axes = list(range(-(len(shape) if s is None else len(s)), 0))
    if s is None:
        s = [shape[a] for a in axes]
        if inverse_real:
            s = s[:-1] + [2 * (s[-1] - 1)]
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return [shape[a] if n == -1 else n for n, a in zip(s, axes)], list(axes)


def along_axes(a, s, axes, norm, inverse):
    """``np.fft.fft`` (``ifft`` if ``inverse``) along each of the axes, the last first."""
    s, axes = transform_axes(np.shape(a), s, axes)
    for i in range(len(axes) - 1, -1, -1):
        if inverse:
            a = np.fft.ifft(a, s[i], axes[i], norm)
        else:
            a = np.fft.fft(a, s[i], axes[i], norm)
    return a


def fftn(a, s=None, axes=None, norm=None):
    return along_axes(a, s, axes, norm, False)


def ifftn(a, s=None, axes=None, norm=None):
    return along_axes(a, s, axes, norm, True)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return along_axes(a, s, axes, norm, False)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return along_axes(a, s, axes, norm, True)


def rfftn(a, s=None, axes=None, norm=None):
    """``np.fft.rfftn``: ``rfft`` along the last of the axes, then ``fft`` along the others."""
    s, axes = transform_axes(np.shape(a), s, axes)
    a = np.fft.rfft(a, s[-1], axes[-1], norm)
    for i in range(len(axes) - 2, -1, -1):
        a = np.fft.fft(a, s[i], axes[i], norm)
    return a


def irfftn(a, s=None, axes=None, norm=None):
    """``np.fft.irfftn``: ``ifft`` along the axes but the last, the first first, then
    ``irfft`` along the last."""
    s, axes = transform_axes(np.shape(a), s, axes, inverse_real=True)
    for i in range(len(axes) - 1):
        a = np.fft.ifft(a, s[i], axes[i], norm)
    return np.fft.irfft(a, s[-1], axes[-1], norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return irfftn(a, s, axes, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """``np.fft.hfft``: the real signal of a Hermitian spectrum, ``irfft`` of its conjugate."""
    return np.fft.irfft(np.conj(a), n, axis, INVERSE[norm])


def ihfft(a, n=None, axis=-1, norm=None):
    """``np.fft.ihfft``: the conjugate of ``rfft``, at the inverse's scale."""
    return np.conj(np.fft.rfft(a, n, axis, INVERSE[norm]))


def half_lengths(shape, axes):
    """``n // 2`` of each of ``axes`` (an int, or a sequence: a list)."""
    if isinstance(axes, (int, np.integer)):
        return shape[axes] // 2
    return [shape[a] // 2 for a in axes]


def fftshift(x, axes=None):
    """``np.fft.fftshift``: a roll by half of each of ``axes`` (all by default)."""
    if axes is None:
        axes = tuple(range(np.ndim(x)))
    return np.roll(x, half_lengths(np.shape(x), axes), axes)


def ifftshift(x, axes=None):
    """``np.fft.ifftshift``: a roll back by half of each of ``axes`` (all by default)."""
    if axes is None:
        axes = tuple(range(np.ndim(x)))
    return np.roll(x, np.negative(half_lengths(np.shape(x), axes)), axes)


for _expansion in (fftn, ifftn, fft2, ifft2, rfftn, irfftn, rfft2, irfft2, hfft, ihfft,
                   fftshift, ifftshift):
    defexpansion(getattr(np.fft, _expansion.__name__), _expansion)
