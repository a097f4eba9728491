"""The other systems, differentiating the very code srcdiff does.

A workload's function is written against NumPy (``np``, and ``math`` for the
scalar loop).  Each peer runs the same code object with its own array module in
their place (``types.FunctionType`` over ``fn.__code__``): HIPS autograd's
``autograd.numpy``, ``jax.numpy`` under ``jax.jit``, PyTorch eager through a
namespace of its functions, TensorFlow inside ``tf.function``.  A peer that is
not installed, or cannot run a workload (``jax.jit`` on a branch on a traced
value), is listed as unavailable with the reason, never an error.

``value_and_grad_systems(fn, wrt, args)`` gives ``(name, call, reason)``: ``call``
takes no arguments (its inputs are converted once, outside the timing) and
returns ``(value, grads)`` as NumPy, or ``call`` is None and ``reason`` says why.
"""
import importlib
import types

import numpy as np

NAMES = ("HIPS autograd", "jax.jit", "torch eager", "tf.function")
MODULES = dict(zip(NAMES, ("autograd", "jax", "torch", "tensorflow")))
SKIPPED = set()  # module names left out of this run (``run.py --skip``)


def available():
    """{peer name: None when it runs, else the reason it does not}."""
    return {name: "skipped" if module in SKIPPED else _import_error(module)
            for name, module in MODULES.items()}


def _import_error(module):
    try:
        importlib.import_module(module)
    except Exception as error:  # ImportError, or a broken install of a large package
        return f"not installed ({type(error).__name__})"
    return None


def _same_code(fn, namespace):
    """``fn``'s code, with ``np`` and ``math`` read from ``namespace``."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": namespace,
                                            "math": namespace}, fn.__name__)


def _torch_namespace(torch):
    return types.SimpleNamespace(
        sin=torch.sin, cos=torch.cos, tanh=torch.tanh, exp=torch.exp, log=torch.log,
        sum=torch.sum, mean=torch.mean, matmul=torch.matmul)


def _tf_namespace(tf):
    return types.SimpleNamespace(
        sin=tf.sin, cos=tf.cos, tanh=tf.tanh, exp=tf.exp, log=tf.math.log,
        sum=tf.reduce_sum, mean=tf.reduce_mean, matmul=tf.linalg.matvec)


def _autograd(fn, wrt, args):
    import autograd
    import autograd.numpy as anp
    f = autograd.value_and_grad(_same_code(fn, anp), wrt)
    return lambda: f(*args)


def _jax(fn, wrt, args):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    f = jax.jit(jax.value_and_grad(_same_code(fn, jnp), wrt))
    inputs = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]

    def call():
        return jax.block_until_ready(f(*inputs))
    return call


def _torch(fn, wrt, args):
    import torch
    torch.set_num_threads(1)
    same = _same_code(fn, _torch_namespace(torch))
    inputs = [torch.tensor(a, dtype=torch.float64) for a in args]

    def call():
        leaves = [x.detach().requires_grad_(i in wrt) for i, x in enumerate(inputs)]
        value = same(*leaves)
        grads = torch.autograd.grad(value, [leaves[i] for i in wrt])
        return value, grads
    return call


def _tf(fn, wrt, args):
    import tensorflow as tf
    same = _same_code(fn, _tf_namespace(tf))
    inputs = [tf.constant(a, dtype=tf.float64) for a in args]

    @tf.function
    def value_and_grad(*xs):
        with tf.GradientTape() as tape:
            for i in wrt:
                tape.watch(xs[i])
            value = same(*xs)
        return value, tape.gradient(value, [xs[i] for i in wrt])
    return lambda: value_and_grad(*inputs)


_BUILDERS = dict(zip(NAMES, (_autograd, _jax, _torch, _tf)))


def value_and_grad_systems(fn, wrt, args, peers=NAMES):
    """``(name, call, reason)`` for each of ``peers``; ``wrt`` is a tuple of positions.

    Each call is tried once here: a peer that fails on this workload is unavailable."""
    wrt = tuple(wrt)
    systems = []
    missing = available()
    for name in peers:
        if missing[name]:
            systems.append((name, None, missing[name]))
            continue
        try:
            call = _BUILDERS[name](fn, wrt, args)
            call()
        except Exception as error:  # the peer cannot run this code as written
            systems.append((name, None, f"{type(error).__name__}: {str(error).splitlines()[0][:80]}"))
            continue
        systems.append((name, call, None))
    return systems


def as_numpy(result):
    """``(value, grads)`` of any peer as a float and a list of ndarrays."""
    value, grads = result
    return _numpy(value), [_numpy(g) for g in grads]


def _numpy(x):
    if hasattr(x, "detach"):  # torch
        x = x.detach()
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    return np.asarray(x)
