"""NumPy's statistics, scans, differences and moves of elements differentiated through
expansions and forms (functions of recorded primitives): compiled == eager tape ==
finite differences over shapes, axes and keywords; what neither engine models is
refused.  The primitive rules' own checks are the examples of tests/test_rules.py."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad, eager_grads
from util import numerical_grad

RNG = np.random.default_rng(11)
X = RNG.uniform(-1.0, 1.0, (4, 5))
W = RNG.standard_normal((4, 5))
W33, W55 = RNG.standard_normal((4, 4)), RNG.standard_normal((5, 5))
POSITIVE = RNG.uniform(0.5, 2.0, 5)
STEPS = np.array([0.0, 0.4, 1.0, 1.3, 2.5])  # coordinates of x's columns


# --- covariance and correlation (expansions, the weights' gradients included) ---

def covariance(x):
    return np.sum(np.cov(x) * W33)


def covariance_of_columns(x):
    return np.sum(np.cov(x, rowvar=False, bias=True) * W55)


def covariance_of_two(x):
    return np.sum(np.cov(x[0], x[1:], ddof=0) ** 2)


def variance_of_a_vector(x):
    return np.cov(x[0]) * 2.0


def covariance_weighted(x, w):
    return np.sum(np.cov(x, aweights=w) * W33)


def covariance_both_weights(x, w):
    return np.sum(np.cov(x, fweights=np.array([1, 2, 1, 3, 1]), aweights=w, ddof=2) * W33)


def correlation(x):
    return np.sum(np.corrcoef(x) * W33)


def correlation_of_columns(x):
    return np.sum(np.corrcoef(x, x[:, :2] ** 2, rowvar=False) ** 3)


# --- differences and sums of neighbours ---

def trapezoid_rule(x):
    return np.trapezoid(x[0] ** 2) + np.sum(np.trapezoid(x, dx=0.3, axis=0) * W[0])


def trapezoid_at_coordinates(x):
    return np.sum(np.trapezoid(x, STEPS) * W[:, 0])


def trapezoid_of_both(x, c):
    return np.sum(np.trapezoid(x ** 2, c, axis=1))


def ediff1d_with_ends(x):
    return np.sum(np.ediff1d(x) * np.arange(19.0)) + np.sum(
        np.ediff1d(x[0], to_end=x[1, :2], to_begin=3.0) ** 2)


def gradient_of_a_vector(x):
    return np.sum(np.gradient(x[0], STEPS, edge_order=2) * W[0])


def gradient_along_an_axis(x):
    return np.sum(np.gradient(x, 0.5, axis=1, edge_order=2) * W)


def gradient_kept_together(x):
    slopes = np.gradient(x, 2.0, STEPS)
    return np.sum(slopes[0] * W) + np.sum(slopes[1] ** 2)


def unwrapped(x):
    return np.sum(np.unwrap(4.0 * x, axis=0, period=3.0) * W)


def unwrapped_by_a_period(x, period):
    return np.sum(np.unwrap(4.0 * x, period=period) * W)


# --- selection ---

def select_choices(x):
    conditions = [x > 0.3, x < -0.2]
    choices = [x ** 2, np.sin(x)]
    return np.sum(np.select(conditions, choices, 0.5) * W)


def select_default(x, d):
    conditions = [x > 0.3]
    choices = [x ** 2]
    return np.sum(np.select(conditions, choices, d) * W)


def choose_choices(x):
    choices = [x ** 2, np.sin(x), x[0]]
    return np.sum(np.choose(np.arange(20).reshape(4, 5) % 3, choices) * W)


def choose_clipped_and_wrapped(x):
    choices = [x[0], x[1] ** 2]
    return (np.sum(np.choose([[0, 1, 5, -1, 1]], choices, mode="clip") ** 2)
            + np.sum(np.choose([0, 2, 1, 3, 5], x, mode="wrap") ** 2))


def trimmed_zeros(x):
    padded = np.concatenate([np.zeros(2), x[0], np.zeros(3)])
    return (np.sum(np.trim_zeros(padded) ** 2) + np.sum(np.trim_zeros(np.pad(x, 1), axis=1) ** 3)
            + np.sum(np.trim_zeros(x[1] * np.array([0.0, 1.0, 0.0, 1.0, 0.0]), "b") ** 2))


def average_with_weights(x, w):
    avg, total = np.average(x ** 2, axis=1, weights=w, returned=True, keepdims=True)
    return np.sum(avg * total) + np.sum(np.average(x, axis=0, weights=w[:4], returned=True)[1])


def average_without_weights(x):
    avg, count = np.average(x ** 2, returned=True)
    return avg * count


# --- pieces and grids ---

def meshgrid_unpacked(x):
    a, b = np.meshgrid(x[0], x[1, :3])
    return np.sum(a * b ** 2)


def broadcast_together(x):
    a, b = np.broadcast_arrays(x[0], x[:, :1])
    return np.sum(a * b ** 2)


def hsplit_unpacked(x):
    a, b = np.hsplit(x, [2])
    return np.sum(a ** 2) * np.sum(b)


def hsplit_kept_together(x):
    pieces = np.hsplit(x[0], 5)
    return np.sum(pieces[1] * 2.0) + np.sum(pieces[4] ** 2)


def dsplit_both_ways(x):
    cube = np.reshape(x, (2, 2, 5))
    a, b = np.dsplit(cube, [3])
    return np.sum(a ** 2) + np.sum(b * 3.0) + np.sum(np.dsplit(cube, 5)[2] ** 3)


def unstacked(x):
    a, b, c, d = np.unstack(x)
    return np.sum(a * d) + np.sum(np.unstack(x, axis=1)[2] ** 2)


def dstacked(x):
    parts = [x[0], x[1] ** 2]
    return np.sum(np.dstack([x, x ** 2]) ** 2) + np.sum(np.dstack(parts) ** 3)


def program(f, args, wrt=0, needs=None):
    """A case of ``f(*args)`` differentiated w.r.t. ``wrt``; skipped where NumPy has no
    ``np.<needs>`` (NumPy 1)."""
    skip = pytest.mark.skipif(needs is not None and not hasattr(np, needs),
                              reason=f"NumPy has no np.{needs}")
    return pytest.param(f, args, wrt, marks=skip, id=f.__name__)


PROGRAMS = [
    program(covariance, (X,)), program(covariance_of_columns, (X,)),
    program(covariance_of_two, (X,)), program(variance_of_a_vector, (X,)),
    program(covariance_weighted, (X, POSITIVE), (0, 1)),
    program(covariance_both_weights, (X, POSITIVE), (0, 1)), program(correlation, (X,)),
    program(correlation_of_columns, (X,)),
    program(trapezoid_rule, (X,), needs="trapezoid"),
    program(trapezoid_at_coordinates, (X,), needs="trapezoid"),
    program(trapezoid_of_both, (X, np.sort(RNG.uniform(0.0, 3.0, (4, 5)), axis=1)), (0, 1),
            needs="trapezoid"),
    program(ediff1d_with_ends, (X,)), program(gradient_of_a_vector, (X,)),
    program(gradient_along_an_axis, (X,)), program(gradient_kept_together, (X,)),
    program(unwrapped, (X,)), program(unwrapped_by_a_period, (X, 2.5), (0, 1)),
    program(select_choices, (X,)), program(select_default, (X, 0.7), (0, 1)),
    program(choose_choices, (X,)), program(choose_clipped_and_wrapped, (X,)),
    program(trimmed_zeros, (X,)), program(average_with_weights, (X, POSITIVE), (0, 1)),
    program(average_without_weights, (X,)), program(hsplit_unpacked, (X,)),
    program(hsplit_kept_together, (X,)), program(dsplit_both_ways, (X,)),
    program(unstacked, (X,), needs="unstack"), program(dstacked, (X,)),
    program(meshgrid_unpacked, (X,)), program(broadcast_together, (X,)),
]


@pytest.mark.parametrize("f, args, wrt", PROGRAMS)
def test_compiled_equals_eager_equals_finite_differences(f, args, wrt):
    check_grad(f, args, wrt)


# --- what the tape alone differentiates: functions of *args beside keyword-only ones ---

def meshgrid_sparse_ij(x):
    a, b, c = np.meshgrid(x[0, :2], x[1, :3], x[2], indexing="ij", sparse=True)
    return np.sum(a * b + c)


def gradient_unpacked(x):
    a, b = np.gradient(x, 0.5, STEPS, edge_order=2)
    return np.sum(a * b ** 2)


ON_THE_TAPE = [meshgrid_sparse_ij, gradient_unpacked]


@pytest.mark.parametrize("f", ON_THE_TAPE, ids=lambda f: f.__name__)
def test_the_tape_differentiates_and_the_compiler_refuses(f):
    (tape,) = eager_grads(f, (X,), [0])
    np.testing.assert_allclose(tape, numerical_grad(lambda v: float(f(v)), X), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(sd.CompileError):
        sd.grad(f)(X)


def test_the_tape_packs_results_as_numpy_does():
    t = sd.constant(X)
    pairs = [(np.meshgrid(t[0], t[1]), np.meshgrid(X[0], X[1])),
             (np.gradient(t), np.gradient(X)), (np.hsplit(t, 5), np.hsplit(X, 5)),
             (np.broadcast_arrays(t[0], t[:, :1]), np.broadcast_arrays(X[0], X[:, :1]))]
    if hasattr(np, "unstack"):  # NumPy 2.1
        pairs.append((np.unstack(t), np.unstack(X)))
    for got, expected in pairs:
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g.numpy(), e)


# --- order statistics: ties as a sort gives them, NaN taking no part ---

def median_of_ties(x):
    return np.median(x)


def quantiles_of_ties(x):
    return np.sum(np.quantile(x, [0.25, 0.75], axis=1) * np.array([[1.0], [10.0]]))


def test_ties_get_the_gradient_as_a_stable_sort_ranks_them():
    """Of equal elements, the one a stable sort puts first has the lower rank."""
    x = np.array([2.0, 1.0, 2.0, 2.0, 3.0])  # sorted: 1, 2 (x[0]), 2 (x[2]), 2 (x[3]), 3
    np.testing.assert_array_equal(sd.grad(median_of_ties)(x), [0.0, 0.0, 1.0, 0.0, 0.0])
    # 0.25 and 0.75 of 4: ranks 0.75 and 2.25, between the first two and the last two
    m = np.array([[5.0, 5.0, 1.0, 5.0], [0.0, 0.0, 0.0, 0.0]])
    expected = np.array([[0.75, 7.5, 0.25, 2.5], [0.25, 0.75, 7.5, 2.5]])
    for grad in (sd.grad(quantiles_of_ties)(m), eager_grads(quantiles_of_ties, (m,), [0])[0]):
        np.testing.assert_allclose(grad, expected)


def median_of_a_literal(x):
    return np.median([np.sum(x), 2.0, 3.0])


def test_a_literal_list_holding_an_active_value_is_differentiated_when_compiled():
    """(The tape refuses it: NumPy converts the list of Tensors itself.)"""
    for x, expected in ((np.full(4, 0.6), 1.0), (np.full(4, 0.2), 0.0)):
        np.testing.assert_array_equal(check_grad(median_of_a_literal, (x,), eager=False),
                                      np.full(4, expected))


def nan_statistics(x):
    return (np.nansum(x) + np.nanmean(x) + np.nanmax(x) * np.nanmin(x) + np.nanprod(x)
            + np.nanstd(x) + np.nanvar(x, ddof=1) + np.nanmedian(x)
            + np.nanquantile(x, 0.3) + np.nanpercentile(x, 80.0))


def nan_statistics_along(x):
    return np.sum(np.nanmean(x, axis=1) * np.nanstd(x, axis=1) + np.nanmax(x, axis=1)
                  + np.nanprod(x, axis=1) + np.nanvar(x, axis=1) + np.nanmin(x, axis=1)
                  + np.nansum(x, axis=1) + np.nanmedian(x, axis=1)
                  + np.nanquantile(x, 0.6, axis=1)) + np.sum(np.nancumsum(x) ** 2)


def nans_where_large(x):
    return nan_statistics(np.where(x > 0.6, np.nan, x))


def test_nan_functions_on_both_engines():
    check_grad(nans_where_large, (X,))


def test_nan_entries_and_all_nan_slices_get_no_gradient():
    x = np.array([[0.5, np.nan, 1.5, -2.0], [np.nan, np.nan, np.nan, np.nan]])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        grads = (sd.grad(nan_statistics_along)(x), eager_grads(nan_statistics_along, (x,), [0])[0])
    for grad in grads:
        assert np.all(grad[:, 1] == 0) and np.all(grad[1] == 0)
        assert np.all(np.isfinite(grad)) and np.all(grad[0, [0, 2, 3]] != 0)


# --- refusals: never a wrong number ---

def quantile_of_a_level(q):
    return np.quantile(X, q)


def median_in_place(x):
    return np.median(x, overwrite_input=True)


def gradient_of_the_spacing(h):
    return np.sum(np.gradient(X[0], h))


def average_pair_by_position(x):
    return np.sum(np.average(x, 0, POSITIVE[:4], True)[0])


@pytest.mark.parametrize("f, x, compiled, match", [
    (quantile_of_a_level, 0.3, "with respect to q", "with respect to q"),
    # compiled code sorts no argument in place: NumPy finds it read-only
    (median_in_place, X.copy(), "read-only", "overwrite_input"),
    # the compiler finds an active input of no rule as it compiles
    (gradient_of_the_spacing, 0.5, "argument 2: its rule has no derivative", "spacing"),
], ids=["quantile level", "overwrite_input", "gradient spacing"])
def test_what_no_rule_models_is_refused_on_both_engines(f, x, compiled, match):
    with pytest.raises((NotImplementedError, sd.CompileError), match=compiled):
        sd.grad(f)(x)
    with pytest.raises(NotImplementedError, match=match):
        eager_grads(f, (x,), [0])


def test_average_pair_by_position_is_refused_when_it_runs():
    with pytest.raises(NotImplementedError, match="by position"):
        sd.grad(average_pair_by_position)(X)


def piecewise(x):
    return np.sum(np.piecewise(x, [x > 0], [lambda v: v ** 2, lambda v: -v]))


def test_piecewise_is_refused_on_both_engines():
    with pytest.raises(sd.CompileError):
        sd.grad(piecewise)(X)
    with pytest.raises(LookupError, match="numpy.piecewise"):
        eager_grads(piecewise, (X,), [0])
