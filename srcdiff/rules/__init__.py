"""Derivative rules as data: one small NumPy function per primitive input.

Importing this package fills the table; ``rule_of(fn)`` looks a primitive up,
``traits_of(fn)`` what else is known of it."""
from . import (differences, elementwise, fft, guarded, linalg, nn, numbers,  # noqa: F401
               polynomials, reductions, scans, shapes, statistics, zero_safe)  # (fill the table)
try:  # scipy is optional
    from . import gamma, scipy_special  # noqa: F401
except ImportError:
    pass
from .helpers import unbroadcast
from .registry import (Rule, Traits, all_rules, declare, defvjp, defvjp_argnum,
                       is_nondifferentiable, nondifferentiable, primitive, rule_of, traits_of)
