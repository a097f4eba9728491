"""Linear algebra whose result changes kind with a keyword (``defform``): each form
compiled, on the tape, and under a tape, against finite differences."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_three_ways

A = np.random.default_rng(4).standard_normal((4, 3))


def singular_values_by_keyword(a):
    s = np.linalg.svd(a, compute_uv=False)
    return np.sum(s ** 2) + np.sum(s)


def singular_values_of_a_hermitian_matrix(a):
    s = np.linalg.svd(a @ a.T + np.eye(4), compute_uv=False, hermitian=True)
    return np.sum(np.log(s))


def all_three_factors(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s) + np.sum(u[:, 0] * vh[0, 0])


def compute_uv_true_by_keyword(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False, compute_uv=True)
    return np.sum(s * s) + np.sum(np.abs(u @ vh))


@pytest.mark.parametrize("fn", [singular_values_by_keyword,
                                singular_values_of_a_hermitian_matrix, all_three_factors,
                                compute_uv_true_by_keyword], ids=lambda f: f.__name__)
def test_each_form_of_svd(fn):
    check_three_ways(fn, (A,))


def singular_values_by_position(a):
    return np.sum(np.linalg.svd(a, False, False))


def test_compute_uv_by_position_is_refused_when_it_runs():
    with pytest.raises(NotImplementedError, match="by keyword"):
        sd.grad(singular_values_by_position)(A)
