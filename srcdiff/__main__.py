"""``python -m srcdiff show FILE.py:FUNC [--wrt NAMES] [--callees] [--html OUT.html]``:
print a function's adjoint code, or write its side-by-side view (srcdiff/view.py).

Every error the user can fix (no such file or function, a function the compiler
refuses, a bad ``--wrt``, a file that fails to import) is one line on stderr and
exit status 2, as argparse reports a bad command line; no traceback.
"""
import argparse
import importlib.util
import pathlib
import sys
import traceback

from . import __version__
from .api import adjoint_source
from .compiler.errors import CompileError
from .view import page

_PROG = "python -m srcdiff"


class _Refused(Exception):
    """An error to report in one line (exit status 2)."""


def _load(path):
    """Import the file at ``path`` as a module whose ``__name__`` is not ``"__main__"``
    (its top-level code runs, its main block does not)."""
    path = pathlib.Path(path).resolve()
    if not path.is_file():
        raise _Refused(f"no such file: {path}")
    name = path.stem
    if name == "__main__" or name in sys.modules:  # never shadow an imported module
        name = f"_srcdiff_target_{name}"
    sys.path.insert(0, str(path.parent))  # the file imports its neighbours
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's code failed: say where, in one line
        raise _Refused(f"importing {path} raised {type(exc).__name__}: {_one_line(exc)}"
                       f"{_where(exc, path)}") from None
    return module


def _where(exc, path):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    return f" (line {frames[-1].lineno})" if frames else ""


def _one_line(exc):
    if isinstance(exc, CompileError):  # its message, located; not its quoted line and caret
        where = (f"{exc.filename}:{exc.lineno}:{(exc.col or 0) + 1}: "
                 if exc.filename and exc.lineno else "")
        text = exc.message + (f"; {exc.hint}" if exc.hint else "")
        return where + " ".join(text.split())
    return " ".join(str(exc).split())


def _function(module, path, name):
    fn = module
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise _Refused(f"{path} defines no {name!r}")
    return fn


def _wrt(text):
    if text is None:
        return 0
    names = [w.strip() for w in text.split(",") if w.strip()]
    if not names:
        raise _Refused(f"--wrt {text!r} names no parameter")
    names = [int(w) if w.lstrip("-").isdigit() else w for w in names]
    return names[0] if len(names) == 1 else tuple(names)


def _parser():
    parser = argparse.ArgumentParser(
        prog=_PROG, description="Show the adjoint code srcdiff generates.",
        epilog="FILE is imported to find FUNC: its top-level code runs, under a module "
               "name that is not \"__main__\", so an 'if __name__ == \"__main__\":' "
               "block does not.")
    parser.add_argument("--version", action="version", version=f"srcdiff {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser(
        "show", help="print the forward and backward passes of a function",
        description="Print the forward and backward passes srcdiff generates for FUNC. "
                    "FILE is imported (its top-level code runs; its "
                    "'if __name__ == \"__main__\":' block does not).")
    show.add_argument("target", metavar="FILE.py:FUNC",
                      help="the file (imported: its top-level code runs) and the function, "
                           "e.g. model.py:loss or model.py:Net.loss")
    show.add_argument("--wrt", default=None,
                      help="comma-separated parameter names or indices (default: the first)")
    show.add_argument("--callees", action="store_true",
                      help="also the adjoints of the user functions FUNC calls")
    show.add_argument("--html", metavar="OUT.html", default=None,
                      help="write the side-by-side view (each source line beside its "
                           "adjoint block) to OUT.html instead of printing")
    return parser


def _show(args):
    path, _, name = args.target.rpartition(":")
    if not path or not name:
        raise _Refused(f"the target {args.target!r} must look like FILE.py:FUNC")
    wrt = _wrt(args.wrt)
    fn = _function(_load(path), path, name)
    source = adjoint_source(fn, wrt)
    sources = [source, *source.callees()] if args.callees else [source]
    if args.html:
        try:
            pathlib.Path(args.html).write_text(page(sources), encoding="utf-8")
        except OSError as exc:
            raise _Refused(f"cannot write {args.html}: {exc.strerror}") from None
        print(f"wrote the side-by-side view of {name} to {args.html}")
        return
    for k, s in enumerate(sources):
        if k:
            print(f"\n# {s.title}; {name} calls it (directly or not)\n")
        print(s, end="")


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        _show(args)
    except (_Refused, CompileError, TypeError, ValueError) as error:
        print(f"{_PROG}: error: {_one_line(error)}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
