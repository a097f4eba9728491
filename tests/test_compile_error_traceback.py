"""A CompileError reaches the user with a short traceback: raised from the public entry
point they called (sd.grad(f)(x), an @sd.function call, sd.jacobian, sd.vjp,
sd.adjoint_source, sd.check_grads, a helper compiled inside), the compiler's frames and
the exception chain dropped, the message still locating their line with a caret;
SRCDIFF_DEBUG=1 keeps the whole chain.  A refused lambda says where it is."""
import importlib
import linecache
import os
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest

import srcdiff as sd
from test_compiler_errors import uses_try  # a function with a 'try', refused

PACKAGE = os.path.dirname(sd.__file__)
ERRORS_FILE = sys.modules[uses_try.__module__].__file__
X = np.array([0.5, 1.0, 1.5])


def calls_a_refused_helper(x):
    return uses_try(x) * 2.0


compiled_try = sd.function(uses_try)


ENTRY_POINTS = {
    "sd.grad": lambda: sd.grad(uses_try)(X),
    "sd.value_and_grad": lambda: sd.value_and_grad(uses_try)(X),
    "sd.jacobian": lambda: sd.jacobian(uses_try)(X),
    "sd.vjp": lambda: sd.vjp(uses_try, X),
    "sd.adjoint_source": lambda: sd.adjoint_source(uses_try),
    "sd.check_grads": lambda: sd.check_grads(uses_try, (X,)),
    "helper compiled inside": lambda: sd.grad(calls_a_refused_helper)(X),
    "@sd.function": lambda: compiled_try(X),
    "@sd.function under a tape": lambda: _on_tape(compiled_try),
}


def _on_tape(f):
    x = sd.constant(X)
    with sd.GradientTape() as tape:
        tape.watch(x)
        return f(x)


def internal_frames(error):
    return [frame for frame in traceback.extract_tb(error.__traceback__)
            if frame.filename.startswith(PACKAGE)]


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_a_refusal_has_a_short_traceback_and_the_users_line(name, monkeypatch):
    monkeypatch.delenv("SRCDIFF_DEBUG", raising=False)
    with pytest.raises(sd.CompileError) as info:
        ENTRY_POINTS[name]()
    error = info.value
    assert len(internal_frames(error)) <= 2, traceback.format_tb(error.__traceback__)
    assert error.__cause__ is None and error.__suppress_context__
    message = str(error)
    assert f'File "{ERRORS_FILE}", line' in message
    assert "    try:" in message and "^" in message  # the source line and its caret
    printed = "".join(traceback.format_exception(error))
    assert "During handling" not in printed and "direct cause" not in printed


@pytest.mark.parametrize("name", ["sd.grad", "@sd.function", "helper compiled inside"])
def test_srcdiff_debug_keeps_the_compilers_frames(name, monkeypatch):
    monkeypatch.setenv("SRCDIFF_DEBUG", "1")
    with pytest.raises(sd.CompileError) as info:
        ENTRY_POINTS[name]()
    frames = internal_frames(info.value)
    assert len(frames) > 5
    assert any("compiler" in frame.filename for frame in frames)


def test_a_script_shows_the_users_frames_and_the_message(tmp_path):
    """What a user running a script sees: their frames, one of srcdiff's, the message."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        import srcdiff as sd


        def f(x):
            with open(__file__) as handle:
                handle.read()
            return np.sum(x)


        sd.grad(f)(np.ones(3))
        """))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(PACKAGE)}
    env.pop("SRCDIFF_DEBUG", None)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=env, timeout=120)
    stderr = result.stderr
    assert result.returncode == 1
    assert stderr.count('File "') <= 5, stderr  # the script, srcdiff's entry, the message
    assert "with open(__file__) as handle:" in stderr and "^" in stderr
    assert "driver.py" not in stderr and "unit.py" not in stderr
    assert "SRCDIFF_DEBUG=1" in stderr


def test_a_refused_lambda_says_where_it_is(tmp_path, monkeypatch):
    # a lambda compiles like a def; one whose source is no longer the code that runs
    # (its file edited after the import) is refused, at its place in the file
    path = tmp_path / "edited_lambda.py"
    path.write_text("import numpy as np\ndouble = (lambda v: v * 2.0)  # noqa\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    double = importlib.import_module("edited_lambda").double
    path.write_text("import numpy as np\ndouble = (lambda v: v * 3.0)  # noqa\n")
    linecache.checkcache(str(path))
    with pytest.raises(sd.CompileError) as info:
        sd.grad(double)(1.0)
    message = str(info.value)
    assert f'File "{path}", line 2' in message
    assert "double = (lambda v: v * 3.0)" in message and "^" in message
    assert "def" in message  # what to do instead