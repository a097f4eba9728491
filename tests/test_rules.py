"""Every derivative rule against central finite differences, from one table of examples.

``EXAMPLES`` holds example calls of each primitive in the rule table; a rule
without an example fails ``test_every_rule_has_an_example``.  Arguments that are
``Arg`` specs are drawn at random from a domain where the primitive is smooth
and are differentiated; every other argument (an axis, an index, a condition)
is passed as it is.  A vjp is checked through a random cotangent ``g`` and a
random direction ``dx``:  <vjp(g), dx>  =  <g, (f(x + h dx) - f(x - h dx)) / 2h>.
Complex arguments follow TensorFlow's convention (the gradient of a real L is
dL/dRe z + i dL/dIm z, which the tape gets by conjugating the vjp), so the
inner products are the real parts of <conj(a), b>.
"""
import inspect
import math
import operator

import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import srcdiff as sd
from srcdiff.compiler.runtime import ShapeOf
from srcdiff.rules import helpers, registry, rule_of, traits_of
from srcdiff.rules.helpers import unindex
from srcdiff.rules.registry import all_rules, all_traits
from srcdiff.rules.linalg import eigh_factor, logabsdet, multi_dot, qr_factor, svd_factor
from srcdiff.rules.linalg import eig_factor, lstsq_part
from srcdiff.rules.polynomials import leading_nonzero
from srcdiff.rules.numbers import as_float64
from srcdiff.rules.elementwise import conj_method, fraction
from srcdiff.rules import guarded, reductions, zero_safe
from srcdiff.rules.nn import (elu, kink_grad, leaky_relu, log_softmax, relu, relu6, selu,
                              sigmoid, softmax, softplus, softsign)
from srcdiff.rules.scans import cumulative_logsumexp
from srcdiff.rules.differences import gradient_along, unwrapped
from srcdiff.rules.reductions import logsumexp, norm
from srcdiff.rules.shapes import cast, concatenate, item, stack
from srcdiff.ops.array_ops import sparse_read
from srcdiff.tensor import apply
from compiler_programs import check_grad
from util import module_from_source

H = 1e-6


class Arg:
    """A random float64 input of ``shape`` drawn uniformly from [lo, hi].

    ``shape=None`` is a Python float (for the math module); ``value`` fixes the
    input instead; ``matrix`` adds ``n * I`` to make square matrices well conditioned."""

    def __init__(self, *shape, lo=-2.0, hi=2.0, complex=False, matrix=False, value=None):
        self.shape = shape if shape != (None,) else None
        self.lo, self.hi, self.complex, self.matrix, self.value = lo, hi, complex, matrix, value

    def draw(self, rng):
        if self.value is not None:
            return np.array(self.value, dtype=np.float64)
        if self.shape is None:
            return float(rng.uniform(self.lo, self.hi))
        x = rng.uniform(self.lo, self.hi, self.shape)
        if self.complex:
            x = x + 1j * rng.uniform(self.lo, self.hi, self.shape)
        if self.matrix:
            x = x + self.shape[-1] * np.eye(self.shape[-1])
        return x

    def __repr__(self):
        return f"Arg{self.shape}"


def R(*shape, **kw):
    """Real in [-2, 2]."""
    return Arg(*shape, **kw)


def P(*shape):
    """Positive, away from zero."""
    return Arg(*shape, lo=0.5, hi=2.0)


def U(*shape):
    """Inside (-1, 1), away from the ends."""
    return Arg(*shape, lo=-0.8, hi=0.8)


def C(*shape):
    """Complex."""
    return Arg(*shape, complex=True)


def M(*shape):
    """Well-conditioned square matrices."""
    return Arg(*shape, lo=-1.0, hi=1.0, matrix=True)


def SPD(*shape):
    """Symmetric positive definite in the lower (and upper) triangle: diagonally dominant."""
    return Arg(*shape, lo=-0.5, hi=0.5, matrix=True)


def X(value):
    """A fixed input (zeros of prod, ties, ...)."""
    return Arg(value=value)


class Example:
    """One call of a primitive: ``fn(*args, **kwargs)``."""

    def __init__(self, args, kwargs, second_order=True):
        self.args, self.kwargs, self.second_order = args, kwargs, second_order


def ex(*args, **kwargs):
    return Example(args, kwargs)


def first_order_only(example, why):
    """An example whose rule is exact, but whose second derivative is not (``why``)."""
    example.second_order = False
    return example


def binary(x=R, y=R):
    """A binary elementwise primitive: same shapes, broadcasting, and a scalar."""
    return [ex(x(2, 3), y(2, 3)), ex(x(2, 3), y(3)), ex(x(2, 1), y(1, 3)), ex(x(), y(2))]


def unary(dom=R):
    return [ex(dom(2, 3)), ex(dom())]


def reduction(**extra):
    """A reduction: everything, one axis, negative axes, axis tuples, keepdims."""
    return [ex(R(3, 4), **extra), ex(R(3, 4), axis=0, **extra),
            ex(R(2, 3, 4), axis=(0, 2), **extra), ex(R(3, 4), axis=-1, keepdims=True, **extra),
            ex(R(3, 4), keepdims=True, **extra)]


def scalar(dom=R):
    return [ex(Arg(None, lo=dom().lo, hi=dom().hi))]


EXAMPLES = {
    # arithmetic
    np.add: binary(),
    np.subtract: binary(),
    np.multiply: binary() + [ex(C(2, 3), C(3))],
    np.true_divide: binary(R, P) + [ex(C(3), C(3))],
    np.power: binary(P, R) + [ex(C(3), X([2.0, 3.0, 0.5]))],
    np.float_power: binary(P, R),
    np.remainder: binary(R, P),
    np.fmod: binary(R, P),
    np.maximum: binary(),
    np.fmax: binary() + [ex(X([1.0, np.nan, -0.5]), X([np.nan, 2.0, 0.5])),
                       ex(R(2, 3), X([np.nan, 0.5, np.nan]))],  # a NaN is ignored
    np.minimum: binary(),
    np.fmin: binary() + [ex(X([1.0, np.nan, -0.5]), X([np.nan, 2.0, 0.5])),
                       ex(R(2, 3), X([np.nan, 0.5, np.nan]))],  # a NaN is ignored
    np.arctan2: binary(),
    np.hypot: binary(),
    np.logaddexp: binary(),
    np.logaddexp2: binary(),
    np.negative: unary() + [ex(C(3))],
    np.positive: unary(),
    np.absolute: unary() + [ex(C(2, 3))],
    np.fabs: unary(),
    np.sign: unary(),
    np.square: unary() + [ex(C(3))],
    np.sqrt: unary(P) + [ex(C(3))],
    np.cbrt: unary(P),
    np.reciprocal: unary(P),
    # transcendental
    np.exp: unary() + [ex(C(3))],
    np.exp2: unary(),
    np.expm1: unary(),
    np.log: unary(P) + [ex(C(3))],
    np.log2: unary(P),
    np.log10: unary(P),
    np.log1p: unary(P),
    np.sin: unary() + [ex(C(3))],
    np.cos: unary() + [ex(C(3))],
    np.tan: unary(U) + [ex(C(3))],
    np.arcsin: unary(U),
    np.arccos: unary(U),
    np.arctan: unary(),
    np.sinh: unary(),
    np.cosh: unary(),
    np.tanh: unary() + [ex(C(3))],
    np.arcsinh: unary(),
    np.arccosh: [ex(Arg(2, 3, lo=1.5, hi=3.0))],
    np.arctanh: unary(U),
    np.deg2rad: unary(),
    np.radians: unary(),
    np.rad2deg: unary(),
    np.degrees: unary(),
    np.conjugate: unary() + [ex(C(3))],
    np.real: unary() + [ex(C(3))],
    np.imag: unary() + [ex(C(3))],
    # reductions
    np.sum: reduction(),
    np.mean: reduction(),
    np.prod: reduction() + [
        first_order_only(ex(X([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.0, -2.0, 3.0]]), axis=1),
                         "d2/dxdy of x*y*z at x = y = 0 needs the product of the others"),
        ex(X([[0.0, 2.0, 3.0], [0.5, 0.0, 1.5]]), axis=0, keepdims=True),
        ex(X([[0.0, 2.0], [1.5, 3.0]]))],
    np.max: reduction(),
    np.min: reduction(),
    np.amax: reduction(),
    np.amin: reduction(),
    np.var: reduction() + [ex(R(3, 4), axis=1, ddof=1)],
    np.std: reduction() + [ex(R(3, 4), axis=1, ddof=1)],
    np.average: reduction() + [ex(R(3, 4), 1, P(4)), ex(R(3, 4), 0, P(3, 4)),
                               ex(R(2, 3, 4), (0, 2), P(2, 4), keepdims=True)],
    np.cumsum: [ex(R(3, 4)), ex(R(3, 4), axis=1), ex(R(3, 4), axis=-2)],
    np.trace: [ex(R(3, 3)), ex(R(3, 4), offset=1), ex(R(2, 3, 3), axis1=1, axis2=2),
               ex(R(3, 4, 2), offset=-1, axis1=1, axis2=0)],
    logsumexp: reduction(),
    norm: reduction() + [ex(C(3, 2), axis=1)],
    np.linalg.norm: [ex(R(5)), ex(R(3, 4)), ex(R(3, 4), axis=1), ex(R(3, 4), "fro"),
                     ex(R(2, 3, 4), axis=(0, 2), keepdims=True), ex(R(5), 1), ex(R(5), 3),
                     ex(R(3, 4), np.inf, axis=0), ex(R(3, 4), -np.inf, axis=1), ex(C(3)),
                     ex(R(3, 4), 1, axis=(1,)), ex(R(3, 4), 2), ex(R(4, 3), -2),
                     ex(R(3, 4), "nuc"), ex(R(2, 3, 4), 2, axis=(2, 0)),
                     ex(R(2, 3, 4), "nuc", axis=(1, 2), keepdims=True), ex(R(3, 4), 1),
                     ex(R(3, 4), -1), ex(R(4, 3), np.inf), ex(R(2, 3, 4), -np.inf, axis=(0, 1))],
    np.ptp: reduction(),
    np.cumprod: [ex(R(3, 4)), ex(R(3, 4), axis=1), ex(R(2, 3), -2),
                 ex(X([[1.5, 0.0, 2.0, -1.0], [0.0, 0.5, 0.0, 3.0]]), axis=1)],
    np.diff: [ex(R(5)), ex(R(3, 4), 2, 0), ex(R(3, 4), 1, 1, R(3, 2), R()),
              ex(R(4), 2, 0, R(), R(2)), ex(R(3), 0)],
    # products and linear algebra
    np.matmul: [ex(R(2, 3), R(3, 4)), ex(R(5, 2, 3), R(3, 4)), ex(R(2, 1, 2, 3), R(3, 3, 2)),
                ex(R(3), R(3, 4)), ex(R(2, 3), R(3)), ex(R(3), R(3)), ex(R(4, 3), R(2, 3, 5)),
                ex(C(2, 3), C(3, 2))],
    np.dot: [ex(R(2, 3), R(3, 4)), ex(R(3), R(3, 4)), ex(R(2, 3), R(3)), ex(R(3), R(3)),
             ex(R(), R(2, 3)), ex(R(2, 3), R()), ex(R(2, 4, 3), R(5, 3, 2))],
    np.vdot: [ex(R(3), R(3)), ex(R(2, 3), R(3, 2))],
    np.outer: [ex(R(3), R(4)), ex(R(2, 2), R(3))],
    np.inner: [ex(R(3), R(3)), ex(R(2, 3), R(4, 3))],
    np.tensordot: [ex(R(2, 3, 4), R(3, 4, 5)), ex(R(2, 3), R(3, 4), 1),
                   ex(R(2, 3, 4), R(4, 2, 5), ([0, 2], [1, 0])), ex(R(2), R(3), 0),
                   ex(R(3, 2), R(3, 4), axes=(0, 0))],
    np.einsum: [ex("ij,jk->ik", R(2, 3), R(3, 4)), ex("ij->j", R(2, 3)),
                ex("i,i->", R(3), R(3)), ex("bij,bjk->bik", R(2, 2, 3), R(2, 3, 2)),
                ex("ij,jk", R(2, 3), R(3, 4)), ex("ij,kj->ki", R(2, 3), R(4, 3)),
                ex("i,j,k->ijk", R(2), R(3), R(2)), ex("ii->", R(3, 3)), ex("ii->i", R(3, 3)),
                ex("ii", R(3, 3)), ex("iij,jk->ik", R(2, 2, 3), R(3, 2)), ex("iik->", R(2, 2, 3)),
                ex("i i j , j->", R(2, 2, 3), R(3)), ex("...ij,...jk->...ik", R(2, 2, 3), R(3, 4)),
                ex("i...,i...->...", R(3, 2), R(3, 1)), ex("...i,...i", R(2, 3), R(3)),
                ex("ij...,jk...", R(2, 3), R(3, 2, 2))],
    np.kron: [ex(R(2, 3), R(3, 2)), ex(R(3), R(2, 2)), ex(R(2), R(3)), ex(R(2, 1, 2), R(2, 3))],
    multi_dot: [ex(R(2, 3), R(3, 4)), ex(R(3), R(3, 4), R(4, 2), R(2)),
                ex(R(2, 3), R(3, 3), R(3, 2)), ex(R(3), R(3, 2))],
    np.linalg.inv: [ex(M(3, 3)), ex(M(2, 3, 3))],
    np.linalg.det: [ex(M(3, 3)), ex(M(2, 3, 3))],
    logabsdet: [ex(M(3, 3)), ex(M(2, 3, 3)), ex(X([[0.5, 2.0], [1.0, -0.5]]))],
    np.linalg.solve: [ex(M(3, 3), R(3)), ex(M(3, 3), R(3, 2)), ex(M(2, 3, 3), R(2, 3, 4))],
    np.linalg.cholesky: [ex(SPD(3, 3)), ex(SPD(2, 3, 3)), ex(SPD(3, 3), upper=True)],
    # random matrices: eigh reads one triangle, and distinct eigenvalues are almost sure
    eigh_factor: [ex(M(3, 3), 0), ex(M(3, 3), 1), ex(M(2, 3, 3), 1, "U"), ex(R(3, 3), 1)],
    qr_factor: [ex(R(4, 3), 0), ex(R(4, 3), 1), ex(M(3, 3), 0, "complete"),
                ex(M(2, 3, 3), 1)],
    svd_factor: [ex(R(4, 3), 0, False), ex(R(4, 3), 1), ex(R(3, 4), 2, False),
                 ex(R(3, 3), 0), ex(R(3, 3), 2), ex(R(2, 3, 4), 1, hermitian=False),
                 ex(R(2, 4, 3), 2, full_matrices=False)],
    # activations
    sigmoid: unary(),
    softplus: unary(),
    softsign: unary(),
    # TensorFlow's kernels: a zero adjoint gives zero (tests/test_tape.py checks that)
    guarded.sqrt: unary(P),
    guarded.rsqrt: unary(P),
    guarded.reciprocal: unary(P),
    relu: unary(),
    relu6: [ex(Arg(2, 3, lo=-2.0, hi=8.0)), ex(R())],
    leaky_relu: [ex(R(2, 3)), ex(R(2, 3), alpha=0.3)],
    kink_grad: [ex(R(2, 3), R(2, 3)), ex(R(2, 3), Arg(2, 3, lo=-2.0, hi=8.0), 6.0),
                ex(R(2, 3), R(2, 3), alpha=0.3)],
    elu: unary(),
    selu: unary(),
    # TensorFlow's zero-safe ops, away from the zeros where their derivatives are conventions
    # (not finite differences: d(x log y)/dx is 0 at x = 0), which test_ops_activations pins
    zero_safe.divide_no_nan: binary(R, P),
    zero_safe.multiply_no_nan: binary(),
    zero_safe.xlogy: binary(R, P),
    zero_safe.xdivy: binary(R, P),
    zero_safe.xlog1py: binary(R, P),
    cumulative_logsumexp: [ex(R(5), 0), ex(R(3, 4), 1), ex(R(3, 4), -2),
                           ex(X([-1000.0, 0.0, 3.0, 1000.0]), 0)],
    softmax: [ex(R(2, 3)), ex(R(2, 3), axis=0)],
    log_softmax: [ex(R(2, 3)), ex(R(2, 3), axis=0)],
    # moving elements around
    np.reshape: [ex(R(2, 3), (3, 2)), ex(R(2, 3), -1), ex(R(6), (2, 1, 3)),
                 ex(R(2, 3, 2), (3, 4), order="F"), ex(R(2, 3), (3, 2), "F"),
                 ex(R(2, 3), (6,), order="A")],
    np.ravel: [ex(R(2, 3)), ex(R(2, 3), "F"), ex(R(3, 2), order="K")],
    np.squeeze: [ex(R(1, 3, 1)), ex(R(1, 3, 1), axis=0)],
    np.expand_dims: [ex(R(2, 3), 1), ex(R(2, 3), (0, 3))],
    np.atleast_1d: [ex(R())],
    np.atleast_2d: [ex(R(3))],
    np.atleast_3d: [ex(R(3))],
    np.transpose: [ex(R(2, 3)), ex(R(2, 3, 4), (1, 2, 0)), ex(R(2, 3, 4), axes=(2, 0, 1))],
    np.swapaxes: [ex(R(2, 3, 4), 0, 2)],
    np.moveaxis: [ex(R(2, 3, 4), 0, -1), ex(R(2, 3, 4), (0, 1), (2, 0))],
    np.broadcast_to: [ex(R(3), (2, 3)), ex(R(2, 1), (4, 2, 3)), ex(R(), 5)],
    # made of values: a fill, the bounds of a linspace, the start and step of a range
    np.full: [ex(5, R()), ex((2, 3), R(3))],
    np.full_like: [ex(np.ones((2, 3)), R()), ex(np.ones((2, 3)), R(3))],
    np.linspace: [ex(R(), R(), 5), ex(R(2), R(2), 4, endpoint=False),
                  ex(R(2, 1), R(3), 3, axis=1)],
    np.arange: [ex(R(), 3.0, 0.5), ex(0.0, 2.0, P())],
    np.flip: [ex(R(2, 3)), ex(R(2, 3), 1)],
    np.fliplr: [ex(R(2, 3))],
    np.flipud: [ex(R(2, 3))],
    np.roll: [ex(R(5), 2), ex(R(3, 4), (1, -1), (0, 1)), ex(R(3, 4), 1)],
    np.tile: [ex(R(3), 2), ex(R(2, 3), (2, 1, 2))],
    np.rot90: [ex(R(2, 3)), ex(R(2, 3, 4), 3, (2, 0))],
    np.append: [ex(R(2, 3), R(4)), ex(R(2, 3), R(1, 3), 0), ex(R(3), R()), ex(R(2, 2), R(2, 1), axis=1)],
    np.triu: [ex(R(3, 3)), ex(R(3, 4), 1)],
    np.tril: [ex(R(3, 3)), ex(R(3, 4), -1)],
    np.copy: [ex(R(2, 3))],
    np.diag: [ex(R(3)), ex(R(3), 1), ex(R(3, 4)), ex(R(4, 3), -1)],
    np.diagonal: [ex(R(3, 4)), ex(R(3, 4), 1), ex(R(2, 3, 4), -1, 2, 1)],
    np.pad: [ex(R(2, 3), 1), ex(R(2, 3), ((1, 0), (2, 3))),
             ex(R(2, 3), (1, 2), constant_values=5), ex(R(2, 3), 2, "edge"),
             ex(R(3, 4), ((1, 2), (3, 0)), "reflect"), ex(R(3, 4), ((2, 1), (1, 4)), "symmetric"),
             ex(R(3, 4), ((4, 1), (2, 5)), "wrap"), ex(R(3), 5, "reflect"),
             ex(R(2, 3), ((1, 0), (0, 2)), "constant", constant_values=((1, 2), (3, 4)))],
    np.interp: [ex(R(6), X([-1.5, -0.5, 0.3, 1.0, 1.7]), R(5)),
                ex(R(2, 3), X([-1.5, -0.5, 0.3, 1.0, 1.7]), R(5), R(), R()),
                ex(Arg(None), X([-1.0, 0.0, 1.0]), R(3)),
                ex(R(2, 3), [-1.5, 0.0, 1.7], [0.5, -1.0, 2.0])],  # lists: knots as literals
    np.sinc: unary() + [ex(X([0.0, 1e-4, -3e-4, -0.5, 2.0]))],
    np.nan_to_num: [ex(X([1.0, np.nan, -2.0])),
                    ex(X([[1.0, np.nan], [np.inf, -np.inf]]), True, R(), R(), R())],
    np.float64: [ex(R(3)), ex(R())],
    np.asarray: [ex(R(2, 3)), ex(R(3), float)],
    np.repeat: [ex(R(3), 2), ex(R(2, 3), [1, 0, 2], axis=1), ex(R(2, 3), 2, axis=0)],
    np.sort: [ex(R(5)), ex(R(3, 4), axis=0), ex(R(3, 4), axis=None)],
    np.take_along_axis: [ex(R(3, 4), np.array([[0, 3, 3], [1, 0, 2], [2, 2, 2]]), axis=1),
                         ex(R(3, 4), np.array([[2, 0, 1, 1]]), axis=0),
                         ex(R(6), np.array([5, 0, 5]), axis=None)],
    operator.getitem: [ex(R(4, 3), (slice(1, 3), 0)), ex(R(4), np.array([0, 2, 2])),
                       ex(R(4, 3), (Ellipsis, None, np.array([1, 1]))),
                       ex(R(4, 3), np.array([True, False, True, True])), ex(R(4, 3), -1),
                       ex(R(4, 3, 2), (np.array([0, 2, 0]), slice(None), np.array([1, 0, 1])))],
    np.take: [ex(R(5), [0, 4, 4]), ex(R(3, 4), [2, 0], axis=1), ex(R(2, 3), [[5, 0]])],
    np.where: [ex(np.array([True, False, True]), R(3), R(3)),
               ex(np.array([[True], [False]]), R(2, 3), R(3))],
    np.clip: [ex(R(2, 4), R(4, lo=-1.5, hi=-0.5), R(2, 4, lo=0.5, hi=1.5)),
              ex(R(5), -0.5, 0.5), ex(R(5), None, 0.5), ex(R(5), -0.5, None),
              # crossed bounds: NumPy's minimum(maximum(a, lo), hi) is hi everywhere
              ex(R(2, 4), R(4, lo=0.5, hi=1.5), R(2, 4, lo=-1.5, hi=-0.5))],
    concatenate: [ex(R(2, 3), R(1, 3)), ex(R(2, 3), R(2, 2), R(2, 1), axis=1),
                  ex(R(2, 3), R(2, 3), axis=-1), ex(R(2, 3), R(4), R(), axis=None)],
    stack: [ex(R(3), R(3)), ex(R(2, 3), R(2, 3), R(2, 3), axis=1), ex(R(2), R(2), axis=-1)],
    cast: [ex(R(3), np.float64)],
    sliding_window_view: [ex(R(6), 3), ex(R(4, 5), (2, 3)), ex(R(4, 5), 2, axis=0)],
    np.bincount: [ex(np.array([0, 3, 1, 1, 0]), R(5)), ex(np.array([2, 0]), R(2), 4)],
    fraction: [ex(R(3, 4)), ex(X([-2.5, -0.25, 0.75, 3.5]))],
    item: [ex(R(1)), ex(R(2, 3), 4), ex(R(2, 3), 1, 2), ex(R(2, 3), (0, 1))],
    sd.constant.__numpy__: [ex(R(3))],  # its shape= forms: test_compiler_sd_ops.py
    sd.convert_to_tensor.__numpy__: [ex(R(3)), ex(R(2, 3), np.float64)],
    unindex: [ex(R(3), np.array([0, 2, 2]), np.zeros(4)),
              ex(R(2, 2), (Ellipsis, slice(1, 3)), np.zeros((2, 4)))],
    sparse_read: [ex(R(4, 2), np.array([3, 0, 3]))],
    # the math module and builtins, on Python floats
    math.sin: scalar(), math.cos: scalar(), math.tan: scalar(U), math.exp: scalar(),
    math.expm1: scalar(), math.log: scalar(P), math.log1p: scalar(P), math.log2: scalar(P),
    math.log10: scalar(P), math.sqrt: scalar(P), math.tanh: scalar(), math.sinh: scalar(),
    math.cosh: scalar(), math.atan: scalar(), math.asin: scalar(U), math.acos: scalar(U),
    math.asinh: scalar(), math.atanh: scalar(U), math.erf: scalar(), math.erfc: scalar(),
    math.fabs: scalar(),
    math.acosh: [ex(Arg(None, lo=1.5, hi=3.0))],
    math.pow: [ex(Arg(None, lo=0.5, hi=2.0), Arg(None))],
    math.atan2: [ex(Arg(None), Arg(None))],
    math.hypot: [ex(Arg(None), Arg(None))],
    float: scalar(), as_float64: scalar(),
}
# Conversions to NumPy leave the tape (np.asarray(t) is t.numpy(), as in TensorFlow),
# and scipy's logsumexp runs NumPy on raw arrays: compiled code alone differentiates them.
# NumPy hands these no Tensor (np.full copies the fill into an array, np.arange takes
# numbers): the tape records no such call, and TensorFlow's fill and range have their ops
LEAVE_THE_TAPE = {np.float64, np.asarray, np.full, np.full_like, np.arange, item}

if hasattr(np.linalg, "svdvals"):  # NumPy 2
    EXAMPLES[np.linalg.svdvals] = [ex(R(3, 4)), ex(R(2, 3, 3))]

EIGENVECTORS = "the second derivative of an eigenvalue reads the eigenvectors', which is refused"
EXAMPLES.update({
    # products of vectors; pseudo-inverses, eigenvalues and least squares of full rank
    np.cross: [ex(R(3), R(3)), ex(R(2, 3), R(3)), ex(R(4, 2), R(4, 3)), ex(R(3), R(2)),
               ex(R(2, 2), R(2)), ex(R(3, 2), R(2, 3), axisa=0, axisb=1, axisc=0),
               ex(R(3, 4), R(3, 1), axis=0), ex(R(2, 4), R(3, 4), 0, 0, 0)],
    np.linalg.pinv: [ex(R(3, 3)), ex(R(4, 3)), ex(R(3, 5)), ex(R(2, 4, 3)),
                     ex(M(3, 3), hermitian=True), ex(R(3, 4), 1e-10)],
    np.linalg.eigvalsh: [ex(M(3, 3)), ex(M(2, 3, 3), "U")],
    np.linalg.eigvals: [first_order_only(ex(R(3, 3)), EIGENVECTORS),
                        first_order_only(ex(M(2, 3, 3)), EIGENVECTORS)],
    eig_factor: [first_order_only(ex(R(4, 4), 0), EIGENVECTORS)],
    lstsq_part: [ex(R(5, 3), R(5), 0), ex(R(5, 3), R(5, 2), 0), ex(R(3, 5), R(3), 0),
                 ex(R(5, 3), R(5), 1), ex(R(5, 3), R(5, 2), 1), ex(R(4, 3), R(4), 3),
                 ex(M(3, 3), R(3, 2), 0, 1e-8)],
    # polynomials and convolutions
    np.polyval: [ex(R(4), R(5)), ex(R(3), R()), ex(R(1), R(2, 3)), ex(R(4), R(2, 3)),
                 ex(R(3), Arg(None))],
    np.vander: [ex(R(4)), ex(R(3), 5), ex(R(4), 3, True), ex(R(3), 1), ex(R(3), N=0)],
    np.convolve: [ex(R(5), R(3)), ex(R(3), R(5)), ex(R(5), R(3), "same"), ex(R(4), R(6), "same"),
                  ex(R(5), R(2), "valid"), ex(R(2), R(5), "valid"), ex(R(4), R(4), mode=1),
                  ex(R(), R(3))],
    np.correlate: [ex(R(5), R(3)), ex(R(3), R(5)), ex(R(4), R(6), "same"),
                   ex(R(6), R(3), "same"), ex(R(3), R(4), "same"), ex(R(5), R(2), "full"),
                   ex(R(2), R(5), mode="full")],
    leading_nonzero: [ex(R(3)), ex(R())],
    # Fourier transforms: n cuts or pads the input, norm scales
    np.fft.fft: [ex(R(5)), ex(C(4)), ex(R(3, 4), 6, 0), ex(C(3, 5), 3),
                 ex(R(2, 4), None, 0, "ortho"), ex(R(4), norm="forward")],
    np.fft.ifft: [ex(R(5)), ex(C(4)), ex(R(3, 4), 6, 0), ex(C(3, 5), 3),
                  ex(R(2, 4), None, 0, "ortho"), ex(R(4), norm="forward")],
    np.fft.rfft: [ex(R(6)), ex(R(5)), ex(R(3, 4), 7, 0), ex(R(3, 6), 4, norm="ortho"),
                  ex(R(2, 5), None, 0, "forward")],
    np.fft.irfft: [ex(C(4)), ex(R(4)), ex(C(4), 7), ex(R(3, 4), 4, 0, "ortho"),
                   ex(C(5, 3), 3, norm="forward"), ex(R(2, 4), 10), ex(R(5), 3)],
})
if hasattr(np.linalg, "vecdot"):  # NumPy 2's array-API spellings
    EXAMPLES.update({
        np.linalg.matmul: [ex(R(2, 3), R(3, 4)), ex(R(3), R(2, 3, 4))],
        np.linalg.outer: [ex(R(3), R(4))],
        np.vecdot: [ex(R(3), R(3)), ex(R(2, 3), R(3)), ex(R(3, 2), R(3, 2), axis=0)],
        np.matrix_transpose: [ex(R(2, 3)), ex(R(4, 2, 3))],
        np.linalg.matrix_transpose: [ex(R(2, 3)), ex(R(4, 2, 3))],
        np.linalg.diagonal: [ex(R(3, 4)), ex(R(2, 3, 4), offset=1), ex(R(4, 3), offset=-2)],
        np.linalg.trace: [ex(R(3, 3)), ex(R(2, 3, 4), offset=1), ex(R(4, 3), offset=-1)],
    })
if hasattr(np, "matvec"):  # NumPy 2.2
    EXAMPLES.update({
        np.matvec: [ex(R(2, 3), R(3)), ex(R(4, 2, 3), R(3)), ex(R(2, 3), R(5, 3))],
        np.vecmat: [ex(R(2), R(2, 3)), ex(R(4, 2), R(2, 3)), ex(R(2), R(5, 2, 3))],
    })

try:  # scipy is optional: its rules are registered only if it imports
    from scipy import special
    from srcdiff.rules.scipy_special import polygamma
    from srcdiff.rules import gamma
except ImportError:
    pass
else:
    LEAVE_THE_TAPE.add(special.logsumexp)
    EXAMPLES.update({
        special.expit: unary(), special.logit: unary(lambda *s: Arg(*s, lo=0.1, hi=0.9)),
        special.erf: unary(), special.erfc: unary(), special.gammaln: unary(P),
        special.digamma: unary(P), gamma.lgamma: unary(P), gamma.digamma: unary(P),
        polygamma: [ex(1, P(2, 3)), ex(2, P(3))],
        special.xlogy: binary(R, P) + [ex(X([0.0, 1.0, -2.0]), P(3))],
        special.logsumexp: reduction() + [ex(R(3, 4), 1, P(3, 4)), ex(R(3, 4), None, P(4)),
                                          ex(R(2, 3), 0, P(2, 1), keepdims=True)],
        np.i0: unary(),  # its derivative is scipy's iv(1, x)
        special.iv: [ex(2.5, P(2, 3)), ex(np.array([0.0, 1.0, 2.0]), R(3))],  # real: z > 0
    })

# Statistics, scans, differences and moves of elements.  NaN takes no part in the
# nan-functions (an all-NaN slice, whose finite differences are nan: see
# tests/test_numpy_functions_stats.py); ties of order statistics have no derivative.
NAN = np.nan
WITH_NAN = X([[1.0, NAN, 2.0, -0.5], [0.3, 1.2, NAN, 0.8], [NAN, -1.5, 0.2, 0.6]])


def nan_reduction(**extra):
    return reduction(**extra) + [ex(WITH_NAN, **extra), ex(WITH_NAN, axis=1, **extra),
                                 ex(WITH_NAN, axis=0, keepdims=True, **extra)]


UNWRAPPED = dict(lo=-4.0, hi=4.0)  # jumps of more than pi: unwrap adds periods
KEPT = np.array([[True, False, True, True], [False, True, True, False],
                 [True, True, False, True]])  # where=: each row and column keeps some
EXAMPLES.update({
    conj_method: [ex(R(3)), ex(C(2, 3))],
    reductions.sum_where: [ex(R(3, 4), 0.0, KEPT), ex(R(3, 4), R(), KEPT[0], 0),
                           ex(R(3, 4), 2.0, KEPT, 1, None, True)],
    reductions.mean_where: [ex(R(3, 4), KEPT), ex(R(3, 4), KEPT[:1], 1),
                            ex(R(3, 4), KEPT, 0, None, True)],
    np.nansum: nan_reduction(), np.nanmean: nan_reduction(), np.nanmax: nan_reduction(),
    np.nanmin: nan_reduction(), np.nanprod: nan_reduction(),
    np.nanvar: nan_reduction() + [ex(WITH_NAN, axis=1, ddof=1)],
    np.nanstd: nan_reduction() + [ex(WITH_NAN, axis=0, ddof=1)],
    np.median: reduction() + [ex(R(5)), ex(R(4, 3), axis=0)],
    np.nanmedian: nan_reduction() + [ex(R(5))],
    np.quantile: [ex(R(3, 4), 0.3), ex(R(3, 4), [0.1, 0.5, 1.0], axis=1),
                  ex(R(2, 3, 4), 0.7, axis=(0, 2), keepdims=True),
                  ex(R(3, 4), np.array([[0.2], [0.8]]), axis=0, method="hazen"),
                  ex(R(3, 4), 0.4, 1, method="lower"), ex(R(5), 0.5, method="midpoint"),
                  ex(R(3, 4), 0.6, axis=1, method="inverted_cdf",
                     weights=np.array([0.5, 1.0, 2.0, 1.0]))],
    np.percentile: [ex(R(3, 4), 30.0), ex(R(3, 4), [10.0, 50.0], axis=0, keepdims=True),
                    ex(R(6), 75.0, method="weibull")],
    np.nanquantile: [ex(R(3, 4), 0.5), ex(WITH_NAN, [0.25, 0.6], axis=1),
                     ex(WITH_NAN, 0.4, method="nearest")],
    np.nanpercentile: [ex(R(3, 4), 40.0, 0), ex(WITH_NAN, [20.0, 90.0], axis=0, keepdims=True)],
    np.nancumsum: [ex(R(3, 4)), ex(R(3, 4), axis=0), ex(WITH_NAN, 1)],
    np.nancumprod: [ex(R(3, 4)), ex(R(3, 4), axis=1), ex(WITH_NAN), ex(WITH_NAN, 0)],
    gradient_along: [ex(R(5), 1.0, 0, 1), ex(R(3, 4), 0.5, 1, 2), ex(R(2), 1.0, 0, 1),
                     ex(R(3, 4), np.array([0.0, 0.4, 1.0]), 0, 1),
                     ex(R(3, 5), np.array([0.0, 1.0, 1.5, 3.0, 3.2]), -1, 2),
                     ex(R(2, 3, 4), 2.0, 1, 2)],
    np.gradient: [ex(R(5)), ex(R(5), 0.5, edge_order=2), ex(R(3, 4), axis=0),
                  ex(R(3, 4), np.array([0.0, 0.5, 1.5, 2.0]), axis=1, edge_order=2)],
    unwrapped: [ex(Arg(6, **UNWRAPPED), None, -1, 2 * np.pi),
                ex(Arg(3, 5, **UNWRAPPED), None, 0, Arg(lo=2.0, hi=4.0)),
                ex(Arg(5, **UNWRAPPED), R(), -1, 3.0), ex(Arg(2, 5, **UNWRAPPED), 2.0, 1, P())],
    np.copysign: binary(),
    np.ldexp: [ex(R(2, 3), np.array([1, -2, 0])), ex(R(3), 2), ex(R(), np.array([[1], [3]]))],
    np.real_if_close: [ex(R(2, 3)), ex(C(3))],
    np.angle: [ex(R(2, 3)), ex(C(3)), ex(C(2, 2), True)],
    np.partition: [ex(R(5), 2), ex(R(3, 4), [0, 2], axis=0), ex(R(3, 4), 1),
                   ex(R(2, 5), 3, axis=None)],
    np.diagflat: [ex(R(3)), ex(R(2, 2), 1), ex(R(3), -2)],
    np.rollaxis: [ex(R(2, 3, 4), 2), ex(R(2, 3, 4), 0, 3), ex(R(2, 3, 4), -1, 1),
                  ex(R(2, 3, 4), 1, -2)],
    np.insert: [ex(R(5), 2, R()), ex(R(3, 4), [1, 3], R(2)), ex(R(3, 4), 1, R(4), axis=0),
                ex(R(3, 4), [0, 2], R(3, 1), axis=1), ex(R(3, 4), 2, R(3), axis=1),
                ex(R(4), slice(1, 3), R(2))],
    np.delete: [ex(R(5), 2), ex(R(3, 4), [0, 2], axis=1), ex(R(3, 4), slice(0, 2), 0),
                ex(R(2, 3), np.array([True, False, True, False, False, True]))],
    np.resize: [ex(R(5), 8), ex(R(2, 3), (3, 4)), ex(R(2, 3), 4)],
    np.compress: [ex(np.array([True, False, True]), R(3, 2), axis=0),
                  ex([0, 1, 1, 0, 1], R(5)), ex([True, True], R(2, 3), 1)],
    np.extract: [ex(np.array([[True, False, True], [False, True, True]]), R(2, 3))],
})
if hasattr(np, "cumulative_sum"):  # NumPy 2.1
    EXAMPLES.update({
        np.astype: [ex(R(3), np.float64), ex(R(2, 3), np.complex128),
                    ex(R(3), np.float64, copy=False)],
        np.cumulative_sum: [ex(R(5)), ex(R(3, 4), axis=1), ex(R(4), include_initial=True),
                            ex(R(3, 4), axis=0, include_initial=True)],
        np.cumulative_prod: [ex(R(5)), ex(R(3, 4), axis=1),
                             ex(R(3, 4), axis=0, include_initial=True),
                             ex(X([[1.5, 0.0, 2.0], [0.5, -1.0, 3.0]]), axis=1,
                                include_initial=True)],
    })


def builtin_rules():
    """The rules srcdiff ships (not those a user or a test registers)."""
    return {fn: rule for fn, rule in all_rules().items()
            if not hasattr(fn, "srcdiff_user_rule")}


def cases(second_order=False):
    for fn, examples in EXAMPLES.items():
        for k, e in enumerate(examples):
            if second_order and not (e.second_order and second_order_applies(fn, e.args)):
                continue
            name = rule_of(fn).name if rule_of(fn) else repr(fn)
            yield pytest.param(fn, e.args, e.kwargs, id=f"{name}-{k}")


def second_order_applies(fn, args):
    """The tape runs on arrays: not on the math module's floats; real values only."""
    specs = [a for a in args if isinstance(a, Arg)]
    return all(a.shape is not None and not a.complex for a in specs)


def test_every_rule_has_an_example():
    missing = [rule.name for fn, rule in builtin_rules().items() if fn not in EXAMPLES]
    assert not missing, f"rules without an example in EXAMPLES: {missing}"


def draw(args, rng):
    return [a.draw(rng) if isinstance(a, Arg) else a for a in args]


def random_like(value, rng):
    out = rng.standard_normal(np.shape(value))
    if np.iscomplexobj(value):
        out = out + 1j * rng.standard_normal(np.shape(value))
    return out if np.ndim(value) else out.item() if isinstance(value, float) else out


def inner(a, b):
    """The real inner product <a, b> = Re sum(conj(a) b)."""
    return float(np.sum(np.real(np.conj(np.asarray(a)) * np.asarray(b))))


def differentiated(fn, args):
    """The positions of the Arg inputs; each must have a vjp."""
    rule = rule_of(fn)
    positions = [i for i, a in enumerate(args) if isinstance(a, Arg)]
    for i in positions:
        assert rule.vjp(i) is not None, f"{rule.name} has no vjp for input {i}"
    return positions


def shifted(values, i, dx, step):
    return [v + step * dx if k == i else v for k, v in enumerate(values)]


@pytest.mark.parametrize("fn, args, kwargs", list(cases()))
def test_vjp_matches_finite_differences(fn, args, kwargs):
    rng = np.random.default_rng(0)
    values = draw(args, rng)
    rule = rule_of(fn)
    ans = fn(*values, **kwargs)
    g = random_like(ans, rng)
    for i in differentiated(fn, args):
        dx = random_like(values[i], rng)
        # TensorFlow's convention for complex values: the tape conjugates the vjp.
        d = np.conj(rule.vjp(i)(np.conj(g), ans, *values, **kwargs))
        d = np.asarray(d)  # densifies IndexedSlices
        if not np.iscomplexobj(values[i]):
            d = np.real(d)
        assert np.shape(d) == np.shape(values[i]), f"vjp {i} has the wrong shape"
        slope = (np.asarray(fn(*shifted(values, i, dx, H), **kwargs))
                 - np.asarray(fn(*shifted(values, i, dx, -H), **kwargs))) / (2 * H)
        assert inner(d, dx) == pytest.approx(inner(g, slope), rel=1e-5, abs=1e-7), f"input {i}"


def gradient(fn, values, kwargs, positions, weights):
    """The tape's gradient of sum(weights * fn(...)) at ``values`` w.r.t. ``positions``."""
    tensors = [sd.constant(v) if k in positions else v for k, v in enumerate(values)]
    with sd.GradientTape() as tape:
        tape.watch([tensors[k] for k in positions])
        y = sd.reduce_sum(weights * apply(fn, *tensors, **kwargs))
    grads = tape.gradient(y, [tensors[k] for k in positions])
    return [np.zeros(np.shape(values[k])) if d is None else np.asarray(d)
            for k, d in zip(positions, grads)]


@pytest.mark.parametrize("fn, args, kwargs", list(cases(second_order=True)))
def test_rule_is_differentiable_on_the_tape(fn, args, kwargs):
    """Run the rules on Tensors under an outer tape: the Hessian-vector product of
    sum(w * f) against finite differences of the tape's first derivative."""
    rng = np.random.default_rng(1)
    values = draw(args, rng)
    positions = [i for i, a in enumerate(args) if isinstance(a, Arg)]
    weights = random_like(fn(*values, **kwargs), rng)
    v = [random_like(values[k], rng) for k in positions]
    dx = [random_like(values[k], rng) for k in positions]

    xs = [sd.constant(values[k]) for k in positions]
    tensors = list(values)
    for k, x in zip(positions, xs):
        tensors[k] = x
    with sd.GradientTape() as outer:
        outer.watch(xs)
        with sd.GradientTape() as tape:
            tape.watch(xs)
            y = sd.reduce_sum(weights * apply(fn, *tensors, **kwargs))
        grads = tape.gradient(y, xs)
        z = sum(sd.reduce_sum(vk * sd.convert_to_tensor(d)) for vk, d in zip(v, grads)
                if d is not None)
    hv = outer.gradient(z, xs) if isinstance(z, sd.Tensor) else [None] * len(xs)
    lhs = sum(inner(0 if h is None else h, d) for h, d in zip(hv, dx))

    def at(step):
        moved = list(values)
        for k, d in zip(positions, dx):
            moved[k] = values[k] + step * d
        return gradient(fn, moved, kwargs, positions, weights)
    slope = [(a - b) / (2 * H) for a, b in zip(at(H), at(-H))]
    assert lhs == pytest.approx(sum(inner(vk, s) for vk, s in zip(v, slope)),
                                rel=1e-4, abs=1e-6)


# Keywords a NumPy function takes through **kwargs, as its documentation names them.
DOCUMENTED_KWARGS = {np.pad: ["constant_values", "end_values", "reflect_type", "stat_length"]}


def test_rule_parameters_carry_the_numpy_names():
    # A keyword argument reaches a rule by name: a rule that renamed one would
    # silently differentiate with its default instead (np.clip(x, a_min=0)).
    for fn, rule in builtin_rules().items():
        if isinstance(fn, np.ufunc) or rule.argnum_vjp is not None:
            continue
        try:
            parameters = inspect.signature(getattr(fn, "raw", fn)).parameters.values()
        except (TypeError, ValueError):
            continue
        names = [p.name for p in parameters if p.kind != p.POSITIONAL_ONLY]
        names += DOCUMENTED_KWARGS.get(fn, [])
        positional_only = sum(p.kind == p.POSITIONAL_ONLY for p in parameters)
        if not names:
            continue  # operator.getitem: nothing can be passed by keyword
        for vjp in rule.vjps:
            if vjp is None:
                continue
            own = [p.name for p in inspect.signature(vjp).parameters.values()
                   if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)][3:]  # after g, ans, input
            unknown = [p for k, p in enumerate(own, 1)  # (none names one passed by position)
                       if k >= positional_only and p not in names]
            assert not unknown, f"{rule.name}: rule parameters {unknown} are not NumPy's {names}"


# --- traits: each fact recorded with a rule holds of the primitive ---

def bearing(trait):
    return [fn for fn, traits in all_traits().items() if getattr(traits, trait)]


def test_every_primitive_with_traits_is_registered():
    """A fact about a function srcdiff cannot differentiate, or take apart, is a stray."""
    strays = [fn for fn, traits in all_traits().items()
              if rule_of(fn) is None and not traits.nondifferentiable
              and registry.expansion_of(fn) is None]
    assert not strays
    both = [fn for fn in bearing("nondifferentiable") if rule_of(fn) is not None]
    assert not both, "a rule for a function marked nondifferentiable"
    assert all(rule_of(fn) is not None for fn in bearing("view") + bearing("reduces"))


def shares_memory_with_first_input(fn, example, rng):
    values = draw(example.args, rng)
    return (isinstance(values[0], np.ndarray)
            and np.shares_memory(fn(*values, **example.kwargs), values[0]))


@pytest.mark.parametrize("fn", [fn for fn in EXAMPLES if fn is not operator.getitem],
                         ids=lambda fn: rule_of(fn).name)
def test_view_trait_says_whether_the_result_shares_the_first_inputs_memory(fn):
    """``view=True`` on exactly the primitives whose result may be a view of their first
    input: a missing mark lets the compiler miss a write through the view.  (x[i] is a
    view or not by its index, which the compiler reads itself.)"""
    rng = np.random.default_rng(0)
    shares = [shares_memory_with_first_input(fn, e, rng) for e in EXAMPLES[fn]]
    if traits_of(fn).view:
        assert any(shares), "marked view=True, but no example returns a view"
    else:
        assert not any(shares), "returns a view of its first input: mark it view=True"


@pytest.mark.parametrize("fn", bearing("reduces"), ids=lambda fn: rule_of(fn).name)
def test_a_full_reduction_of_a_vector_is_a_number(fn):
    ans = fn(np.array([0.5, -1.0, 2.0]))
    assert isinstance(ans, (float, complex)), f"{type(ans)} is not a number"


@pytest.mark.parametrize("fn", bearing("number"), ids=registry.primitive_name)
def test_a_primitive_marked_number_returns_a_number_whatever_it_is_given(fn):
    """Given a vector, a one-element vector or a 0-d array, it returns a number or
    refuses (float() takes 0-d arrays only, x.item() one-element ones)."""
    arity = len(rule_of(fn).vjps) if rule_of(fn) is not None else 1
    answers = []
    for x in (np.array([0.5, -1.0, 2.0]), np.array([0.5]), np.array(0.5)):
        try:
            answers.append(fn(*[x] * arity))
        except (TypeError, ValueError):
            continue
    assert answers
    assert all(isinstance(a, (int, float, complex)) for a in answers), answers


@pytest.mark.parametrize("fn", [fn for fn, traits in all_traits().items()
                                if traits.splits is not None], ids=registry.primitive_name)
def test_a_split_cuts_along_its_default_axis(fn):
    x = np.arange(24.0).reshape(4, 6)
    pieces = fn(x, 2)
    assert len(pieces) == 2
    np.testing.assert_array_equal(np.concatenate(pieces, axis=traits_of(fn).splits), x)


MEASURING_CALLS = {  # helper name: sample arguments
    "unbroadcast": (np.arange(6.0).reshape(2, 3), np.ones((1, 3))),
    "unreduce": (np.arange(2.0), np.ones((2, 3)), 1, False),
    "reshape_like": (np.arange(6.0), np.ones((2, 3))),
    "reduced_count": (np.ones((2, 3)), np.ones(2)),
    "zeros_rows": ((4,), np.ones((2, 3), np.float32)),
    "untranspose": (np.arange(24.0).reshape(4, 2, 3), np.ones((3, 4, 2)), (1, 2, 0)),
    "from_end": ((0, -1), np.ones((2, 3, 4))),
}


def test_every_helper_that_measures_has_a_sample_call():
    marked = {name for name, f in vars(helpers).items() if getattr(f, "measures", ())}
    assert marked == set(MEASURING_CALLS)
    assert helpers.measured_args("np") == helpers.measured_args("no_such_helper") == ()


@pytest.mark.parametrize("name", MEASURING_CALLS)
def test_a_helper_reads_only_the_shape_of_what_it_measures(name):
    """The compiler may keep only the shape of a measured argument (``ShapeOf``)."""
    helper, args = getattr(helpers, name), MEASURING_CALLS[name]
    shapes = [ShapeOf(a) if k in helpers.measured_args(name) else a for k, a in enumerate(args)]
    np.testing.assert_array_equal(helper(*shapes), helper(*args))


# --- the compiler inlines the same rules: compiled == eager == finite differences ---

# Examples the compiler refuses, and why.
REFUSED_WHEN_COMPILED = {}  # (primitive, example) -> why the compiler refuses it


def compiled_cases():
    """The real examples on arrays (the tape runs math.* on floats only as numbers)."""
    for fn, examples in EXAMPLES.items():
        for k, e in enumerate(examples):
            if second_order_applies(fn, e.args) and any(isinstance(a, Arg) for a in e.args):
                yield pytest.param(fn, k, e.args, e.kwargs, id=f"{rule_of(fn).name}-{k}")


def program_of(fn, args, kwargs, tmp_path):
    """``f(x0, x1, ...) = sum(W * fn(...))`` over the Arg inputs, in a file the compiler
    reads; the other arguments, ``fn`` and ``W`` are globals of its module."""
    params = [f"x{k}" for k, a in enumerate(args) if isinstance(a, Arg)]
    given = [f"x{k}" if isinstance(a, Arg) else f"A{k}" for k, a in enumerate(args)]
    given += [f"{key}=K_{key}" for key in kwargs]
    module = module_from_source(tmp_path / "program.py", f"""
        import numpy as np
        def program({", ".join(params)}):
            return np.sum(W * FN({", ".join(given)}))
        """)
    module.FN = fn
    for k, a in enumerate(args):
        setattr(module, f"A{k}", a)
    for key, value in kwargs.items():
        setattr(module, f"K_{key}", value)
    return module


@pytest.mark.parametrize("fn, index, args, kwargs", list(compiled_cases()))
def test_compiled_rule_matches_eager_and_finite_differences(fn, index, args, kwargs, tmp_path):
    rng = np.random.default_rng(2)
    values = draw(args, rng)
    module = program_of(fn, args, kwargs, tmp_path)
    module.W = random_like(fn(*values, **kwargs), rng)
    active = [v for k, v in enumerate(values) if isinstance(args[k], Arg)]
    if (fn, index) in REFUSED_WHEN_COMPILED:
        with pytest.raises(sd.CompileError):
            sd.grad(module.program)(*active)
        return
    check_grad(module.program, active, tuple(range(len(active))),
               eager=fn not in LEAVE_THE_TAPE)


# --- NumPy's functions with several results, and the forms that reach the rules ---

SEVERAL = '''
import numpy as np

def slogdet_item(x):
    return np.linalg.slogdet(x)[1] * 2.0

def slogdet_unpacked(x):
    sign, logdet = np.linalg.slogdet(x)
    return sign * logdet

def eigh_unpacked(x):
    w, v = np.linalg.eigh(x)
    return np.sum(w * v[0] ** 2) + np.sum(v[:, 1] * W3)

def eigh_values_upper(x):
    return np.sum(np.linalg.eigh(x, UPLO="U")[0] ** 2)

def qr_unpacked(x):
    q, r = np.linalg.qr(x)
    return np.sum(q * W43) + np.sum(r * W3[:, None])

def qr_r_only(x):
    return np.sum(np.linalg.qr(x)[1] ** 2)

def svd_unpacked(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return np.sum(u * W43 * s) + np.sum(vh ** 3)

def singular_values(x):
    return np.sum(np.linalg.svd(x)[1] ** 3)

def norms(x):
    return np.linalg.norm(x, 2) + np.linalg.norm(x, "nuc") + np.linalg.norm(x, -np.inf)

def products(x):
    return np.sum(np.linalg.multi_dot([x, x.T, x]) * W43) + np.sum(np.kron(x, x[:2]))

def powers(x):
    return np.sum(pow(x, 3.0)) + pow(2.0, x[0, 0])

def pad_values(x, c):
    return np.sum(np.pad(x, 1, constant_values=c) * np.arange(30.0).reshape(6, 5))

def vsplit_unpacked(x):
    top, bottom = np.vsplit(x, 2)
    return np.sum(top * bottom ** 2)

def split_kept_whole(x):
    return np.sum(np.split(x, 2)[0])

def conversions(x):
    return np.sum(np.asarray(x, dtype=float) * np.float64(x)) + np.sum(x.astype(int) * x)
'''


@pytest.fixture(scope="module")
def several(tmp_path_factory):
    module = module_from_source(tmp_path_factory.mktemp("several") / "several.py", SEVERAL)
    rng = np.random.default_rng(3)
    module.W3, module.W43 = rng.standard_normal(3), rng.standard_normal((4, 3))
    return module


SPD3 = np.array([[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 3.0]])
TALL = np.random.default_rng(4).uniform(-1, 1, (4, 3))


@pytest.mark.parametrize("name, x", [
    ("slogdet_item", SPD3), ("slogdet_unpacked", -SPD3), ("eigh_unpacked", SPD3 + np.triu(SPD3)),
    ("eigh_values_upper", SPD3 + np.tril(SPD3)), ("qr_unpacked", TALL), ("qr_r_only", TALL),
    ("svd_unpacked", TALL), ("singular_values", TALL), ("norms", TALL),
    ("products", TALL), ("powers", np.abs(TALL) + 0.5), ("vsplit_unpacked", TALL)])
def test_functions_with_several_results_on_both_engines(several, name, x):
    """sign, logdet = np.linalg.slogdet(m), np.linalg.eigh(m)[0], ...: compiled as a
    call of the expansion, recorded on the tape through it."""
    check_grad(getattr(several, name), (x,))


def test_a_keyword_input_differentiates_when_compiled_and_is_refused_on_the_tape(several):
    check_grad(several.pad_values, (TALL, 0.5), (0, 1), eager=False)
    with sd.GradientTape() as tape, pytest.raises(TypeError, match="constant_values"):
        c = sd.constant(0.5)
        tape.watch(c)
        np.pad(sd.constant(TALL), 1, constant_values=c)


def test_conversions_differentiate_when_compiled_and_an_integer_one_passes_none(several):
    grad = check_grad(several.conversions, (TALL,), eager=False)
    np.testing.assert_allclose(grad, 2 * TALL + TALL.astype(int))


def test_the_tape_packs_results_as_numpy_does():
    w, v = np.linalg.eigh(SPD3)
    result = np.linalg.eigh(sd.constant(SPD3))
    assert type(result) is type(np.linalg.eigh(SPD3))
    np.testing.assert_allclose(result.eigenvalues.numpy(), w)
    np.testing.assert_allclose(np.abs(result.eigenvectors.numpy()), np.abs(v))


@pytest.mark.parametrize("f, match", [
    (lambda x: np.linalg.svd(x, False, False), "by keyword"),
    (lambda x: np.linalg.qr(x, mode="r")[0], "mode='r'"),
    (lambda x: np.linalg.svd(x)[0], "full_matrices=False"),
    (lambda x: np.linalg.qr(x.T)[1], "more columns than rows"),
    (lambda x: np.pad(x, 1, mode="linear_ramp"), "linear_ramp"),
    (lambda x: np.pad(x, 1, mode="reflect", reflect_type="odd"), "odd"),
    (lambda x: np.einsum(x, [0, 1], [1]), "interleaved"),
    (lambda x: np.interp(x, [0.0, 1.0], [1.0, 2.0], None, None, 3.0), "period"),
    (lambda x: np.linalg.eigh(x[:3] + 0j)[0], "complex"),
])
def test_what_the_rules_do_not_model_is_refused_on_the_tape(f, match):
    x = sd.constant(TALL)
    with pytest.raises(NotImplementedError, match=match):
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = sd.reduce_sum(f(x))
        tape.gradient(y, x)


def test_split_pieces_kept_together_are_differentiated_when_compiled(several):
    # as a call of the split's expansion (their adjoint was once zeros)
    check_grad(several.split_kept_whole, (TALL.copy(),))


def test_an_attribute_of_a_named_result_is_refused_when_compiled(tmp_path):
    module = module_from_source(tmp_path / "attribute.py", '''
        import numpy as np
        def f(x):
            return np.linalg.slogdet(x).logabsdet
        ''')
    with pytest.raises(sd.CompileError, match="attribute"):
        sd.grad(module.f)(SPD3)


@pytest.mark.parametrize("t", [np.tanh(np.linspace(-3, 3, 7)), np.tanh(np.linspace(-3, 3, 7,
                                                                                 dtype=np.float32)),
                               np.tanh(np.float64(0.3)), np.tanh(np.array(0.3)),
                               np.tanh(np.array([0.5 + 1j]))],
                         ids=["float64", "float32", "number", "0-d", "complex"])
def test_one_minus_square_is_one_minus_the_square_bit_for_bit(t):
    kept = np.copy(t)
    got, expected = helpers.one_minus_square(t), 1 - t * t
    assert type(got) is type(expected) and np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(t, kept)  # it writes into its own square only


def test_tanh_second_derivative_through_one_minus_square_on_tapes():
    x = sd.constant(np.array([-0.7, 0.2, 1.3]))
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = np.tanh(x)
        dy = inner.gradient(y, x)
    t = np.tanh(x.numpy())
    np.testing.assert_allclose(dy.numpy(), 1 - t * t, rtol=1e-15)
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), -2 * t * (1 - t * t), rtol=1e-12)


def _complex_variants(example, rng):
    """The example's arguments as drawn, and with every real array input made complex."""
    values = draw(example.args, rng)
    yield values
    yield [v + 1j * rng.uniform(-1, 1, np.shape(v)) if isinstance(a, Arg) and a.shape is not None
           else v for a, v in zip(example.args, values)]


def _refused(fn, values, kwargs, ans, inputs):
    """Whether ``fn``'s rule refuses these inputs (real matrices only, real numbers only)."""
    try:
        for i in inputs:
            rule_of(fn).vjp(i)(np.ones_like(ans), ans, *values, **kwargs)
    except (NotImplementedError, TypeError):
        return True
    return False


def _complex_examples(seed, variants=(0, 1)):
    """(fn, values, kwargs, ans, complex inputs with a vjp, id) of every example whose
    function takes the complex values of its ``variants`` (see _complex_variants) and
    whose rule does not refuse them."""
    rng = np.random.default_rng(seed)
    for fn, examples in EXAMPLES.items():
        for k, e in enumerate(examples):
            for n, values in enumerate(_complex_variants(e, rng)):
                if n not in variants:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        ans = fn(*values, **e.kwargs)
                    except Exception:  # a function of real numbers only
                        continue
                inputs = [i for i, v in enumerate(values) if isinstance(e.args[i], Arg)
                          and np.iscomplexobj(v) and rule_of(fn).vjp(i) is not None]
                if inputs and isinstance(ans, (np.ndarray, np.generic, float, complex)) and (
                        not _refused(fn, values, e.kwargs, ans, inputs)):
                    yield fn, values, e.kwargs, ans, inputs, f"{rule_of(fn).name}-{k}-{n}"


def _real_results_of_complex_inputs():
    for fn, values, kwargs, ans, inputs, name in _complex_examples(4):
        if not np.iscomplexobj(ans):
            yield pytest.param(fn, values, kwargs, ans, inputs, id=name)


@pytest.mark.parametrize("fn, values, kwargs, ans, inputs", list(_real_results_of_complex_inputs()))
def test_a_real_result_of_a_complex_input_ignores_an_imaginary_part_of_its_adjoint(
        fn, values, kwargs, ans, inputs):
    """Compiled code lets a real value's adjoint carry an imaginary part (where it met a
    complex operand); a rule of a real result of complex inputs must not read it."""
    rng = np.random.default_rng(5)
    g = random_like(ans, rng)
    junk = g + 1j * random_like(ans, rng)
    for i in inputs:
        vjp = rule_of(fn).vjp(i)
        np.testing.assert_allclose(vjp(junk, ans, *values, **kwargs),
                                   vjp(g, ans, *values, **kwargs), rtol=1e-12, atol=1e-12)


# A complex input where a rule's function takes one: the rule is TensorFlow's (a real
# function of it has the gradient dL/dRe + i dL/dIm), or it refuses (NotImplementedError,
# or TypeError where a NumPy or scipy function in the rule takes reals only).


def _complex_cases():
    for fn, values, kwargs, _, inputs, name in _complex_examples(6, variants=(1,)):
        yield pytest.param(fn, values, kwargs, inputs, id=name)


@pytest.mark.parametrize("fn, values, kwargs, inputs", list(_complex_cases()))
def test_vjp_of_complex_inputs_matches_finite_differences(fn, values, kwargs, inputs):
    rng = np.random.default_rng(7)
    with warnings.catch_warnings():  # complex values converted to real: as intended
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        ans = fn(*values, **kwargs)
        g = random_like(ans, rng)
        for i in inputs:
            dx = random_like(values[i], rng)
            d = np.asarray(np.conj(rule_of(fn).vjp(i)(np.conj(g), ans, *values, **kwargs)))
            slope = (np.asarray(fn(*shifted(values, i, dx, H), **kwargs))
                     - np.asarray(fn(*shifted(values, i, dx, -H), **kwargs))) / (2 * H)
            assert inner(d, dx) == pytest.approx(inner(g, slope), rel=1e-5, abs=1e-7), (
                f"input {i}")
