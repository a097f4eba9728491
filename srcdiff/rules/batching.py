"""Which rules accept adjoints with leading batch axes (vectorised jacobians).

A vectorised jacobian walks the tape once for all its rows: every adjoint has
``helpers.batch_axes()`` leading axes, one entry per row.  A rule copes with
them when it touches the adjoint only by right-aligned broadcasting, negative
axes and the helpers that keep batch axes (``unbroadcast``, ``unreduce``,
``reshape_like``).  Every ufunc's rule is elementwise, so it does; the other
primitives whose rules do are listed here.  The tape runs any other rule once
per row, so leaving a rule out costs time, never correctness.

The set holds the rules registered when this module is imported: a rule
registered later (``sd.register_gradient``, ``custom_gradient``) is not in it.
``tests/test_jacobian_vectorised.py`` checks each rule here on batched adjoints
against the same rule applied row by row.
"""
import numpy as np

from . import nn, reductions, shapes
from .registry import all_rules, rule_of

_LISTED = (
    # elementwise, though not ufuncs
    np.real, np.imag, np.copy, shapes.cast, np.where, np.clip, np.broadcast_to,
    nn.sigmoid, nn.softplus, nn.relu,
    # reshapes: their adjoints go through reshape_like
    np.reshape, np.ravel, np.squeeze, np.expand_dims, np.atleast_1d, np.atleast_2d,
    np.atleast_3d,
    # reductions: their adjoints go through unreduce
    np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.var, np.std,
    reductions.logsumexp, reductions.norm, np.linalg.norm,
    # products: matmul broadcasts over leading axes
    np.matmul, np.linalg.inv, np.linalg.det,
)

BATCHED_RULES = frozenset(
    [rule for fn, rule in all_rules().items() if isinstance(fn, np.ufunc)]
    + [rule_of(fn) for fn in _LISTED])


def accepts_batches(rule):
    """Whether ``rule``'s vjps may be given adjoints with leading batch axes."""
    return rule in BATCHED_RULES
