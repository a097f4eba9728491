"""NumPy functions of several results or several forms, differentiated on both engines:
``np.interp`` (knots as lists, a period), the pieces of a split kept together,
``np.meshgrid`` and ``np.broadcast_arrays``, the ufuncs of two results (``np.divmod``,
``np.modf``, ``np.frexp``), a ufunc's reduce and accumulate, ``np.logspace``,
``np.astype``, ``np.bincount``'s weights, and functions of integer results used in
arithmetic.  Each is checked compiled == eager == finite differences, and each
expansion gives NumPy's own values."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad

V = np.linspace(0.1, 0.9, 6) * 1.37 - 0.21  # away from the kinks of floor, interp, modf
M = np.sin(np.arange(12.0)).reshape(3, 4) + 1.5


def weighed(y):
    """A number each element of ``y`` moves with a weight of its own."""
    return np.sum(y * np.reshape(np.cos(np.arange(np.size(y)) + 0.5), np.shape(y)))


# --- np.interp -------------------------------------------------------------------------

def interp_lists(x):
    return weighed(np.interp(x, [0.0, 0.5, 1.0], [0.0, 1.0, 3.0]))


def interp_list_values_active(x):
    return weighed(np.interp(x, [-0.3, 0.5, 1.4], [x[0], 1.0, x[1] * 2.0], left=x[2]))


def interp_bounds(x):
    return weighed(np.interp(x, [0.2, 0.5, 0.7], [0.0, 1.0, 3.0], left=-1.0, right=x[3]))


def interp_periodic(x):
    return weighed(np.interp(x * 5.0, [0.3, 1.1, 2.0, -0.6], [0.0, 1.0, 3.0, 2.0],
                             period=2.5))


def interp_periodic_knots(x, xp, fp):
    return weighed(np.interp(x * 5.0, xp, fp, period=-2.5))


# --- the pieces of a split kept together ------------------------------------------------

def split_indexed(x):
    return weighed(np.split(x, 2, axis=1)[1] ** 2) + np.sum(np.array_split(x, 2)[0])


def split_looped(x):
    s = 0.0
    for p in np.array_split(x, 3, 1):
        s = s + np.sum(np.sin(p) * p)
    return s


def split_passed_on(x):
    ps = np.split(x, 3)
    return weighed(np.stack(ps) ** 2) + weighed(np.concatenate(ps, axis=1) * x[0, 0])


def vsplit_summed(x):
    return weighed(sum(np.vsplit(x, 3)) ** 3)


def split_unpacked(x):
    a, b = np.split(x, [1], axis=1)
    return weighed(a * 2.0) + np.sum(np.sin(b))


# --- grids -----------------------------------------------------------------------------

def meshgrid_pair(x):
    a, b = np.meshgrid(x, x[:3] ** 2)
    return weighed(a * b ** 2)


def meshgrid_indexed(x):
    return weighed(np.meshgrid(x[:2], x, np.sin(x[:3]))[2] * np.meshgrid(x[:2], x, x[:3])[0])


def broadcast_pair(x):
    a, b = np.broadcast_arrays(x, x[:, None] ** 2)
    return weighed(a * b)


# --- ufuncs of two results, conversions, weights, integers --------------------------------

def divmod_both(x):
    q, r = np.divmod(x * 3.0, 0.37)
    return weighed(q * r ** 2)


def divmod_by_active(x):
    return weighed(np.divmod(x[::-1], x + 0.11)[1])


def modf_parts(x):
    frac, whole = np.modf(x * 4.0 - 1.0)
    return weighed(frac ** 2 * whole + frac)


def frexp_mantissa(x):
    m, e = np.frexp(x * 7.0)
    return weighed(m ** 2 * e)


def astype_function(x):
    return weighed(np.astype(x, np.float64) ** 2 + np.astype(x * 1j, np.complex128).imag)


def bincount_weights(x):
    return weighed(np.bincount([0, 3, 1, 1, 0, 3], weights=x ** 2, minlength=5))


def integers_in_arithmetic(x):
    bins = np.digitize(x, [0.3, 0.6]) + np.searchsorted([0.2, 0.5], x)
    return weighed(bins * x + np.nanargmax(x) * x ** 2 + np.argwhere(x > 0.5)[0, 0] * x)


def ufunc_methods(x):
    m = np.reshape(x, (2, 3))
    return (weighed(np.add.reduce(m) ** 2) + weighed(np.multiply.reduce(m, axis=1))
            + np.maximum.reduce(x) * np.minimum.reduce(m, None) + np.add.reduce(x)
            + weighed(np.add.accumulate(m, 1) ** 2) + weighed(np.multiply.accumulate(m)))


def logspace_bounds(x):
    return weighed(np.logspace(x[0], x[1], 5)) + weighed(np.logspace(
        x[:2], x[2], 4, base=x[2:4] + 2.0, axis=1, endpoint=False))


def full_like_of_active(x):
    return weighed(np.full_like(x, x[1]) * x)


PROGRAMS = [
    (interp_lists, (V,)), (interp_list_values_active, (V,)), (interp_bounds, (V,)),
    (interp_periodic, (V,)),
    (interp_periodic_knots, (V, np.array([0.3, 1.1, 2.0, -0.6]), np.array([0.0, 1, 3, 2]))),
    (split_indexed, (M,)), (split_looped, (M,)), (split_passed_on, (M,)),
    (vsplit_summed, (M,)), (split_unpacked, (M,)),
    (meshgrid_pair, (V,)), (meshgrid_indexed, (V,)), (broadcast_pair, (V,)),
    (divmod_both, (V,)), (divmod_by_active, (V,)), (modf_parts, (V,)), (frexp_mantissa, (V,)),
    (astype_function, (V,)), (bincount_weights, (V,)), (integers_in_arithmetic, (V,)),
    (ufunc_methods, (V,)), (logspace_bounds, (V,)), (full_like_of_active, (V,)),
]


@pytest.mark.parametrize("f, args", PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
def test_compiled_equals_eager_equals_finite_differences(f, args):
    for wrt in range(len(args)):
        check_grad(f, tuple(a.copy() for a in args), wrt)


def meshgrid_keywords(x):
    a, b = np.meshgrid(x, x[:3] ** 2, indexing="ij", sparse=True)
    return weighed(a * b ** 2)


def test_meshgrid_given_keywords_is_differentiated_on_the_tape_and_refused_when_compiled():
    x = sd.constant(V)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = meshgrid_keywords(x)
    h = 1e-6
    expected = [(meshgrid_keywords(V + h * e) - meshgrid_keywords(V - h * e)) / (2 * h)
                for e in np.eye(len(V))]
    np.testing.assert_allclose(tape.gradient(y, x), expected, rtol=1e-6)
    with pytest.raises(sd.CompileError, match="keyword-only"):
        sd.grad(meshgrid_keywords)(V)


def interp_period_by_position(x):
    return np.sum(np.interp(x, [0.0, 1.0], [1.0, 2.0], None, None, 3.0))


def test_a_period_passed_by_position_is_refused():
    with pytest.raises(NotImplementedError, match="period"):
        sd.grad(interp_period_by_position)(V)


@pytest.mark.parametrize("fn, args", [
    (np.divmod, (np.array([-7.5, -0.0, 2.25, np.inf, np.nan, 5.0]),
                 np.array([2.0, 3, -1.5, 2, 1, 0]))),
    (np.modf, (np.array([-2.0, -0.5, 0.0, -0.0, 3.75, np.inf, -np.inf, np.nan]),)),
    (np.frexp, (np.array([0.0, -0.0, 5e-324, -3.5, 1e300, np.inf, np.nan]),)),
    (np.meshgrid, (np.arange(2.0), np.arange(3.0), np.arange(4.0))),
    (np.broadcast_arrays, (np.arange(2.0)[:, None], np.arange(3.0))),
    (np.split, (np.arange(12.0).reshape(4, 3), [1, 3])),
    (np.vsplit, (np.arange(12.0).reshape(4, 3), 2)),
    (np.logspace, (np.array([[0.5], [1.0]]), 2.0, 4, True, np.array([2.0, 3.0, 4.0]))),
    *[(method, (np.sin(np.arange(12.0)).reshape(4, 3),)) for method in (
        np.add.reduce, np.multiply.reduce, np.maximum.reduce, np.minimum.reduce,
        np.add.accumulate, np.multiply.accumulate)],
])
def test_an_expansion_gives_numpys_values(fn, args):
    from srcdiff.rules import registry
    with np.errstate(all="ignore"):
        expected = fn(*args)
        got = registry.expand(fn, *args)
    if isinstance(expected, np.ndarray):  # a reduction's one result
        expected, got = (expected,), (got,)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
