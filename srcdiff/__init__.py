"""srcdiff: reverse-mode automatic differentiation of NumPy code.

Two engines behind one API: ``GradientTape`` records operations eagerly, as
TensorFlow 2 does; ``function``/``grad`` transform a function's source into
adjoint code, as Tangent does.  ``import srcdiff as tf`` runs TensorFlow's
GradientTape tutorials unchanged.
"""
from . import errors, keras, linalg, math, nn, random  # noqa: F401
from .dtypes import (bool, complex64, complex128, double, float16, float32,  # noqa: F401,A004
                     float64, half, int8, int16, int32, int64, string, uint8)
from .ops.array_ops import (broadcast_to, concat, expand_dims, eye, fill, gather,  # noqa: F401
                            identity, linspace, ones, ones_like, range, rank, reshape, reverse,
                            shape, size, squeeze, stack, stop_gradient, tile, transpose,
                            unstack, zeros, zeros_like)
from .ops.clip_ops import clip_by_global_norm, clip_by_norm  # noqa: F401
from .ops.gradient_ops import custom_gradient, register_gradient  # noqa: F401
from .ops.linalg_ops import einsum, matmul, tensordot  # noqa: F401
from .ops.math_ops import *  # noqa: F401,F403
from .ops.scan_ops import cumsum  # noqa: F401
from .ops.scatter_ops import (gather_nd, one_hot, scatter_nd, tensor_scatter_nd_add,  # noqa: F401
                              tensor_scatter_nd_sub, tensor_scatter_nd_update)
from .ops.slicing_ops import boolean_mask, pad, repeat, roll, slice, split  # noqa: F401,A004
from .ops.sort_ops import argsort, sort  # noqa: F401
from .ops import forms  # noqa: F401  (the NumPy forms compiled code runs)
from .api import adjoint_source, grad, jacobian, value_and_grad, vjp  # noqa: F401
from .checking import check_grads  # noqa: F401
from .compiler.errors import CompileError  # noqa: F401
from .function import clear_cache, function  # noqa: F401
from .signature import TensorSpec  # noqa: F401
from .tape import GradientTape, UnconnectedGradients  # noqa: F401
from .tensor import (IndexedSlices, Tensor, TensorShape, Variable, cast, constant,  # noqa: F401
                     convert_to_tensor)

__version__ = "0.1.0"
