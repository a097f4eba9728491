"""NumPy's functions built of others (linear algebra, polynomials, Fourier transforms),
differentiated through their expansions (``rules.registry.defexpansion``: the same
function written with primitives, as NumPy writes it) and forms (``defform``).

Each program is checked compiled == eager tape == finite differences over several
shapes, arguments and keywords, which it reads from ``K`` (each case's); each
expansion gives NumPy's own values; and what has no derivative (a rank that drops, an
eigenvector's phase, a leading coefficient 0) is refused."""
import sys

import numpy as np
import pytest

import srcdiff as sd
from srcdiff.rules import registry
from compiler_programs import check_grad

R = np.random.default_rng(11)
HERE = sys.modules[__name__]
K = {}  # the arguments of the case that runs (compiled code reads globals as it runs)


def weighed(y):
    """A real number that every element of ``y`` moves (both parts of a complex one),
    each with a weight of its own."""
    w = np.reshape(np.cos(np.arange(np.size(y)) + 0.5), np.shape(y))
    return np.sum(np.real(y) * w) + np.sum(np.imag(y) * w * w)


def conditioned(*shape):
    """Random matrices near the identity: invertible, of moderate powers."""
    return 0.4 * R.uniform(-1, 1, shape) + np.eye(shape[-1])


# --- linear algebra ------------------------------------------------------------------

def matrix_power_loss(a):
    return weighed(np.linalg.matrix_power(a, K["N"]))


def cond_loss(a):
    return np.sum(np.linalg.cond(a, K["P"]))


def tensorsolve_loss(a, b):
    return weighed(np.linalg.tensorsolve(a, b, K["AXES"]))


def tensorinv_loss(a):
    return weighed(np.linalg.tensorinv(a, K["IND"]))


def vector_norm_loss(x):
    return weighed(np.linalg.vector_norm(x, axis=K["AXIS"], keepdims=K["KEEPDIMS"], ord=K["ORD"]))


def matrix_norm_loss(x):
    return weighed(np.linalg.matrix_norm(x, keepdims=K["KEEPDIMS"], ord=K["ORD"]))


def norm_loss(x):
    return np.linalg.norm(x, K["ORD"]) * np.sum(x)


def lstsq_solution_loss(a, b):
    return weighed(np.linalg.lstsq(a, b, K["RCOND"])[0])


def lstsq_residuals_loss(a, b):
    return weighed(np.linalg.lstsq(a, b)[1])


def lstsq_unpacked_loss(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b)
    return weighed(x) + np.sum(residuals) * rank + np.sum(s ** 2)


def eigenvalues_loss(a):
    w, v = np.linalg.eig(a)
    return weighed(w)


def pinv_loss(a):
    return weighed(np.linalg.pinv(a))


def tensordot_loss(a, b):
    return weighed(np.linalg.tensordot(a, b, axes=K["AXES"]))


def vecdot_loss(a, b):
    return weighed(np.linalg.vecdot(a, b, axis=K["AXIS"]))


def cross_loss(a, b):
    return weighed(np.linalg.cross(a, b, axis=K["AXIS"]))


TALL, WIDE, SQUARE = R.normal(size=(6, 3)), R.normal(size=(3, 5)), conditioned(3, 3)
X = R.normal(size=(2, 3, 4))


def case(program, args, wrt=0, **constants):
    """``program(*args)`` differentiated w.r.t. ``wrt``, with ``K`` holding ``constants``."""
    name = "-".join([program.__name__] + [f"{k}={v!r}" for k, v in constants.items()])
    return pytest.param(program, args, wrt, constants, id=name)


LINALG = [
    *[case(matrix_power_loss, [SQUARE], N=n)
      for n in (0, 1, 2, 3, 4, 5, 6, 11, -1, -2, -3, -7)],
    case(matrix_power_loss, [conditioned(2, 3, 3)], N=5),
    case(matrix_power_loss, [conditioned(2, 3, 3)], N=-2),
    *[case(cond_loss, [SQUARE], P=p)
      for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf)],
    case(cond_loss, [conditioned(2, 3, 3)], P=None),
    case(cond_loss, [conditioned(2, 3, 3)], P="fro"),
    case(cond_loss, [R.normal(size=(3, 5))], P=-2),
    *[case(tensorsolve_loss, [np.reshape(conditioned(6, 6), shape), R.normal(size=(2, 3))],
           (0, 1), AXES=axes)
      for shape, axes in [((2, 3, 6), None), ((6, 2, 3), (0,)), ((2, 3, 2, 3), None)]],
    case(tensorinv_loss, [np.reshape(conditioned(6, 6), (2, 3, 6))], IND=2),
    case(tensorinv_loss, [np.reshape(conditioned(4, 4), (4, 2, 2))], IND=1),
    case(tensorinv_loss, [np.reshape(conditioned(6, 6), (2, 3, 3, 2))], IND=2),
    *[case(vector_norm_loss, [X], AXIS=axis, KEEPDIMS=keepdims, ORD=ord)
      for axis, keepdims, ord in [(None, False, 2), (1, False, 2), (-1, True, 1),
                                  ((0, 2), False, 2), ((2, 0), True, 3), (None, True, np.inf),
                                  (0, False, -np.inf), ((1,), False, -1), (None, False, 0)]],
    *[case(matrix_norm_loss, [x], KEEPDIMS=keepdims, ORD=ord)
      for x in (X, SQUARE) for keepdims, ord in [(False, "fro"), (True, "nuc"), (False, 1),
                                                 (False, -1), (True, 2), (False, -2),
                                                 (False, np.inf), (True, -np.inf)]],
    case(norm_loss, [R.normal(size=5)], ORD=0),  # the count of non-zeros: no gradient
    case(lstsq_solution_loss, [TALL, R.normal(size=6)], (0, 1), RCOND=None),
    case(lstsq_solution_loss, [TALL, R.normal(size=(6, 2))], (0, 1), RCOND=None),
    case(lstsq_solution_loss, [WIDE, R.normal(size=3)], (0, 1), RCOND=None),
    case(lstsq_solution_loss, [SQUARE, R.normal(size=(3, 2))], (0, 1), RCOND=1e-10),
    case(lstsq_residuals_loss, [TALL, R.normal(size=6)], (0, 1)),
    case(lstsq_residuals_loss, [TALL, R.normal(size=(6, 2))], (0, 1)),
    case(lstsq_residuals_loss, [WIDE, R.normal(size=3)], (0, 1)),  # none: no gradient
    case(lstsq_unpacked_loss, [TALL, R.normal(size=(6, 2))], (0, 1)),
    case(eigenvalues_loss, [R.normal(size=(4, 4))]),  # complex pairs, almost surely
    case(eigenvalues_loss, [SQUARE + SQUARE.T]),  # real
    case(eigenvalues_loss, [conditioned(2, 3, 3)]),
    case(pinv_loss, [TALL]),
    case(pinv_loss, [WIDE]),
    case(tensordot_loss, [X, R.normal(size=(3, 4, 5))], (0, 1), AXES=2),
    case(tensordot_loss, [X, R.normal(size=(4, 2))], (0, 1), AXES=1),
    case(tensordot_loss, [X, R.normal(size=(4, 2, 5))], (0, 1), AXES=([0, 2], [1, 0])),
    case(vecdot_loss, [X, R.normal(size=4)], (0, 1), AXIS=-1),
    case(vecdot_loss, [X, R.normal(size=(3, 1))], (0, 1), AXIS=-2),
    case(cross_loss, [R.normal(size=(4, 3)), R.normal(size=3)], (0, 1), AXIS=-1),
    case(cross_loss, [R.normal(size=(3, 2)), R.normal(size=(3, 2))], (0, 1), AXIS=0),
]


# --- polynomials ---------------------------------------------------------------------

def polyadd_loss(a1, a2):
    return weighed(np.polyadd(a1, a2))


def polysub_loss(a1, a2):
    return weighed(np.polysub(a1, a2))


def polymul_loss(a1, a2):
    return weighed(np.polymul(a1, a2))


def polyder_loss(p):
    return weighed(np.polyder(p, K["M"]))


def polyint_loss(p):
    return weighed(np.polyint(p, K["M"], K["K"]))


def polyint_constants_loss(p, k):
    return weighed(np.polyint(p, K["M"], k))


def polyfit_loss(x, y):
    return weighed(np.polyfit(x, y, K["DEG"], w=K["W"]))


def polyfit_weights_loss(x, y, w):
    return weighed(np.polyfit(x, y, K["DEG"], w=w))


def polyfit_full_loss(x, y):
    c, residuals, rank, s, rcond = np.polyfit(x, y, K["DEG"], full=True)
    return weighed(c) + np.sum(residuals) + np.sum(s) * rcond


def polyfit_covariance_loss(x, y):
    c, covariance = np.polyfit(x, y, K["DEG"], cov=True)
    return weighed(c) + weighed(covariance)


def polyfit_unscaled_loss(x, y):
    c, covariance = np.polyfit(x, y, K["DEG"], cov="unscaled")
    return weighed(c) + weighed(covariance)


def polyval_of_fit_loss(x, y):
    return weighed(np.polyval(np.polyfit(x, y, 2), x))


POINTS = np.linspace(-1, 2, 7) + 0.1 * R.normal(size=7)
POLYNOMIALS = [
    case(polyadd_loss, [R.normal(size=3), R.normal(size=5)], (0, 1)),
    case(polyadd_loss, [R.normal(size=5), R.normal(size=2)], (0, 1)),
    case(polyadd_loss, [R.normal(size=4), R.normal(size=4)], (0, 1)),
    case(polyadd_loss, [R.normal(size=4), np.array(1.5)], (0, 1)),
    case(polysub_loss, [R.normal(size=3), R.normal(size=5)], (0, 1)),
    case(polysub_loss, [R.normal(size=5), R.normal(size=2)], (0, 1)),
    case(polymul_loss, [R.normal(size=3), R.normal(size=4)], (0, 1)),
    case(polymul_loss, [R.normal(size=1), R.normal(size=3)], (0, 1)),
    *[case(polyder_loss, [R.normal(size=5)], M=m) for m in (0, 1, 2, 4, 6)],
    *[case(polyint_loss, [R.normal(size=4)], M=m, K=k) for m, k in [(0, None), (1, None), (2, None),
                                                               (3, 1.5), (2, [0.5, -1.0])]],
    case(polyint_constants_loss, [R.normal(size=3), R.normal(size=2)], (0, 1), M=2),
    case(polyint_constants_loss, [R.normal(size=3), R.normal(size=1)], (0, 1), M=3),
    case(polyfit_loss, [POINTS, R.normal(size=7)], (0, 1), DEG=2, W=None),
    case(polyfit_loss, [POINTS, R.normal(size=(7, 2))], (0, 1), DEG=1, W=None),
    case(polyfit_loss, [POINTS, R.normal(size=7)], (0, 1), DEG=3, W=R.uniform(0.5, 2, 7)),
    case(polyfit_loss, [POINTS, R.normal(size=(7, 3))], (0, 1), DEG=2, W=R.uniform(0.5, 2, 7)),
    case(polyfit_weights_loss, [POINTS, R.normal(size=7), R.uniform(0.5, 2, 7)], (0, 1, 2), DEG=2),
    case(polyfit_full_loss, [POINTS, R.normal(size=7)], (0, 1), DEG=2),
    case(polyfit_full_loss, [POINTS, R.normal(size=(7, 2))], (0, 1), DEG=1),
    case(polyfit_covariance_loss, [POINTS, R.normal(size=7)], (0, 1), DEG=2),
    case(polyfit_covariance_loss, [POINTS, R.normal(size=(7, 2))], (0, 1), DEG=1),
    case(polyfit_unscaled_loss, [POINTS, R.normal(size=7)], (0, 1), DEG=2),
    case(polyval_of_fit_loss, [POINTS, R.normal(size=7)], (0, 1)),
]


# --- Fourier transforms (of real arrays: the tape's float64 inputs; the rules' complex
# inputs are checked in test_rules.py) ------------------------------------------------

def fftn_loss(x):
    return weighed(np.fft.fftn(x, K["S"], K["AXES"], K["NORM"]))


def ifftn_loss(x):
    return weighed(np.fft.ifftn(x, K["S"], K["AXES"], K["NORM"]))


def fft2_loss(x):
    return weighed(np.fft.fft2(x, K["S"], K["AXES"], K["NORM"]))


def ifft2_loss(x):
    return weighed(np.fft.ifft2(x, K["S"], K["AXES"], K["NORM"]))


def rfftn_loss(x):
    return weighed(np.fft.rfftn(x, K["S"], K["AXES"], K["NORM"]))


def irfftn_loss(x):
    return weighed(np.fft.irfftn(x, K["S"], K["AXES"], K["NORM"]))


def rfft2_loss(x):
    return weighed(np.fft.rfft2(x, K["S"], K["AXES"], K["NORM"]))


def irfft2_loss(x):
    return weighed(np.fft.irfft2(x, K["S"], K["AXES"], K["NORM"]))


def hfft_loss(x):
    return weighed(np.fft.hfft(x, K["N"], K["AXIS"], K["NORM"]))


def ihfft_loss(x):
    return weighed(np.fft.ihfft(x, K["N"], K["AXIS"], K["NORM"]))


def fftshift_loss(x):
    return weighed(np.fft.fftshift(x, K["AXES"]))


def ifftshift_loss(x):
    return weighed(np.fft.ifftshift(x, K["AXES"]))


def spectrum_round_trip_loss(x):
    return weighed(np.fft.irfftn(np.fft.rfftn(x) * np.fft.rfftn(x[::-1]), np.shape(x), (0, 1)))


N_DIMENSIONAL = [(None, None, None), ((3, 5), (0, 2), None), (None, (1,), "ortho"),
                 ((2, 6, 3), (2, 0, 1), "forward"), (None, (-1, 0), "backward")]
TWO_DIMENSIONAL = [(None, (-2, -1), None), ((4, 2), (0, 2), "ortho"), (None, (2, 1), "forward")]
TRANSFORMS = [
    *[case(f, [X], S=s, AXES=axes, NORM=norm)
      for f in (fftn_loss, ifftn_loss, rfftn_loss, irfftn_loss) for s, axes, norm in N_DIMENSIONAL],
    *[case(f, [X], S=s, AXES=axes, NORM=norm)
      for f in (fft2_loss, ifft2_loss, rfft2_loss, irfft2_loss)
      for s, axes, norm in TWO_DIMENSIONAL],
    *[case(f, [X], N=n, AXIS=axis, NORM=norm) for f in (hfft_loss, ihfft_loss)
      for n, axis, norm in [(None, -1, None), (7, 0, "ortho"), (4, 1, "forward")]],
    *[case(f, [X], AXES=axes)
      for f in (fftshift_loss, ifftshift_loss) for axes in (None, 1, -1, (0, 2))],
    case(spectrum_round_trip_loss, [R.normal(size=(4, 5))]),
]


@pytest.mark.parametrize("program, args, wrt, constants", LINALG + POLYNOMIALS + TRANSFORMS)
def test_compiled_equals_eager_equals_finite_differences(program, args, wrt, constants,
                                                         monkeypatch):
    monkeypatch.setattr(HERE, "K", constants)
    check_grad(program, args, wrt)


# --- each expansion computes what NumPy computes, bit for bit -------------------------

C = R.normal(size=(3, 4)) + 1j * R.normal(size=(3, 4))
SAME_VALUES = [
    (np.linalg.matrix_power, (SQUARE, 7)), (np.linalg.matrix_power, (SQUARE, -3)),
    (np.linalg.matrix_power, (SQUARE, 0)), (np.linalg.cond, (SQUARE,)),
    (np.linalg.cond, (SQUARE, "nuc")), (np.linalg.tensorinv, (np.reshape(SQUARE, (3, 1, 3)), 1)),
    (np.linalg.tensorsolve, (np.reshape(conditioned(6, 6), (6, 2, 3)), X[0, :, :2].T, (0,))),
    (np.linalg.lstsq, (TALL, np.cos(POINTS[:6]))), (np.linalg.eig, (SQUARE,)),
    (np.polyadd, (X[0, 0], 1.5)), (np.polysub, (X[0, 0], X[1, 1, :2])),
    (np.polymul, (np.array([0.0, 1.0, 2.0]), X[0, 0])), (np.polyder, (X[0, 0], 2)),
    (np.polyint, (X[0, 0], 2, [1.0, 2.0])), (np.polyfit, (POINTS, np.cos(POINTS), 3)),
    (np.fft.fftn, (X, (3, 5), (0, 2))), (np.fft.ifft2, (C,)), (np.fft.rfftn, (X,)),
    (np.fft.irfftn, (C, (4, 5), (0, 1))), (np.fft.hfft, (C, 7, 0, "ortho")), (np.fft.ihfft, (X,)),
    (np.fft.fftshift, (X,)), (np.fft.ifftshift, (X, (0, 2))),
]


@pytest.mark.parametrize("fn, args", SAME_VALUES, ids=lambda v: getattr(v, "__name__", ""))
def test_each_expansion_gives_numpys_values(fn, args):
    want, got = fn(*args), registry.expand(fn, *args)
    assert type(got) is type(want)
    for w, g in zip(*[r if isinstance(r, tuple) else (r,) for r in (want, got)]):
        assert np.shape(g) == np.shape(w) and np.result_type(g) == np.result_type(w)
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("fn, args, kwargs", [
    (np.linalg.vector_norm, (X,), {"axis": (2, 0), "keepdims": True, "ord": 3}),
    (np.linalg.matrix_norm, (X,), {"keepdims": True, "ord": 1}),
    (np.linalg.tensordot, (X, X[0].T), {"axes": 1}), (np.linalg.vecdot, (X, X), {"axis": 1}),
    (np.linalg.cross, (X[..., :3], X[1, :, 1:]), {})], ids=lambda v: getattr(v, "__name__", ""))
def test_each_array_api_expansion_gives_numpys_values(fn, args, kwargs):
    np.testing.assert_array_equal(registry.expand(fn, *args, **kwargs), fn(*args, **kwargs))


def test_a_cross_product_of_vectors_of_two_is_refused_as_numpy_refuses_it(monkeypatch):
    monkeypatch.setattr(HERE, "K", {"AXIS": -1})
    with pytest.raises(ValueError, match="3-dimensional"):
        sd.grad(cross_loss)(X[..., :2], X[..., :2])


# --- what has no derivative is refused, on both engines ------------------------------

RANK_ONE = np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 2.0])


def eigenvectors_loss(a):
    w, v = np.linalg.eig(a)
    return weighed(v)


def polyfit_full_by_position_loss(x, y):
    return weighed(np.polyfit(x, y, 1, None, True)[0])


@pytest.mark.parametrize("program, args, match", [
    (pinv_loss, [RANK_ONE], "deficient rank"),
    (lstsq_solution_loss, [RANK_ONE, np.ones(3)], "deficient rank"),
    (eigenvectors_loss, [SQUARE], "eigenvectors"),
    (polymul_loss, [np.array([0.0, 1.0, 2.0]), np.ones(2)], "leading 0"),
    (polyfit_full_by_position_loss, [POINTS, np.cos(POINTS)], "by keyword"),
], ids=["pinv", "lstsq", "eig", "polymul", "polyfit"])
def test_what_has_no_derivative_is_refused(program, args, match, monkeypatch):
    monkeypatch.setattr(HERE, "K", {"RCOND": None})
    with pytest.raises(NotImplementedError, match=match):
        sd.grad(program)(*args)
    x = sd.constant(args[0])
    with pytest.raises(NotImplementedError, match=match):
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = program(x, *args[1:])
        tape.gradient(y, x)
