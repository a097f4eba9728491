"""Gradient control: custom_gradient and register_gradient."""
import functools
import inspect
import sys

import numpy as np

from .. import nest
from .._recording import STATE
from ..rules import defvjp_argnum, primitive, unbroadcast
from ..rules.registry import Rule
from ..tensor import Tensor, _ArrayLike, _raw, apply, cast


def _counted(adjoints, n):
    """``adjoints``, checked to be one per input as TensorFlow checks them (a lone adjoint
    is the one input's); too few or too many would silently misplace them."""
    given = len(adjoints) if isinstance(adjoints, (tuple, list)) else 1
    if given != n:
        raise ValueError(f"custom_gradient function expected to return {n} gradients, "
                         f"but returned {given} instead.")
    return adjoints


class _CustomCall:
    """One call of a ``custom_gradient`` function, as a primitive with its own rule.

    ``shapes`` is None for a function of one output (``value``); else ``value`` packs
    outputs of these shapes, raveled one after another (see ``_packed_call``), and
    ``grad_fn`` is given one adjoint per output."""

    __slots__ = ("value", "grad_fn", "srcdiff_rule", "_last", "_shapes")

    def __init__(self, value, grad_fn, shapes=None):
        self.value = value
        self.grad_fn = grad_fn
        self._shapes = shapes
        self._last = (None, None)
        self.srcdiff_rule = Rule(self, (), "custom_gradient", argnum_vjp=self._vjp)

    def __call__(self, *args):
        return self.value

    def _vjp(self, i, g, ans, *args):
        # grad_fn gives every input's adjoint at once: call it once per g.
        seen, adjoints = self._last
        if seen is not g:
            traced = isinstance(g, _ArrayLike)
            dy = g if traced else Tensor(g)
            adjoints = (self.grad_fn(dy) if self._shapes is None
                        else self.grad_fn(*_unpacked(dy, self._shapes)))
            if not traced:
                adjoints = (tuple(_raw(a) for a in adjoints)
                            if isinstance(adjoints, (tuple, list)) else _raw(adjoints))
            self._last = (g, adjoints)
        return rule_adjoint(_counted(adjoints, len(args)), i)


def custom_gradient(f):
    """Decorate ``f(*x) -> (y, grad_fn)``; tapes use ``grad_fn(dy)`` as y's vjp.

    TensorFlow's decorator, for the tape (the compiler refuses it: give it
    ``sd.register_gradient`` instead).  ``f``'s operations are recorded too, so a
    ``grad_fn`` built from them differentiates under an outer tape.  Example::

        >>> import srcdiff as sd
        >>> @sd.custom_gradient
        ... def clip_gradient(x):
        ...     return sd.identity(x), lambda dy: sd.clip_by_value(dy, -1.0, 1.0)
        >>> x = sd.constant(2.0)
        >>> with sd.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = clip_gradient(x) * 5.0
        >>> print(tape.gradient(y, x).numpy())
        1.0
    """
    @functools.wraps(f)
    def call(*args, **kwargs):
        # f's operations are recorded, as in TensorFlow, so that a grad_fn using
        # f's intermediates differentiates under an outer tape; y itself gets
        # grad_fn as its one rule.  As in TensorFlow, the inputs are the positional
        # arguments: no gradient reaches a keyword argument.
        STATE.custom_forward += 1
        try:
            if STATE.tapes:  # only a recording call can be asked for variables' gradients
                y, grad_fn, variables = _watching_variables(f, args, kwargs)
            else:
                (y, grad_fn), variables = f(*args, **kwargs), ()
        finally:
            STATE.custom_forward -= 1
        if variables:
            grad_fn = _with_variables(grad_fn, variables, len(args))
        if isinstance(y, (list, tuple, dict)):
            return _packed_call(y, grad_fn, (*args, *variables))
        return apply(_CustomCall(_raw(y), grad_fn), *args, *variables)
    return call


def _packed_call(y, grad_fn, inputs):
    """A custom_gradient call with a nested structure ``y`` of outputs, as TensorFlow
    makes it: one primitive whose result packs them all, flat, and the outputs sliced
    back out of it (recorded), so ``grad_fn`` is called once with every output's
    adjoint, zeros for an output the target does not use.  Returns ``y``'s structure."""
    leaves = [np.asarray(_raw(v)) for v in nest.flatten(y)]
    dtype = np.result_type(*leaves)
    packed = np.concatenate([v.astype(dtype).ravel() for v in leaves])
    whole = apply(_CustomCall(packed, grad_fn, [v.shape for v in leaves]), *inputs)
    outputs = _unpacked(whole, [v.shape for v in leaves])
    return nest.pack_sequence_as(y, [o if v.dtype == dtype else cast(o, v.dtype)
                                     for o, v in zip(outputs, leaves)])


def _unpacked(flat, shapes):
    """The values of ``shapes`` that the 1-d ``flat`` holds raveled, one after another."""
    pieces, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        pieces.append(flat[start:start + size].reshape(shape))
        start += size
    return pieces


def _watching_variables(f, args, kwargs):
    """``f(*args, **kwargs)`` and the trainable Variables it read that are not among
    ``args``: as in TensorFlow, their gradients come from ``grad_fn(dy, variables=...)``."""
    from ..tape import GradientTape  # the tape imports the ops
    with GradientTape() as watcher:
        y, grad_fn = f(*args, **kwargs)
    given = {id(a) for a in args}
    return y, grad_fn, tuple(v for v in watcher.watched_variables() if id(v) not in given)


def _with_variables(grad_fn, variables, n_inputs):
    """The grad_fn giving the adjoints of the inputs, then of ``variables``, as one tuple."""
    parameters = inspect.signature(grad_fn).parameters
    if "variables" not in parameters and not any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        raise TypeError(
            "If using @custom_gradient with a function that uses variables, then grad_fn "
            f"must accept a keyword argument 'variables' (the function read {len(variables)} "
            "trainable Variable(s) it was not given as arguments).")

    def joint(*dys):
        inputs, adjoints = grad_fn(*dys, variables=list(variables))
        if len(adjoints) != len(variables):
            raise ValueError(f"custom_gradient's grad_fn must return {len(variables)} "
                             f"variable gradient(s), got {len(adjoints)}")
        inputs = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
        if len(inputs) != n_inputs:
            raise ValueError(f"custom_gradient's grad_fn must return {n_inputs} input "
                             f"gradient(s), got {len(inputs)}")
        return (*inputs, *adjoints)
    return joint


def register_gradient(fn):
    """Register the decorated ``rule(g, ans, *args, **kwargs)`` as the derivative of ``fn``.

    The rule returns the adjoint of each positional input (a tuple when there are
    several).  The tape then treats ``fn`` as one primitive: the module-level
    name of ``fn`` is rebound to a primitive wrapper that records calls on
    Tensors; the compiler inlines the rule instead of differentiating ``fn``.
    Check a rule with ``sd.check_grads``.  Example (``cube`` defined in a module)::

        def cube(x):
            return x ** 3

        @sd.register_gradient(cube)
        def cube_grad(g, ans, x):
            return g * 3.0 * x ** 2

        sd.grad(lambda x: np.sum(cube(x)))(np.array([1.0, 2.0]))   # [3., 12.]
    """
    def decorate(rule):
        wrapper = primitive(fn)
        vjp = functools.partial(_select_adjoint, rule)
        vjp.__doc__ = rule.__doc__
        vjp.__signature__ = _with_index(rule)  # what the rule models (Rule.parameters)
        vjp.given_every_keyword = True  # its **kwargs, if any, are the rule's to read
        for f in (fn, wrapper):
            defvjp_argnum(f, vjp)
        wrapper.srcdiff_user_rule = fn.srcdiff_user_rule = rule
        module = sys.modules.get(getattr(fn, "__module__", None))
        if module is not None and getattr(module, fn.__name__, None) is fn:
            setattr(module, fn.__name__, wrapper)
        return rule
    if not callable(fn) or inspect.isclass(fn):
        raise TypeError(f"register_gradient takes the function to differentiate, got {fn!r}")
    return decorate


def _with_index(rule):
    """The signature of ``rule`` with the input's index first, as an argnum vjp's."""
    signature = inspect.signature(rule)
    index = inspect.Parameter("i", inspect.Parameter.POSITIONAL_ONLY)
    return signature.replace(parameters=[index, *signature.parameters.values()])


def _select_adjoint(rule, i, g, ans, *args, **kwargs):
    # a rule may leave an input's adjoint broadcast to the result's shape
    return unbroadcast(rule_adjoint(rule(g, ans, *args, **kwargs), i), args[i])


def rule_adjoint(adjoints, i):
    """Input ``i``'s adjoint among what a rule (registered, or a custom_gradient's
    grad_fn) returned: one of a tuple, or a lone adjoint, which is the first input's
    (the others passed constants, as ``cube(x, 3)``); asked of another input, it is
    refused, never given it."""
    if isinstance(adjoints, (tuple, list)):
        return adjoints[i]
    if i:
        raise ValueError(f"a registered rule returned one adjoint, but argument {i + 1} "
                         "needs one too: return a tuple, one per positional argument")
    return adjoints
