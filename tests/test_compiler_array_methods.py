"""Method names ndarray also has (``sum``, ``mean``, ``T``, ...) on values that are
not arrays: ``obj.sum()`` is compiled as ``np.sum(obj)`` only where that computes
what Python's call does; on a container that may hold a class of its own (a
namedtuple subclass defining ``sum``: NumPy calls it), it is a CompileError, never
the gradient of ``np.sum`` of the items."""
from collections import namedtuple

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad


class Pair(namedtuple("Pair", "w b")):
    def sum(self, axis=None, dtype=None, out=None):
        return np.sum(self.w * 3.0) + np.sum(self.b)

    def mean(self):
        return np.mean(self.w)

    @property
    def T(self):
        return Pair(self.b, self.w)


def summed(p):
    return p.sum() * 2.0


def averaged(p):
    return p.mean()


def transposed(p):
    q = p.T
    return np.sum(q.w * q.w)


def items_summed(p):
    return np.sum(p.w) * 3.0 + np.sum(p.b)  # what Pair.sum computes, written out


PAIR = Pair(np.array([1.0, 2.0]), np.array([0.5, -1.0]))


@pytest.mark.parametrize("fn", [summed, averaged, transposed])
def test_an_array_method_of_a_container_is_refused(fn):
    with pytest.raises(sd.CompileError) as info:
        sd.grad(fn)(PAIR)
    assert info.value.hint and fn.__code__.co_filename == info.value.filename


def test_the_same_computation_on_the_items_is_differentiated():
    g = sd.grad(items_summed)(PAIR)
    np.testing.assert_allclose(g.w, [3.0, 3.0])
    np.testing.assert_allclose(g.b, [1.0, 1.0])


def test_an_array_method_of_an_array_is_still_differentiated():
    check_grad(lambda x: x.sum() * x.mean() + np.sum(x.T * x), (np.array([0.3, -0.7]),))
