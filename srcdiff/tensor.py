"""Values: Tensor, Variable, IndexedSlices, dtypes, and ``apply``, the one door to a primitive.

Every operation on Tensors, whether a Python operator, a Tensor method, a NumPy
function reached through ``__array_ufunc__``/``__array_function__`` or an
``sd.*`` op, ends in ``apply(fn, *args, **kwargs)``: it runs ``fn`` on the raw
arrays and, when a tape is recording, hands the call to the tapes that watch
one of its inputs.  This module knows nothing of tapes beyond that hand-off.
(An operator on Tensors and Python floats, and a one-input op on a Tensor, have
nothing for ``apply`` to convert or read, and go straight to its tail, ``_run``, in
the form unrolled for their arity.)
"""
import inspect
import itertools
import operator

import numpy as np

from . import rules
from ._recording import STATE, refuse_without_rule
from .errors import InvalidArgumentError
from .rules import registry
from .dtypes import as_dtype
from .rules.shapes import cast as _cast, concatenate as _concatenate, stack as _stack

class TensorShape(tuple):
    """A tuple of dimensions that also answers TensorFlow's TensorShape questions."""

    __slots__ = ()

    @property
    def rank(self):
        return len(self)

    @property
    def ndims(self):
        return len(self)

    def as_list(self):
        return list(self)

    def num_elements(self):
        return int(np.prod(self, dtype=np.int64))


def _binary(fn):
    """The operator applying ``fn`` to a Tensor and another value, and its reflection.

    A Tensor beside a Tensor or a Python float (the common case, and the one tiny
    ops pay most for) goes straight to ``_run2``: a Variable must be read first,
    anything else converted, and those take ``apply``'s general path."""
    def forward(self, other):
        if type(self) is Tensor:
            kind = type(other)
            if kind is Tensor:
                return _run2(fn, self, other, self._value, other._value, STATE.tapes)
            if kind is float:
                return _run2(fn, self, other, self._value, other, STATE.tapes)
        if type(other) in _SEQUENCES:
            other = _operand(other, self)
        return apply(fn, self, other)

    def reflected(self, other):
        if type(self) is Tensor and type(other) is float:
            return _run2(fn, other, self, other, self._value, STATE.tapes)
        if type(other) in _SEQUENCES:
            other = _operand(other, self)
        return apply(fn, other, self)
    return forward, reflected


def _unary(fn):
    """The operator applying ``fn`` to a Tensor (a Variable is read first, by ``apply``)."""
    def operator(self):
        if type(self) is Tensor:
            return _run1(fn, fn, self, self._value, STATE.tapes)
        return apply(fn, self)
    return operator


_SEQUENCES = frozenset({list, tuple})
_PYTHON_NUMBER = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def refuse_mixed_dtypes(name, values):
    """Refuse, as TensorFlow's kernels do (InvalidArgumentError), the tensor arguments
    ``values`` of the ``sd.*`` op ``name`` if two Tensors (or Variables) among them have
    different floating dtypes: TensorFlow never promotes one (``sd.add(t32, t64)``).

    Only the ``sd.*`` ops' entry points ask this.  Python operators and NumPy functions
    on Tensors are NumPy primitives and keep NumPy's promotion, so that a NumPy program
    computes on the tape what it computes compiled (``t32 * t64`` is float64), and so do
    srcdiff's rules and the ops' NumPy forms, which compute with those and mix dtypes on
    purpose.  ndarrays are not Tensors here (compiled code could not tell them apart):
    they promote, where TensorFlow would convert them to the Tensor's dtype.  Code
    written for the compiler (``STATE.exact``) promotes as its compiled form does."""
    if STATE.exact:
        return
    dtype = None
    for i, v in enumerate(values):
        if isinstance(v, _ArrayLike) and v.dtype.kind in "fc":
            if dtype is None:
                dtype = v.dtype
            elif v.dtype != dtype:
                raise InvalidArgumentError(
                    f"cannot compute {name} as input #{i}(zero-based) "
                    f"was expected to be a {dtype.name} tensor but is a {v.dtype.name} "
                    "tensor: TensorFlow does not promote dtypes; convert one with sd.cast")


def _operand(other, like):
    """A list or tuple beside ``like`` in an operator, as TensorFlow converts it: a
    Tensor, whose Tensors are stacked by a recorded step and whose Python numbers take
    ``like``'s dtype as a lone Python number would (``[[1., 2.]] @ w`` is float32 for a
    float32 ``w``, as in TensorFlow, where NumPy would make the list float64)."""
    if any(isinstance(v, _ArrayLike) for v in _leaves(other)):
        return convert_to_tensor(other)
    array = np.asarray(other)
    number = _PYTHON_NUMBER.get(array.dtype.kind)
    if number is None:
        return array
    converted = array.astype(np.result_type(like.dtype, number))
    # an int too large for like's dtype keeps NumPy's wider type (never wraps around)
    return converted if np.array_equal(converted, array) or array.dtype.kind in "fc" else array


class _ArrayLike:
    """Operators, array methods and NumPy hooks shared by Tensor and Variable.

    Subclasses provide ``_array()``, the current ndarray."""

    __slots__ = ()
    __array_priority__ = 100.0

    # --- what the value is ---
    @property
    def shape(self):
        return TensorShape(np.shape(self._array()))

    @property
    def dtype(self):
        return self._array().dtype

    @property
    def ndim(self):
        return np.ndim(self._array())

    @property
    def size(self):
        return np.size(self._array())

    def numpy(self):
        """A copy of the value, as TensorFlow gives it: an ndarray, or a NumPy scalar."""
        value = self._array()
        return value[()] if value.ndim == 0 else value.copy()

    def __array__(self, dtype=None, copy=None):
        if STATE.tapes:
            _refuse_if_followed(self)
        value = np.asarray(self._array(), dtype=dtype)
        if copy:
            return value.copy()
        if value is self._array():
            # A read-only view: the array itself must not change under the tapes that saved it.
            value = value.view()
            value.flags.writeable = False
        return value

    def __len__(self):
        if not np.ndim(self._array()):
            raise TypeError("len() of a scalar Tensor is undefined")
        return len(self._array())

    def __iter__(self):
        if not np.ndim(self._array()):
            raise TypeError("iterating over a scalar Tensor is not allowed")
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        return bool(self._array())

    def __format__(self, spec):
        # as TensorFlow: the value formatted by NumPy (f"{loss:.3f}" on a scalar)
        return self._array().__format__(spec)

    def __float__(self):
        _number_of(self, "float()")
        return float(self._item())

    def __int__(self):
        return int(self._item())

    def __index__(self):
        return operator.index(self._item())

    def __complex__(self):
        _number_of(self, "complex()")
        return complex(self._item())

    def _item(self):
        """The Python number in a one-element Tensor of any shape."""
        value = self._array()
        if np.size(value) != 1:
            raise TypeError("only one-element Tensors can be converted to Python scalars, "
                            f"not one of shape {self.shape}")
        return value.item()

    __hash__ = None  # equality is elementwise, as in TensorFlow 2; use .ref() for a key

    def ref(self):
        return _Ref(self)

    # --- arithmetic: each operator is one NumPy primitive ---
    # A list or tuple on the other side is converted as TensorFlow converts it (_operand).
    __add__, __radd__ = _binary(np.add)
    __sub__, __rsub__ = _binary(np.subtract)
    __mul__, __rmul__ = _binary(np.multiply)
    __truediv__, __rtruediv__ = _binary(np.true_divide)
    __floordiv__, __rfloordiv__ = _binary(np.floor_divide)
    __mod__, __rmod__ = _binary(np.remainder)
    __pow__, __rpow__ = _binary(np.power)
    __matmul__, __rmatmul__ = _binary(np.matmul)
    __and__, __rand__ = _binary(np.logical_and)
    __or__, __ror__ = _binary(np.logical_or)
    __xor__, __rxor__ = _binary(np.logical_xor)
    __eq__, _ = _binary(np.equal)
    __ne__, _ = _binary(np.not_equal)
    __lt__, _ = _binary(np.less)
    __le__, _ = _binary(np.less_equal)
    __gt__, _ = _binary(np.greater)
    __ge__, _ = _binary(np.greater_equal)
    del _

    def __divmod__(self, other): return self.__floordiv__(other), self.__mod__(other)
    def __rdivmod__(self, other): return self.__rfloordiv__(other), self.__rmod__(other)

    __neg__ = _unary(np.negative)
    def __pos__(self): return self
    __abs__ = _unary(np.absolute)
    def __invert__(self): return apply(np.invert, self)

    def __round__(self, ndigits=None):
        """``round(t)`` of a scalar Tensor is a Python int, as ``round`` of a number is;
        ``round(t, n)``, or of a Tensor with axes, is ``np.round`` (as for an ndarray),
        whose gradient is None, as ``tf.round``'s."""
        if ndigits is None and not np.ndim(self._array()):
            return round(self._item())
        return apply(np.round, self, 0 if ndigits is None else ndigits)

    def __getitem__(self, index):
        return apply(operator.getitem, self, _raw_index(index))

    # --- the ndarray methods numeric code uses ---
    @property
    def T(self):
        return apply(np.transpose, self)

    @property
    def real(self):
        return apply(np.real, self)

    @property
    def imag(self):
        return apply(np.imag, self)

    def conj(self):
        return apply(np.conjugate, self)

    conjugate = conj

    def sum(self, axis=None, dtype=None, keepdims=False):
        return apply(np.sum, self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, keepdims=False):
        return apply(np.mean, self, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, keepdims=False):
        return apply(np.prod, self, axis=axis, dtype=dtype, keepdims=keepdims)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return apply(np.var, self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return apply(np.std, self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return apply(np.max, self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return apply(np.min, self, axis=axis, keepdims=keepdims)

    def argmax(self, axis=None):
        return apply(np.argmax, self, axis=axis)

    def argmin(self, axis=None):
        return apply(np.argmin, self, axis=axis)

    def cumsum(self, axis=None):
        return apply(np.cumsum, self, axis=axis)

    def cumprod(self, axis=None):
        return apply(np.cumprod, self, axis=axis)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return apply(np.diagonal, self, offset, axis1, axis2)

    def repeat(self, repeats, axis=None):
        return apply(np.repeat, self, repeats, axis=axis)

    def take(self, indices, axis=None):
        return apply(np.take, self, _raw_index(indices), axis=axis)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return apply(np.reshape, self, _raw_index(shape), order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]
        return apply(np.transpose, self, tuple(axes) if axes else None)

    def swapaxes(self, axis1, axis2):
        return apply(np.swapaxes, self, axis1, axis2)

    def squeeze(self, axis=None):
        return apply(np.squeeze, self, axis=axis)

    def flatten(self):
        return apply(np.ravel, self)

    def ravel(self):
        return apply(np.ravel, self)

    def dot(self, other):
        return apply(np.dot, self, other)

    def clip(self, a_min=None, a_max=None):
        return apply(np.clip, self, a_min, a_max)

    def copy(self):
        return apply(np.copy, self)

    def astype(self, dtype):
        return apply(_cast, self, np.dtype(dtype))

    def round(self, decimals=0):
        return apply(np.round, self, decimals)

    def trace(self, offset=0, axis1=0, axis2=1):
        return apply(np.trace, self, offset, axis1, axis2)

    def any(self, axis=None, keepdims=False):
        return apply(np.any, self, axis=axis, keepdims=keepdims)

    def all(self, axis=None, keepdims=False):
        return apply(np.all, self, axis=axis, keepdims=keepdims)

    def tolist(self):
        _number_of(self, ".tolist()")
        return np.asarray(self._array()).tolist()

    def item(self, *args):
        _number_of(self, ".item()")
        return np.asarray(self._array()).item(*args)

    # --- NumPy's protocols: NumPy functions on Tensors are recorded primitives ---
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if kwargs.get("out") is not None:
            raise TypeError("srcdiff Tensors are immutable: NumPy's out= cannot write into one")
        if method == "__call__":
            if ufunc.nout > 1 and registry.expansion_of(ufunc) is not None:  # np.divmod
                return registry.expand(ufunc, *inputs, **kwargs)
            if any(map(isinstance, inputs, _SEQUENCE_TYPES)):  # np.matmul([[1., 2.]], w)
                inputs = _sequences_as_inputs(ufunc, inputs)
            return apply(ufunc, *inputs, **kwargs)
        if registry.expansion_of(getattr(ufunc, method)) is not None:  # np.add.reduce
            return registry.expand(getattr(ufunc, method), *inputs, **kwargs)
        return _apply_untracked(getattr(ufunc, method), f"numpy.{ufunc.__name__}.{method}",
                                inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        form = kwargs and registry.form_of(func, kwargs)
        if form:  # np.linalg.svd(t, compute_uv=False): another function
            return form(*args, **kwargs)
        if registry.expansion_of(func) is not None:  # several results: np.split, eigh
            return registry.expand(func, *args, **kwargs)
        if joins.is_join(func):  # np.concatenate([a, b]), np.hstack, np.block...
            return joins.join(func, args, kwargs)
        if func in _WRITERS:  # np.copyto(buf, t): into the caller's array
            return _write_into(func, args, kwargs)
        if any(map(isinstance, args, _SEQUENCE_TYPES)):  # np.where(c, [1., 2.], x)
            args = _sequences_as_inputs(func, args)
        return apply(func, *args, **kwargs)


# NumPy's functions that write into their first argument.
_WRITERS = frozenset({np.copyto, np.put, np.putmask, np.place, np.put_along_axis,
                      np.fill_diagonal})


def _write_into(func, args, kwargs):
    """``func(dst, ...)`` writing into the ndarray ``dst`` itself (``apply`` would write
    into the copy a tape keeps): refused into a Tensor (immutable), or of a value a
    recording tape follows (an ndarray carries no gradient), as ``dst[:] = t`` is."""
    dst, rest = (args[0], args[1:]) if args else (kwargs.pop("dst", None), args)
    name = registry.primitive_name(func)
    if isinstance(dst, _ArrayLike):
        raise TypeError(f"srcdiff Tensors are immutable: {name} cannot write into one")
    values = [*rest, *kwargs.values()]
    if any(isinstance(v, _ArrayLike) and followed(v) for v in values):
        raise TypeError(f"{name} would write a Tensor that a recording GradientTape "
                        "follows into an ndarray, which carries no gradient: build the "
                        "result with ops on Tensors (np.where, np.concatenate, sd.stack)")
    return func(dst, *map(_raw, rest), **{k: _raw(v) for k, v in kwargs.items()})


class _Ref:
    """A hashable reference to a Tensor or Variable (TensorFlow's ``x.ref()``)."""

    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def deref(self):
        return self._obj

    def __hash__(self):
        return id(self._obj)

    def __eq__(self, other):
        return isinstance(other, _Ref) and other._obj is self._obj


class Tensor(_ArrayLike):
    """An immutable n-dimensional array over a NumPy ndarray.

    Made by ``sd.constant`` and by every op; Python operators, NumPy functions
    (``np.sin(t)``) and array methods on Tensors return Tensors, recorded by active
    tapes.  ``.numpy()`` is the ndarray.  Example::

        >>> import numpy as np, srcdiff as sd
        >>> t = sd.constant([1.0, 4.0])
        >>> print(np.sqrt(t) * 2)
        srcdiff.Tensor([2. 4.], shape=(2,), dtype=float32)
    """

    __slots__ = ("_value", "__weakref__")

    def __init__(self, value):
        self._value = value

    def _array(self):
        return self._value

    def __repr__(self):
        return f"<srcdiff.Tensor: shape={self.shape}, dtype={self.dtype.name}, numpy={_numpy_repr(self._value)}>"

    def __str__(self):
        return f"srcdiff.Tensor({_numpy_str(self._value)}, shape={self.shape}, dtype={self.dtype.name})"

    def __reduce__(self):
        return (Tensor, (self._value,))


def _number_of(value, how):
    """Python numbers are made of ``value`` (``how``): refused where srcdiff runs code
    written for the compiler on the tape (see eager_numbers.py)."""
    if STATE.exact:
        from .eager_numbers import refuse_number  # it imports this module
        refuse_number(value, how)


def _numpy_repr(value):
    # TensorFlow shows a scalar as the Python number it holds (float32 0.1 is
    # 0.10000000149011612), and an array as NumPy's repr.
    text = repr(value.item()) if np.ndim(value) == 0 else repr(value)
    return _break_if_multiline(text)


def _numpy_str(value):
    return _break_if_multiline(str(value))


def _break_if_multiline(text):
    return ("\n" + text) if "\n" in text else text


_variable_ids = itertools.count()


class Variable(_ArrayLike):
    """A mutable value: ``assign`` replaces it; reads under a tape are recorded.

    A read hands out a Tensor over the current array; ``assign`` installs a new
    array rather than writing into the old one, so every value a tape saved
    stays what it was when it was read.  Example::

        >>> import srcdiff as sd
        >>> v = sd.Variable(2.0)
        >>> with sd.GradientTape() as tape:     # trainable Variables are watched
        ...     y = v ** 3
        >>> print(tape.gradient(y, v).numpy())
        12.0
        >>> _ = v.assign_sub(0.5)
        >>> print(v.numpy())
        1.5
    """

    __slots__ = ("_value", "trainable", "_name", "_uid", "__weakref__")

    def __init__(self, initial_value=None, trainable=True, name=None, dtype=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if callable(initial_value):
            initial_value = initial_value()
        self._value = np.array(_as_array(initial_value, as_dtype(dtype)))
        self.trainable = trainable
        self._name = name or "Variable"
        self._uid = next(_variable_ids)

    def _array(self):
        return self._value

    @property
    def name(self):
        return f"{self._name}:0"

    def value(self):
        return self.read_value()

    def read_value(self):
        """The current value as a Tensor; recorded by tapes that watch this variable."""
        snapshot = Tensor(self._value)
        if STATE.tapes:
            for tape in STATE.tapes:
                tape._read_variable(self, snapshot)
        return snapshot

    def assign(self, value, use_locking=None, name=None, read_value=True):
        self._value = self._same_shape(value)
        return self

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        self._value = self._value + self._same_shape(delta)
        return self

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        self._value = self._value - self._same_shape(delta)
        return self

    def _same_shape(self, value):
        """A new array of ``value`` with this variable's dtype; TensorFlow does not
        broadcast in assignments, so the shape must be the variable's, and converts
        numbers and ndarrays but no Tensor or Variable of another dtype (ValueError)."""
        if isinstance(value, _ArrayLike) and value.dtype != self._value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {self._value.dtype.name} "
                             f"for Tensor with dtype {value.dtype.name}: {value!r}; "
                             "convert it with sd.cast first")
        value = np.array(_as_array(value, self._value.dtype))
        if value.shape != self._value.shape:
            raise ValueError(f"Cannot assign a value of shape {value.shape} to variable "
                             f"'{self.name}' of shape {self._value.shape}")
        return value

    def __repr__(self):
        return (f"<srcdiff.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={_numpy_repr(self._value)}>")

    __str__ = __repr__


class IndexedSlices:
    """A sparse gradient: the rows ``values`` at ``indices`` of a ``dense_shape`` array."""

    __slots__ = ("values", "indices", "dense_shape")

    def __init__(self, values, indices, dense_shape):
        self.values = values
        self.indices = indices
        self.dense_shape = tuple(int(n) for n in dense_shape)

    @property
    def shape(self):
        return TensorShape(self.dense_shape)

    @property
    def dtype(self):
        return np.result_type(_raw(self.values))

    def dense(self):
        """The dense array (a Tensor when the values are Tensors)."""
        values = self.values
        return rules.helpers.unindex(values, _raw(self.indices), np.zeros(self.dense_shape))

    def numpy(self):
        return np.asarray(_raw(self.dense()))

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.numpy(), dtype=dtype)

    def __add__(self, other):
        if isinstance(other, IndexedSlices):
            return IndexedSlices(concat_values(self.values, other.values),
                                 np.concatenate([_raw(self.indices), _raw(other.indices)]),
                                 self.dense_shape)
        return self.dense() + other

    def __radd__(self, other):
        return other + self.dense()

    def __repr__(self):
        return (f"IndexedSlices(indices={_raw(self.indices)!r}, values={self.values!r}, "
                f"dense_shape={self.dense_shape})")


def concat_values(a, b):
    return _concatenate(a, b, axis=0)


# --- conversion ---

def _as_array(value, dtype=None):
    """An ndarray from any array-like, with TensorFlow's defaults for Python numbers."""
    if isinstance(value, _ArrayLike):
        value = value._array()
    elif isinstance(value, IndexedSlices):
        value = value.numpy()
    if dtype is not None:
        return np.asarray(value, dtype=dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        array = value
    else:
        array = np.asarray(value)
    if array.dtype.hasobject:  # None, an object, a list holding one: as TensorFlow
        raise ValueError(f"Attempt to convert a value ({value!r:.60}) with an unsupported "
                         f"type ({type(value)}) to a Tensor.")
    if array is value:
        return value
    # Python floats become float32 and Python ints int32, as in TensorFlow.
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64 and np.all(np.abs(array) < 2 ** 31):
        return array.astype(np.int32)
    return array


def constant(value, dtype=None, shape=None, name=None):
    """A Tensor holding ``value`` (floats become float32, ints int32, like TensorFlow;
    ndarrays keep their dtype): ``sd.constant([[1.0, 2.0]])``, ``sd.constant(0, shape=[2, 3])``.

    A Tensor of that dtype and shape is returned itself, as TensorFlow does, so a
    gradient flows through ``constant(t)``; any other conversion of a value a recording
    tape follows would lose the gradient, and is refused."""
    if isinstance(value, _ArrayLike):
        if (isinstance(value, Tensor) and (dtype is None or as_dtype(dtype) == value.dtype)
                and (shape is None or tuple(shape) == value.shape)):
            return value
        if STATE.tapes:
            _refuse_if_followed(value)
    array = _as_array(value, as_dtype(dtype))
    if shape is not None:
        shape = tuple(shape)
        array = (np.broadcast_to(array, shape) if array.size == 1 or np.ndim(array) == 0
                 else np.reshape(array, shape))
    return Tensor(np.array(array))


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """A Tensor from a Tensor, Variable, ndarray, number, nested list or IndexedSlices
    (densified): ``sd.convert_to_tensor(np.ones(3))`` keeps float64."""
    dtype = as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(
                f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                f"{value.dtype.name}: {value!r}")
        return value
    if isinstance(value, Variable):
        return value.read_value() if dtype is None else cast(value.read_value(), dtype)
    if isinstance(value, IndexedSlices):
        return convert_to_tensor(value.dense(), dtype)
    if isinstance(value, (list, tuple)) and any(isinstance(v, _ArrayLike) for v in _leaves(value)):
        return apply(_stack, *[convert_to_tensor(v, dtype) for v in value], axis=0)
    if dtype is None and dtype_hint is not None and not isinstance(value, (np.ndarray, np.generic)):
        dtype = as_dtype(dtype_hint)
    return Tensor(_as_array(value, dtype))


def _leaves(value):
    for v in value:
        if isinstance(v, (list, tuple)):
            yield from _leaves(v)
        else:
            yield v


def cast(x, dtype, name=None):
    """``x`` as ``dtype``; the gradient flows back through float-to-float casts."""
    return apply(_cast, x, np.dtype(dtype))


# --- the one door to a primitive ---

def _raw(value):
    """The array behind a value; anything else unchanged."""
    if isinstance(value, _ArrayLike):
        return value._array()
    return value


def _raw_index(index):
    """An index or shape with any Tensors in it replaced by their arrays."""
    if isinstance(index, tuple):
        return tuple(_raw(i) for i in index)
    if isinstance(index, list) and any(isinstance(i, _ArrayLike) for i in index):
        return [_raw(i) for i in index]
    return _raw(index)


def _wrap(value):
    if isinstance(value, (np.ndarray, np.generic)):
        return Tensor(value)
    return value


def apply(fn, *args, **kwargs):
    """Run primitive ``fn`` on the arrays behind ``args``; return a Tensor.

    When a tape is recording, reads of Variables are taken first (so the
    record keeps the value read), and the call is offered to every tape."""
    # This runs once per operation: every check here is the cheapest that is exact.
    tapes = STATE.tapes
    if kwargs and any(isinstance(v, _ArrayLike) for v in kwargs.values()):
        args, kwargs = _tensors_by_position(fn, args, kwargs)  # rules see positional inputs
    # The common arities unrolled, for Tensors and Python floats (no Variable to read
    # first, their own raw values): no comprehension frame or Variable scan per op.
    if len(args) == 2:
        a, b = args
        ta, tb = type(a), type(b)
        if (ta is Tensor or ta is float) and (tb is Tensor or tb is float):
            raw = (a._value if ta is Tensor else a, b._value if tb is Tensor else b)
        else:
            args, raw = _raw_args(args, tapes)
    elif len(args) == 1 and type(args[0]) is Tensor:
        raw = (args[0]._value,)
    else:
        args, raw = _raw_args(args, tapes)
    if kwargs:
        kwargs = {k: _raw(v) if isinstance(v, _ArrayLike) or not tapes else _kept(v)
                  for k, v in kwargs.items()}
    return _run(fn, _RAW.get(fn, fn), args, raw, kwargs, tapes)


def _run(fn, impl, args, raw, kwargs, tapes, rule=None):
    """``impl``, the function behind primitive ``fn``, on ``raw``, the arrays behind
    ``args``: a Tensor, recorded on each of ``tapes`` that follows an input (under
    ``rule``, when the caller has it: else the tape looks ``fn``'s up)."""
    out = impl(*raw, **kwargs) if kwargs else impl(*raw)
    if type(out) is not _NDARRAY and not isinstance(out, _GENERIC):
        return _not_an_array(fn, args, out, tapes)
    result = _new(Tensor)  # Tensor(out) without the __init__ frame
    result._value = out
    for tape in tapes:  # the tape keeps ``raw`` too: its backward walk reads arrays
        tape._record(fn, args, raw, kwargs, result, rule)
    return result


# ``_run`` of one and two inputs without keywords, the commonest calls, unrolled: the
# call of ``impl`` spelled out (no unpacking call), no tuples packed (each tape's
# ``_record1``/``_record2`` takes the inputs as they are).
def _run1(fn, impl, a, x, tapes):
    """``_run(fn, impl, (a,), (x,), None, tapes)``."""
    out = impl(x)
    if type(out) is not _NDARRAY and not isinstance(out, _GENERIC):
        return _not_an_array(fn, (a,), out, tapes)
    result = _new(Tensor)
    result._value = out
    for tape in tapes:
        tape._record1(fn, a, x, result)
    return result


def _run2(fn, a, b, x, y, tapes):
    """``_run(fn, fn, (a, b), (x, y), None, tapes)``."""
    out = fn(x, y)
    if type(out) is not _NDARRAY and not isinstance(out, _GENERIC):
        return _not_an_array(fn, (a, b), out, tapes)
    result = _new(Tensor)
    result._value = out
    for tape in tapes:
        tape._record2(fn, a, b, x, y, result)
    return result


def _not_an_array(fn, args, out, tapes):
    """What ``_run`` returns for ``out``, a result that is neither an array nor a NumPy
    number: each array of a list or tuple wrapped (refused if a tape follows an input
    of a differentiable ``fn``: no record holds several results), anything else as is."""
    if isinstance(out, (list, tuple)):
        if tapes and not rules.is_nondifferentiable(fn):
            _refuse_if_tracked(fn, args, tapes)
        return type(out)(_wrap(o) for o in out)
    return out


def _raw_args(args, tapes):
    """``args`` with Variables read and ndarrays kept (when a tape records: the record
    keeps the value read), and the arrays behind them.  (Only this path of ``apply``
    meets ndarrays: its fast paths and ``_run``'s other callers take Tensors and floats.)"""
    if tapes:
        if any(map(_is_variable, args)):
            args = tuple(a.read_value() if isinstance(a, Variable) else a for a in args)
        if _NDARRAY in map(type, args):
            args = tuple(map(_kept, args))
    return args, tuple([a._value if type(a) is Tensor else _raw(a) for a in args])


def _kept(value):
    """``value``, or a copy if it is an ndarray that may change later: a recorded
    operation's rule must read the values the operation read, though the caller may
    write into the array afterwards (TensorFlow converts it to a constant, a copy)."""
    if type(value) is _NDARRAY and (value.flags.writeable or value.base is not None):
        return value.copy()
    return value


def _tensors_by_position(fn, args, kwargs):
    """Move Tensors passed by keyword (``np.clip(x, a_min=lo)``) to their positions,
    so the rule of each input sees it: a silent missing gradient is never an answer."""
    try:
        parameters = list(inspect.signature(getattr(fn, "raw", fn)).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    positional = [p.name for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    last = max((positional.index(k) for k, v in kwargs.items()
                if isinstance(v, _ArrayLike) and k in positional), default=-1)
    stuck = [k for k, v in kwargs.items() if isinstance(v, _ArrayLike) and k not in positional]
    if stuck:
        raise TypeError(f"{registry.primitive_name(fn)} cannot take the Tensor argument "
                        f"{stuck[0]!r} by keyword; pass it by position")
    if last < len(args):
        return args, kwargs
    kwargs = dict(kwargs)
    defaults = {p.name: p.default for p in parameters}
    args = list(args)
    for name in positional[len(args):last + 1]:
        if name in kwargs:
            args.append(kwargs.pop(name))
        elif defaults.get(name, inspect.Parameter.empty) is not inspect.Parameter.empty:
            args.append(defaults[name])
        else:
            raise TypeError(f"{registry.primitive_name(fn)} is missing argument {name!r}")
    return tuple(args), kwargs


_new = object.__new__
_NDARRAY, _GENERIC = np.ndarray, np.generic  # module constants: one global read, not two
_RAW = registry.RAW

# ``isinstance(value, Variable)`` as a C-level callable, so ``map`` runs it without frames.
_is_variable = Variable.__instancecheck__
# With ``map(isinstance, args, _SEQUENCE_TYPES)``, lists and tuples are found at C level.
_SEQUENCE_TYPES = itertools.repeat((list, tuple))


def _sequences_as_inputs(fn, args):
    """The arguments of a NumPy function ``fn`` given to a Tensor, with their lists and
    tuples as the primitive must take them.

    Where ``fn``'s rule has a derivative, a list becomes the array NumPy makes of it, its
    Tensors joined by a recorded ``np.stack`` (a rule reads arrays, and a Tensor hidden
    in a list would have no adjoint).  Elsewhere (a shape, an index, a pad width) a list
    of Tensors becomes one of their arrays (NumPy, given the Tensors, would hand the call
    back to ``__array_function__`` again and again); one that a recording tape follows
    there would lose its gradient, and is refused."""
    tapes = STATE.tapes
    rule = registry.rule_of(fn)
    if rule is None:
        differentiable = ()
    elif rule.argnum_vjp is not None:
        differentiable = range(len(args))
    else:
        differentiable = [i for i, vjp in enumerate(rule.vjps) if vjp is not None]
    converted = list(args)
    for i, a in enumerate(args):
        if not isinstance(a, (list, tuple)):
            continue
        tensors = [v for v in _leaves(a) if isinstance(v, _ArrayLike)]
        if i in differentiable:
            if tensors or tapes:
                converted[i] = _array_of(a)
        elif tensors:
            if tapes and any(t._tracks_any([v.read_value() if isinstance(v, Variable) else v
                                            for v in tensors]) for t in tapes):
                refuse_without_rule(registry.primitive_name(fn))
            converted[i] = _raw_leaves(a)
    return tuple(converted)


def _array_of(items):
    """``np.array(items)`` of a (nested) list with Tensors in it: their recorded stack."""
    if not any(isinstance(v, _ArrayLike) for v in _leaves(items)):
        return np.asarray(items)
    return apply(_stack, *[_array_of(v) if isinstance(v, (list, tuple)) else v
                           for v in items], axis=0)


def _raw_leaves(items):
    """A (nested) list or tuple with the arrays in place of its Tensors."""
    return type(items)(_raw_leaves(v) if isinstance(v, (list, tuple)) else _raw(v)
                       for v in items)


def _refuse_if_followed(value):
    """NumPy is taking the array out of ``value`` (``np.asarray(t)``, or ``np.array`` or
    ``np.sum`` given a list of Tensors: NumPy never hands those calls to a Tensor).
    The result is a plain ndarray, through which no gradient can flow, so this is refused
    while a recording tape follows ``value`` (as JAX refuses it for a traced value)."""
    if followed(value):
        raise TypeError(
            "NumPy converted a Tensor that a recording GradientTape follows into an "
            "ndarray (np.asarray(t), or np.array/np.sum/... of a list of Tensors): no "
            "gradient flows through an ndarray. Join Tensors with np.stack, "
            "np.concatenate or sd.stack (recorded), or take t.numpy() to use the value "
            "outside the gradient.")


def followed(value):
    """Whether a recording tape follows ``value`` (a Variable: once read, which may
    watch it)."""
    if isinstance(value, Variable):
        value = value.read_value()
    return any(tape._tracks_any((value,)) for tape in STATE.tapes)


def _refuse_if_tracked(fn, args, tapes):
    _refuse_if_watched(registry.primitive_name(fn), args, tapes)


def _refuse_if_watched(name, args, tapes):
    if tapes and any(map(_is_variable, args)):  # read: a trainable one is watched then
        args = [a.read_value() if isinstance(a, Variable) else a for a in args]
    for tape in tapes:
        if tape._tracks_any(args):
            refuse_without_rule(name)


def _apply_untracked(fn, name, args, kwargs):
    """Run a NumPy callable that has no rule; refuse if a watched value flows into it."""
    _refuse_if_watched(name, args, STATE.tapes)
    out = fn(*[_raw(a) for a in args], **{k: _raw(v) for k, v in kwargs.items()})
    return _wrap(out)


registry.TENSOR_TYPES = (_ArrayLike,)
registry.APPLY = apply

from . import joins  # noqa: E402  (it records its joins through apply)
