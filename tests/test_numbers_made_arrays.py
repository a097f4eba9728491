"""A number (a Python float, an np.float64 or np.float32, a 0-d array) that an op makes
an array of (``np.full(3, a)``, ``np.linspace(a, b, 5)``) gets the whole array's adjoint,
summed back to a number: numbers in, a number out holds of elementwise ops only."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import finite_difference

W = np.array([0.5, 1.0, 2.0, -1.0, 3.0])


def full(a, b):
    return np.sum(np.full(5, a) * W) + b


def full_of_two(a, b):
    return np.sum(np.full((2, 5), a * b) * W)


def linspace(a, b):
    return np.sum(np.linspace(a, b, 5) * W)


def broadcast_to(a, b):
    return np.sum(np.broadcast_to(a * b, (5,)) * W)


def tile(a, b):
    return np.sum(np.tile(a, 5) * W) * b


def repeat(a, b):
    return np.sum(np.repeat(a - b, 5) * W)


def stack(a, b):
    return np.sum(np.stack([a, b, a * b, a, b]) * W)


def elementwise(a, b):  # numbers in, a number out: kept as they are
    return np.sin(a) * b + np.maximum(a, b) ** 2


NUMBERS = [float, np.float64, np.float32, np.array]


@pytest.mark.parametrize("make", NUMBERS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("f", [full, full_of_two, linspace, broadcast_to, tile, repeat,
                               stack, elementwise], ids=lambda f: f.__name__)
def test_a_number_made_an_array_gets_the_arrays_adjoint(f, make):
    # np.full(3, a) of an np.float64 once got its adjoint unsummed: [0., 1., 2.] for 3.0
    a, b = make(0.45), make(1.3)
    grads = sd.grad(f, wrt=(0, 1))(a, b)
    tolerance = 1e-3 if make is np.float32 else 1e-6
    for k, g in enumerate(grads):
        assert np.shape(g) == ()
        expected = finite_difference(f, [0.45, 1.3], k)
        np.testing.assert_allclose(g, expected, rtol=tolerance, atol=tolerance)
