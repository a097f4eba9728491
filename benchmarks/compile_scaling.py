"""How compile time grows with a function's size and its loop-nesting depth.

    python3 benchmarks/compile_scaling.py

Each row is a fresh compile (``sd.clear_cache()`` first) of a generated function
through ``sd.grad``, the best and median of a few repeats:

* ``straight N``: N straight-line statements, each reading the two before it;
* ``nested D``: D ``for`` loops nested in each other, an update in the innermost;
* ``classifier``: the ~30-line function of ``compiler.py``.

Targets (issue 7): linear in both; 1,000 statements under 1 s, depth 8 under
0.3 s, the classifier no slower than 36 ms."""
import linecache
import textwrap
import time

import numpy as np

import srcdiff as sd

from _timing import QUICK

TARGETS = {"straight 1000": 1.0, "nested 8": 0.3, "classifier": 0.036}


def straight_source(n):
    lines = ["def straight(x):", "    a = x", "    b = np.sin(x)"]
    names = ["a", "b"]
    for k in range(n - 2):
        new = f"v{k}"
        op = ("np.sin({}) * {}", "{} + 0.5 * {}", "np.tanh({} - {})")[k % 3]
        lines.append(f"    {new} = " + op.format(names[-1], names[-2]))
        names.append(new)
    lines.append(f"    return np.sum({names[-1]})")
    return "\n".join(lines) + "\n"


def nested_source(depth):
    lines = ["def nested(x):", "    y = x"]
    indent = "    "
    for d in range(depth):
        lines.append(f"{indent}for i{d} in range(2):")
        indent += "    "
    lines.append(f"{indent}z = np.sin(y) * 0.9")
    lines.append(f"{indent}if np.sum(z) > 0:")
    lines.append(f"{indent}    y = z + x")
    lines.append(f"{indent}else:")
    lines.append(f"{indent}    y = np.cos(z) * y")
    lines.append("    return np.sum(y)")
    return "\n".join(lines) + "\n"


def load(source, name):
    """The function ``name`` defined by ``source``, with its source findable."""
    filename = f"<compile_scaling {name} {len(source)}>"
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    scope = {"np": np}
    exec(compile(source, filename, "exec"), scope)
    return scope[name]


def time_compile(fn, args, repeats):
    times = []
    for _ in range(repeats):
        sd.clear_cache()
        start = time.perf_counter()
        sd.grad(fn)(*args)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[0], times[len(times) // 2]


def run(sizes=(10, 100, 300, 1000), depths=(1, 2, 4, 6, 8)):
    """Rows of (workload, system, best s, median s, peak bytes, note)."""
    if QUICK["on"]:
        sizes, depths = (10, 100), (1, 2)
    x = np.linspace(0.1, 0.9, 4)
    rows = []
    for n in sizes:
        fn = load(straight_source(n), "straight")
        rows.append((f"straight {n}", fn, (x,), 3 if n >= 1000 else 5))
    for d in depths:
        fn = load(nested_source(d), "nested")
        rows.append((f"nested {d}", fn, (x,), 3 if d >= 8 else 5))
    out = []
    for label, fn, args, repeats in rows:
        best, median = time_compile(fn, args, repeats)
        out.append((label, best, median))
    out.append(("classifier",) + _classifier())
    table = []
    for label, best, median in out:
        target = TARGETS.get(label)
        note = "" if target is None else (
            f"{'ok' if best < target else 'MISSED'} (< {target * 1e3:g} ms)")
        table.append((label, "srcdiff compile", best, median, None, note))
    return table


def _classifier(repeats=15):
    from compiler import _compile_rows
    (_, _, best, median, _, _), = _compile_rows(repeats)
    return best, median


if __name__ == "__main__":
    from run import print_table
    print_table(run())
