"""Reference derivatives the tape's results are checked against."""
import numpy as np


def numerical_jacobian(f, x, eps=1e-6):
    """Central finite differences of ``f`` (ndarray -> ndarray) at ``x``, in float64.

    Returns an array of shape ``f(x).shape + x.shape``."""
    x = np.array(x, dtype=np.float64)
    out_shape = np.shape(f(x))
    jac = np.zeros(out_shape + x.shape)
    for index in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        column = (np.asarray(f(x + step), np.float64) - np.asarray(f(x - step), np.float64))
        jac[(Ellipsis,) + index] = column / (2 * eps)
    return jac


def numerical_grad(f, x, eps=1e-6):
    """The gradient of a scalar ``f`` at ``x`` by central finite differences."""
    return numerical_jacobian(f, x, eps)


def module_from_source(path, text):
    """Write ``text`` (dedented) to the file ``path`` and import it as a new module:
    the compiler reads a function's source from its file."""
    import importlib.util
    import textwrap
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.path = path
    return module


def function_from_text(text, name, filename):
    """The function ``name`` that ``text`` defines, under ``filename``, with ``np`` in
    its globals; its source is findable (``linecache``), as the compiler needs."""
    import linecache
    import numpy
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = {"np": numpy}
    exec(compile(text, filename, "exec"), scope)
    return scope[name]
