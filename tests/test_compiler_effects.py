"""Calls that change a value in place, which no assignment records: refused when a
value carrying a gradient reaches them (they gave zero gradients: the adjoint never
followed the write), and run as written when none does."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad

W = np.array([1.0, 2.0, 3.0])


def ufunc_at(w):
    x = np.zeros(3)
    np.add.at(x, [0, 1, 1], w)
    return np.sum(x * x)


def out_keyword(w):
    x = np.zeros(3)
    np.multiply(w, 2.0, out=x)
    return np.sum(x * x)


def out_keyword_with_an_unused_result(w):
    x = np.zeros(3)
    y = np.multiply(w, 2.0, out=x)  # noqa: F841
    return np.sum(x * x)


def copyto(w):
    x = np.zeros(3)
    np.copyto(x, w)
    return np.sum(x * x)


def list_append(w):
    xs = []
    xs.append(w * 2.0)
    return np.sum(xs[0])


def append_to_an_argument(w, xs):
    xs.append(w * 2.0)  # the caller's list would change
    return np.sum(xs[0])


def read_before_a_later_append(w):
    xs = [w]
    for i in range(3):
        xs.append(np.sin(xs[-1]))  # the gradient would see xs as it ends
    return np.sum(xs[-1])


def test_a_list_built_by_append_is_differentiated():
    check_grad(list_append, (W.copy(),))


@pytest.mark.parametrize("fn, args", [(append_to_an_argument, lambda: (W.copy(), [])),
                                      (read_before_a_later_append, lambda: (W.copy(),))],
                         ids=["argument", "read-before-append"])
def test_an_append_the_adjoints_cannot_follow_is_refused(fn, args):
    with pytest.raises(sd.CompileError, match="append"):
        sd.grad(fn)(*args())


def fill(w):
    x = np.zeros(3)
    x.fill(np.sum(w))
    return np.sum(x * w)


@pytest.mark.parametrize("fn", [ufunc_at, out_keyword, out_keyword_with_an_unused_result,
                                copyto, fill], ids=lambda f: f.__name__)
def test_a_write_through_a_call_on_a_varied_value_is_refused(fn):
    with pytest.raises(sd.CompileError, match="in place"):
        sd.grad(fn)(W.copy())


def writes_on_data_only(w, data):
    x = np.zeros(3)
    np.copyto(x, data)
    np.add.at(x, [0, 0], 1.0)
    print("scale", np.sum(w))
    np.sum(w)  # a primitive's result discarded: harmless
    return np.sum(x * w)


def test_writes_through_calls_on_data_run_as_written():
    check_grad(writes_on_data_only, (W.copy(), np.array([0.5, -1.0, 2.0])), wrt=0,
               eager=False)
