"""``python -m srcdiff show FILE.py:FUNC [--wrt NAMES]``: print a function's adjoint code."""
import argparse
import importlib.util
import pathlib
import sys

from .api import adjoint_source
from .compiler.errors import CompileError


def _load(path):
    path = pathlib.Path(path).resolve()
    if not path.is_file():
        raise SystemExit(f"srcdiff: no such file: {path}")
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m srcdiff",
                                     description="Show the adjoint code srcdiff generates.")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print the forward and backward passes of a function")
    show.add_argument("target", metavar="FILE.py:FUNC")
    show.add_argument("--wrt", default=None,
                      help="comma-separated parameter names or indices (default: the first)")
    args = parser.parse_args(argv)
    path, _, name = args.target.rpartition(":")
    if not path or not name:
        parser.error("the target must look like FILE.py:FUNC")
    module = _load(path)
    fn = module
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise SystemExit(f"srcdiff: {path} defines no {name!r}")
    wrt = 0
    if args.wrt:
        names = [w.strip() for w in args.wrt.split(",") if w.strip()]
        names = [int(w) if w.lstrip("-").isdigit() else w for w in names]
        wrt = names[0] if len(names) == 1 else tuple(names)
    try:
        print(adjoint_source(fn, wrt), end="")
    except (CompileError, TypeError, ValueError) as error:
        raise SystemExit(f"srcdiff: {error}") from None


if __name__ == "__main__":
    main()
