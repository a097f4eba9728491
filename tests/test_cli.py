"""``python -m srcdiff``, run as a user runs it (a subprocess): what it prints, its exit
status, and errors as one line on stderr with status 2."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import srcdiff as sd

ROOT = pathlib.Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""\
    import numpy as np

    print("top-level code ran")


    def helper(x, w):
        return np.tanh(w * x)


    def inner(v):
        return v * v


    def model(x, w):
        return np.sum(inner(helper(x, w)))


    def alone(x, w):
        return np.sum(np.sin(x) * w)


    def refused(x):
        return np.sum(x) > 0 or (y := x * 2)


    class Net:
        def loss(x):
            return np.sum(x ** 3)


    if __name__ == "__main__":
        print("the main block ran")
    """)


def run(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return subprocess.run([sys.executable, "-m", "srcdiff", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli")
    (path / "script.py").write_text(SCRIPT)
    return path


@pytest.fixture(scope="module")
def script(folder):
    """The script imported here, to compare with what the command prints."""
    sys.path.insert(0, str(folder))
    try:
        import script as module  # noqa: the file the command reads
    finally:
        sys.path.remove(str(folder))
    yield module
    sys.modules.pop("script", None)


def assert_error(result, *words):
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr  # no traceback
    assert lines[0].startswith("python -m srcdiff: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_version_is_the_package_version(folder):
    result = run("--version", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"srcdiff {sd.__version__}"


def test_show_prints_the_adjoint_source(folder, script):
    result = run("show", "script.py:alone", "--wrt", "x,w", cwd=folder)
    assert result.returncode == 0, result.stderr
    expected = sd.adjoint_source(script.alone, ("x", "w"))
    assert result.stdout == "top-level code ran\n" + expected


def test_the_main_block_does_not_run(folder):
    result = run("show", "script.py:alone", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert "top-level code ran" in result.stdout  # imported, as --help says
    assert "the main block ran" not in result.stdout


def test_help_says_the_file_is_imported(folder):
    for args in (["--help"], ["show", "--help"]):
        result = run(*args, cwd=folder)
        assert result.returncode == 0, result.stderr
        text = " ".join(result.stdout.split())
        assert "imported" in text and "top-level code runs" in text, text


def test_a_method_by_its_dotted_name(folder, script):
    result = run("show", "script.py:Net.loss", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith(sd.adjoint_source(script.Net.loss))


def test_callees_prints_the_helpers_adjoints_too(folder, script):
    alone = run("show", "script.py:model", "--wrt", "w", cwd=folder)
    result = run("show", "script.py:model", "--wrt", "w", "--callees", cwd=folder)
    assert result.returncode == 0, result.stderr
    main = sd.adjoint_source(script.model, "w")
    assert alone.stdout == "top-level code ran\n" + main
    for callee in main.callees():
        assert str(callee) in result.stdout
    names = {c.title.split(":")[0] for c in main.callees()}
    assert names == {"helper", "inner"}
    # the helpers' adjoints come after the function's own
    assert result.stdout.index("def helper_backward(") > result.stdout.index(
        "def model_backward(")


def test_callees_of_a_function_calling_none(folder):
    plain = run("show", "script.py:alone", cwd=folder)
    result = run("show", "script.py:alone", "--callees", cwd=folder)
    assert result.returncode == 0 and result.stdout == plain.stdout


def test_no_such_file(folder):
    assert_error(run("show", "missing.py:f", cwd=folder), "no such file", "missing.py")


def test_no_such_function(folder):
    assert_error(run("show", "script.py:nothing", cwd=folder), "defines no 'nothing'")


def test_a_refused_function_is_located_in_one_line(folder):
    result = run("show", "script.py:refused", cwd=folder)
    assert_error(result, "script.py:23:", ":=")


@pytest.mark.parametrize("wrt, words", [("q", ["no parameter 'q'"]),
                                        ("7", ["wrt=7"]),
                                        (",", ["names no parameter"])])
def test_a_bad_wrt(folder, wrt, words):
    assert_error(run("show", "script.py:alone", "--wrt", wrt, cwd=folder), *words)


def test_not_a_function(folder):
    assert_error(run("show", "script.py:np", cwd=folder), "needs a Python function")


def test_a_target_without_a_function(folder):
    assert_error(run("show", "script.py", cwd=folder), "FILE.py:FUNC")


def test_a_file_that_fails_to_import(folder):
    (folder / "broken.py").write_text("import numpy as np\n\nx = 1 / 0\n")
    assert_error(run("show", "broken.py:f", cwd=folder), "ZeroDivisionError", "(line 3)")


def test_html_writes_the_page(folder, script):
    out = folder / "model.html"
    result = run("show", "script.py:model", "--wrt", "w", "--callees", "--html", str(out),
                 cwd=folder)
    assert result.returncode == 0, result.stderr
    assert str(out) in result.stdout
    main = sd.adjoint_source(script.model, "w")
    assert out.read_text() == main.html_page(callees=True)


def test_html_to_a_folder_that_does_not_exist(folder):
    result = run("show", "script.py:alone", "--html", str(folder / "no" / "x.html"),
                 cwd=folder)
    assert_error(result, "cannot write")

