"""Random programs from the compiler's supported subset: compiled == eager == finite
differences.

Hypothesis writes the source of a module: a function ``prog(x, y, s)`` (two arrays and
a Python float) with loops whose bodies overwrite loop-carried values, branches on
data, ``break``/``continue``/early ``return``, calls of a generated helper, writes
into an array and a mix of scalar and array values; all operations are smooth.  The
source goes to a file (the compiler reads it back with ``inspect.getsource``) and
its gradient is checked by ``check_grad``.

A branch condition near its threshold would make finite differences straddle a
kink, so each program also comes in an instrumented twin that records how far each
comparison is from flipping; examples closer than ``MARGIN`` are skipped.

The same programs returning a vector (the sums of the result left out) check
``sd.jacobian``: its one batched backward walk equals the plain backward pass run
once per row (``sd.vjp``) and finite differences.

Examples are derandomized, so CI runs the same programs every time.  A failing
program is shown whole; ``SRCDIFF_SHRINK=1`` has hypothesis shrink it first (slow).
"""
import hashlib
import itertools
import os
import re

import numpy as np
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import srcdiff as sd
from compiler_programs import check_grad, finite_difference, import_source
from srcdiff.api import _prepare
from srcdiff.function import Units
from util import numerical_jacobian

MARGIN = 1e-2  # relative distance of a comparison from its threshold
ARRAYS = ["x", "y", "v0", "v1", "v2"]
SCALARS = ["s", "t0", "t1"]
THRESHOLDS = ["-0.7", "-0.2", "0.3", "0.9", "1.6"]

HEADER = '''\
import numpy as np

_margins = []


def _margin(left, right):
    """How far ``left - right`` is from changing sign, relative to the operands."""
    d = left - right
    _margins.append(abs(float(d)) / max(1.0, abs(float(left)), abs(float(right))))
    return d
'''


class Program:
    """A generated module: its lines, with comparisons as ``@cmpN@`` placeholders."""

    def __init__(self, lines, comparisons, writes):
        self.lines = lines
        self.comparisons = comparisons  # (left, op, right) source texts
        self.writes = writes            # whether it writes into an array (eager can't follow)

    def source(self, instrumented=False):
        def comparison(match):
            left, op, right = self.comparisons[int(match.group(1))]
            if instrumented:
                return f"_margin({left}, {right}) {op} 0.0"
            return f"{left} {op} {right}"
        body = re.sub(r"@cmp(\d+)@", comparison, "\n".join(self.lines))
        return HEADER + "\n\n" + body + "\n"

    def __repr__(self):  # hypothesis shows a failing example as its source
        return self.source()


class Writer:
    """Draws statements and expressions; tracks which names hold arrays and scalars."""

    def __init__(self, draw, writes, vector=False):
        self.draw = draw
        self.writes = writes
        self.vector = vector  # the result is a vector: no sums around its terms
        self.arrays = list(ARRAYS)
        self.scalars = list(SCALARS)
        self.readonly = ["buf"] if writes else []  # written by subscript only: never aliased
        self.indices = []    # loop counters in scope (ints)
        self.loops = 0       # loops around the current statement
        self.counter = itertools.count()
        self.comparisons = []
        self.helper = False     # whether prog may call helper
        self.in_helper = False  # whether helper is being written

    # --- choices ---
    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def chance(self, p):
        return self.draw(st.floats(0, 1)) < p

    def array(self):
        return self.pick(self.arrays + self.readonly)

    def scalar(self):
        return self.pick(self.scalars)

    def operand(self):
        return self.pick(self.arrays + self.readonly + self.scalars + ["0.5", "1.3"])

    def index(self):
        if self.indices and self.chance(0.5):
            return f"{self.pick(self.indices)} % 3"
        return self.pick(["0", "1", "2", "-1"])

    # --- expressions ---
    def array_expr(self, depth=1):
        a = self.array() if depth == 0 or self.chance(0.6) else f"({self.array_expr(depth - 1)})"
        forms = [f"np.sin({a})", f"np.tanh({a})", f"np.cos({a})", f"{a} * {self.operand()}",
                 f"{a} + {self.operand()}", f"{self.operand()} - {a}", f"np.exp(np.tanh({a}))",
                 f"{a} / (1.5 + {self.operand()} ** 2)", f"{a} ** 2", f"-{a}"]
        if a != "buf":  # a view of buf would see its later writes: aliasing is unsupported
            forms.append(f"{a}[::-1]")
        if self.helper:
            forms += [f"helper({a}, {self.scalar()})"] * 3
        return self.pick(forms)

    def scalar_expr(self):
        a, b, s, t = self.array(), self.array(), self.scalar(), self.scalar()
        return self.pick([f"np.sum({a})", f"np.sum({a} * {b})", f"np.mean({a}) * {s}",
                          f"{a}[{self.index()}]", f"{s} * {t}", f"{s} + {t}", f"np.sin({s})",
                          f"np.tanh({s}) * 2.0", f"{s} * 0.5 - {t}", s])

    def comparison(self):
        left = self.pick([f"np.sum({self.array()})", self.scalar(),
                          f"{self.array()}[{self.index()}]"])
        right = self.pick(THRESHOLDS + [self.scalar()])
        self.comparisons.append((left, self.pick([">", "<"]), right))
        return f"@cmp{len(self.comparisons) - 1}@"

    def condition(self):
        kind = self.pick(["one", "one", "not", "and", "or"])
        if kind == "one":
            return self.comparison()
        if kind == "not":
            return f"not {self.comparison()}"
        return f"{self.comparison()} {kind} {self.comparison()}"

    # --- statements ---
    def block(self, depth, size):
        lines = []
        for _ in range(size):
            lines += self.statement(depth)
        return lines

    def statement(self, depth):
        kinds = ["array", "array", "scalar", "augmented", "tuple", "copy"]
        if depth < 2:
            kinds += ["if", "for", "for_array", "while"]
        if self.loops:
            kinds += ["break", "continue"]
        kinds += ["return"] if self.chance(0.3) else []
        kinds += ["write", "write"] if self.writes else []
        return getattr(self, "stmt_" + self.pick(kinds))(depth)

    def stmt_array(self, depth):
        return [f"{self.pick(self.arrays)} = {self.array_expr()}"]

    def stmt_scalar(self, depth):
        return [f"{self.pick(self.scalars)} = {self.scalar_expr()}"]

    def stmt_augmented(self, depth):
        # scalars only: `v += w` on an aliased ndarray writes through the alias
        op = self.pick(["+=", "-=", "*="])
        value = self.scalar_expr() if op != "*=" else self.pick(["0.5", "1.2", "-0.9"])
        return [f"{self.pick(self.scalars)} {op} {value}"]

    def stmt_tuple(self, depth):
        a, b = self.draw(st.permutations(self.arrays))[:2]
        if self.chance(0.5):
            return [f"{a}, {b} = {b}, {a}"]
        return [f"{self.pick(self.scalars)}, {a} = {self.scalar_expr()}, {self.array_expr()}"]

    def stmt_copy(self, depth):
        if self.chance(0.5):
            return [f"{self.pick(self.scalars)} = {self.scalar()}"]
        return [f"{self.pick(self.arrays)} = {self.pick(self.arrays)}"]

    def stmt_if(self, depth):
        lines = [f"if {self.condition()}:"] + indent(self.block(depth + 1, self.size()))
        if self.chance(0.3):
            lines += [f"elif {self.condition()}:"] + indent(self.block(depth + 1, self.size()))
        if self.chance(0.5):
            lines += ["else:"] + indent(self.block(depth + 1, self.size()))
        return lines

    def loop_body(self, depth, head, names=(), index=None, first=()):
        self.loops += 1
        self.scalars += names
        self.indices += [index] if index else []
        body = list(first) + self.block(depth + 1, self.size())
        self.loops -= 1
        self.scalars = [n for n in self.scalars if n not in names]  # element: loop-local
        self.indices = [i for i in self.indices if i != index]
        return [head] + indent(body)

    def stmt_for(self, depth):
        i = f"i{next(self.counter)}"
        bounds = self.pick(["3", "2", "1, 4", "0", "len(x)"])
        return self.loop_body(depth, f"for {i} in range({bounds}):", index=i)

    def stmt_for_array(self, depth):
        k = next(self.counter)
        e, f, i = f"e{k}", f"f{k}", f"i{k}"
        a, b = self.array(), self.array()
        form = self.pick(["plain", "enumerate", "zip"])
        if form == "plain":
            return self.loop_body(depth, f"for {e} in {a}:", [e])
        if form == "enumerate":
            return self.loop_body(depth, f"for {i}, {e} in enumerate({a}):", [e], index=i)
        return self.loop_body(depth, f"for {e}, {f} in zip({a}, {b}):", [e, f])

    def stmt_while(self, depth):
        k = f"k{next(self.counter)}"
        limit = self.pick(["1", "2", "3"])
        # the counter first: a continue must not skip it
        return [f"{k} = 0"] + self.loop_body(
            depth, f"while {k} < {limit} and ({self.condition()}):", first=[f"{k} += 1"])

    def stmt_break(self, depth):
        return [f"if {self.condition()}:", "    break"]

    def stmt_continue(self, depth):
        return [f"if {self.condition()}:", "    continue"]

    def stmt_return(self, depth):
        value = self.array_expr() if self.in_helper or self.vector else self.scalar_expr()
        return [f"if {self.condition()}:", f"    return {value}"]

    def stmt_write(self, depth):
        form = self.pick(["element", "element", "slice", "view", "scaled"])
        if form == "element":
            return [f"buf[{self.index()}] = {self.scalar_expr()}"]
        part = self.pick(["0:2", "1:", ":2", "::2", "1:3", ":"])
        if form == "slice":  # reads the elements it replaces (a view, which the write changes)
            return [f"buf[{part}] = np.sin(buf[{part}]) * np.tanh({self.scalar()}) + "
                    f"{self.array()}[{part}]"]
        if form == "scaled":
            return [f"buf[{part}] *= {self.pick(['0.5', '1.2', self.scalar()])}"]
        w = f"w{next(self.counter)}"  # a view of buf, read before the write only
        return [f"{w} = buf[{part}]", f"buf[{part}] = np.sin({w}) * {w} + {self.array()}[{part}]"]

    def size(self):
        return self.draw(st.integers(1, 3))

    # --- the module ---
    def helper_def(self):
        saved = self.arrays, self.scalars, self.readonly, self.writes
        self.arrays, self.scalars, self.readonly, self.writes = ["a", "c"], ["b"], [], False
        self.in_helper = True  # returns an array like its first argument
        body = [f"c = {self.array_expr(0)}"] + self.stmt_if(1) + [f"return {self.array_expr(0)}"]
        self.in_helper = False
        self.arrays, self.scalars, self.readonly, self.writes = saved
        return ["def helper(a, b):"] + indent(["c = a * b"] + body)

    def module(self):
        lines = []
        if self.chance(0.5):
            lines += self.helper_def() + ["", ""]
            self.helper = True
        init = ["v0 = np.sin(x)", "v1 = y * 0.5", "v2 = np.tanh(x * y)", "t0 = s * 1.0",
                "t1 = np.sum(x) * 0.1"] + (["buf = np.zeros(3)"] if self.writes else [])
        body = self.block(0, self.draw(st.integers(2, 6)))
        result = "np.sum(v0 * v1) + np.sum(v2) * t0 + t1 + s * np.sum(x * y)"
        result += " + np.sum(buf * v0)" if self.writes else ""
        if self.vector:
            result = result.replace("np.sum", "")
        lines += ["def prog(x, y, s):"] + indent(init + body + [f"return {result}"])
        return Program(lines, self.comparisons, self.writes)


def indent(lines):
    return ["    " + line for line in lines]


@st.composite
def programs(draw, vector=False):
    return Writer(draw, writes=draw(st.booleans()), vector=vector).module()


# Shrinking a failing program takes minutes; the failure shows the whole program anyway.
# SRCDIFF_SHRINK=1 asks for the smallest failing program instead.
PHASES = [p for p in Phase if p is not Phase.shrink or os.environ.get("SRCDIFF_SHRINK") == "1"]


@settings(max_examples=250, deadline=None, derandomize=True, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=programs(), seed=st.integers(0, 2 ** 16))
def test_random_program(tmp_path_factory, program, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1.5, 1.5, size=(2, 3))
    s = float(rng.uniform(-1.5, 1.5))
    directory = tmp_path_factory.getbasetemp()
    k = hashlib.sha1(program.source().encode()).hexdigest()[:12]  # replays reuse the name
    twin = import_source(directory, f"prog_margins_{k}", program.source(instrumented=True))
    twin.prog(x.copy(), y.copy(), s)
    assume(min(twin._margins, default=1.0) > MARGIN)  # no comparison near its threshold
    module = import_source(directory, f"prog_{k}", program.source())
    try:
        value, _ = sd.value_and_grad(module.prog, (0, 1, 2))(x, y, s)  # compiled once
    except sd.CompileError as error:
        # the one false refusal left (issue 9, item 7): a value whose rank the compiler
        # cannot prove (a helper's result) updated with += where it may share memory.
        # Discarded, not passed: hypothesis fails the test if it must discard too many.
        assume(not _may_share_memory(error))
        raise
    assert np.isclose(value, module.prog(x.copy(), y.copy(), s), rtol=1e-12, atol=1e-12)
    # finite differences see nothing below a huge value's last digit (y ** 2 nine times)
    assume(abs(value) < 1e8)
    check_grad(module.prog, (x, y, s), wrt=(0, 1, 2), eager=not program.writes)


def _may_share_memory(error):
    return "cannot follow a write into memory that two values share" in str(error)


# Why a program's jacobian may run row by row (see compiler/backward.py): anything else
# is a construct the batched pass should take.
ROW_BY_ROW = ("at an index array", "whose adjoint code is not batched")


@settings(max_examples=80, deadline=None, derandomize=True, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=programs(vector=True), seed=st.integers(0, 2 ** 16))
def test_random_program_jacobian(tmp_path_factory, program, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1.5, 1.5, size=(2, 3))
    s = float(rng.uniform(-1.5, 1.5))
    directory = tmp_path_factory.getbasetemp()
    k = hashlib.sha1(program.source().encode()).hexdigest()[:12]
    twin = import_source(directory, f"vec_margins_{k}", program.source(instrumented=True))
    twin.prog(x.copy(), y.copy(), s)
    assume(min(twin._margins, default=1.0) > MARGIN)
    module = import_source(directory, f"vec_{k}", program.source())
    args = (x, y, s)
    unit, _ = _prepare(Units(module.prog, (0, 1, 2), batched=True), list(args))
    assert unit.not_batched is None or any(w in unit.not_batched for w in ROW_BY_ROW), \
        unit.not_batched
    jacobians = sd.jacobian(module.prog, (0, 1, 2))(*args)
    value, pullback = sd.vjp(module.prog, *args)
    seeds = np.eye(np.size(value)).reshape((np.size(value),) + np.shape(value))
    rows = [pullback(seed) for seed in seeds]
    for i, jac in enumerate(jacobians):
        expected = np.reshape([r[i] for r in rows], np.shape(value) + np.shape(args[i]))
        np.testing.assert_allclose(jac, expected, rtol=1e-12, atol=1e-12,
                                   err_msg=f"batched vs per row, argument {i}")

        def partial(a, i=i):
            values = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
            values[i] = float(a) if i == 2 else a
            return module.prog(*values)
        np.testing.assert_allclose(jac, numerical_jacobian(partial, args[i]),
                                   rtol=1e-5, atol=1e-6, err_msg=f"argument {i}")


# ------------------------------------------ containers, closures, globals and math
# Forms the programs above lack, each a class of past wrong gradients: lists, dicts and
# tuples built, appended to, indexed (by constants and loop counters), unpacked, slots
# replaced and passed to helpers; closure cells and globals rebound (or changed in
# place) between calls, which the cached unit must see; math on numbers; np functions
# that reshape, stack, transpose or scan their input.

HELPERS = '''
import math

G = np.array([0.4, -0.3, 0.8])
GL = [np.array([0.2, 0.9, -0.5]), 0.6]


def joined(items):
    return items[0] * items[-1] + np.tanh(items[len(items) - 1])


def keyed(d):
    return d["u"] * np.sin(d["v"])


def unpacked(t):
    p, q = t
    return p * q + np.cos(p)


def scaled(items, k):
    out = []
    for e in items:
        out.append(e * k)
    return out


def act_sin(v):
    return np.sin(v) * 2.0


def act_tanh(v):
    return np.tanh(v) * 1.5


act = act_sin
'''


class ContainerWriter(Writer):
    """Programs inside ``make(k, w)``, whose closure cells ``rebind`` changes, over
    ``G``, ``GL`` and ``act``, with lists ``L0, L1..`` and a dict ``d``."""

    def __init__(self, draw):
        super().__init__(draw, writes=False)
        self.arrays = ["x", "y", "v0", "v1"]
        self.scalars = ["s", "t0"]
        self.lists = {}        # name -> how many items it surely has
        self.iterated = set()  # lists a loop around runs over: no appends
        self.dict = False
        self.math = False      # math on a Tensor, or a write, leaves the eager tape

    def array(self):
        reads = [f"{name}[{self.pick(range(n))}]" for name, n in self.lists.items()]
        reads += [f"{name}[{i} % len({name})]" for name in self.lists for i in self.indices]
        reads += ['d["u"]'] if self.dict else []
        if reads and self.chance(0.4):
            return self.pick(reads)
        return self.pick(self.arrays)

    def array_expr(self, depth=1):
        a, b = self.array(), self.array()
        forms = [f"np.cumsum({a}) * 0.5", f"np.concatenate([{a}, {b}])[1:4]",
                 f"np.concatenate([{a}, {b}]).reshape(2, 3).sum(axis=0)",
                 f"np.stack([{a}, {b}]).T @ np.array([0.3, -0.7])",
                 f"np.stack([{a}, {b}, G]).transpose()[:, 1]", f"{a}.reshape(3, 1)[:, 0] * w",
                 f"{a} * k + w", f"act({a})", f"{a} * GL[0] + GL[1]", f"joined([{a}, {b}])",
                 f'keyed({{"u": {a}, "v": {self.scalar()}}})', f"unpacked(({a}, {b}))",
                 f"scaled([{a}, {b}], {self.scalar()})[1]",
                 f"np.where({self.comparison()}, {a}, {b} * 0.5)", f"np.dot(np.outer({a}, G), {b})"]
        return self.pick(forms) if self.chance(0.6) else super().array_expr(depth)

    def scalar_expr(self):
        s, t = self.scalar(), self.scalar()
        forms = [f"math.sin({s}) * {t}", f"math.exp(0.3 * {s})", f"GL[1] * {s} + k",
                 f"np.dot({self.array()}, {self.array()})", f"{s} * k"]
        if self.chance(0.5):
            return super().scalar_expr()
        form = self.pick(forms)
        self.math = self.math or "math." in form
        return form

    def statement(self, depth):
        kinds = ["list", "append", "slot", "unpack", "dict", "for_list", "shared"]
        return getattr(self, "stmt_" + self.pick(kinds))(depth) if self.chance(0.5) \
            else super().statement(depth)

    def stmt_list(self, depth):
        if depth or self.loops:  # a list bound in a branch may be unbound after it
            return self.stmt_array(depth)
        name = f"L{len(self.lists)}"
        items = [self.array_expr(0) for _ in range(self.draw(st.integers(1, 3)))]
        self.lists[name] = len(items)
        return [f"{name} = [{', '.join(items)}]"]

    def stmt_append(self, depth):
        free = [name for name in self.lists if name not in self.iterated]
        if not free:
            return self.stmt_list(depth)
        return [f"{self.pick(free)}.append({self.array_expr()})"]

    def stmt_slot(self, depth):
        if not self.lists:
            return self.stmt_list(depth)
        name = self.pick(list(self.lists))
        index = self.pick([str(i) for i in range(self.lists[name])] + ["-1"] +
                          [f"{i} % len({name})" for i in self.indices])
        return [f"{name}[{index}] = {self.array_expr()}"]

    def stmt_unpack(self, depth):
        a, b = self.draw(st.permutations(self.arrays))[:2]
        if self.lists and self.chance(0.6):
            name = self.pick(list(self.lists))
            return [f"{a}, *rest = {name}", f"{b} = {b} + len(rest) * 0.1"]
        t = self.pick(self.scalars)
        return [f"pair = ({self.array_expr()}, {self.scalar_expr()})", f"{a}, {t} = pair"]

    def stmt_dict(self, depth):
        if not self.dict:
            if depth or self.loops:
                return self.stmt_array(depth)
            line = f'd = {{"u": {self.array()}, "v": {self.scalar()}}}'
            self.dict = True
            return [line]
        if self.chance(0.5):
            return [f'd["v"] = {self.scalar_expr()}']
        return [f'd["u"] = {self.array_expr()}']

    def stmt_shared(self, depth):
        # a write through one of two names sharing an array, then one of them rebound:
        # refused wherever the other is read after (once a silently wrong gradient)
        a, b = self.draw(st.permutations(self.arrays))[:2]
        self.math = True  # the eager tape does not write into arrays
        return [f"{a} = {b}", f"{a}[{self.index()}] = {self.scalar_expr()}",
                self.pick([f"{a} = {a}.copy()", f"{b} = np.sin({a})", f"{a} = {b} * 0.5"])]

    def stmt_for_list(self, depth):
        if not self.lists or depth >= 2:
            return self.stmt_array(depth)
        name = self.pick(list(self.lists))
        e = f"e{next(self.counter)}"
        self.iterated.add(name)
        self.arrays.append(e)
        lines = self.loop_body(depth, f"for {e} in {name}:")
        self.arrays.remove(e)
        self.iterated.discard(name)
        return lines

    def module(self):
        init = ["v0 = np.sin(x)", "v1 = y * 0.5", "t0 = s * 1.0"]
        body = self.block(0, self.draw(st.integers(3, 7)))
        terms = ["np.sum(v0 * v1)", "t0 * s", "np.sum(x * y)"]
        terms += [f"np.sum({name}[-1] * {name}[0])" for name in self.lists]
        terms += ['np.sum(d["u"]) * d["v"]'] if self.dict else []
        lines = ["def make(k, w):", "    def prog(x, y, s):"]
        lines += indent(indent(init + body + ["return " + " + ".join(terms)]))
        lines += ["", "    def rebind(k2, w2):", "        nonlocal k, w", "        k, w = k2, w2",
                  "", "    return prog, rebind", "", "",
                  "prog, rebind = make(0.3, np.array([0.5, -1.1, 0.2]))"]
        program = Program(lines, self.comparisons, False)
        program.math = self.math
        return program


def _rebind(module):
    """New closure cells and globals, and GL's items changed in place: a second call
    must see them all."""
    module.rebind(-0.8, np.array([1.2, 0.1, -0.4]))
    module.G = np.array([-0.9, 0.6, 0.25])
    module.GL[0], module.GL[1] = np.array([-0.7, 0.3, 1.4]), -1.3
    module.act = module.act_tanh


@settings(max_examples=25, deadline=None, derandomize=True, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(program=st.composite(lambda draw: ContainerWriter(draw).module())(),
       seed=st.integers(0, 2 ** 16))
def test_random_program_with_containers_and_closures(tmp_path_factory, program, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1.5, 1.5, size=(2, 3))
    s = float(rng.uniform(-1.5, 1.5))
    directory = tmp_path_factory.getbasetemp()
    source = program.source().replace(HEADER, HEADER + HELPERS)
    k = hashlib.sha1(source.encode()).hexdigest()[:12]
    twin = import_source(directory, f"cprog_margins_{k}",
                         program.source(instrumented=True).replace(HEADER, HEADER + HELPERS))
    for rebound in (False, True):  # no comparison near its threshold, before or after
        if rebound:
            _rebind(twin)
        twin.prog(x.copy(), y.copy(), s)
    assume(min(twin._margins, default=1.0) > MARGIN)
    module = import_source(directory, f"cprog_{k}", source)
    grad = sd.value_and_grad(module.prog, (0, 1, 2))
    try:
        value, _ = grad(x, y, s)
    except sd.CompileError:  # a refusal is a correct outcome; no program here needs one
        assume(False)
    assert np.isclose(value, module.prog(x.copy(), y.copy(), s), rtol=1e-12, atol=1e-12)
    assume(abs(value) < 1e6)
    check_grad(module.prog, (x, y, s), wrt=(0, 1, 2), eager=not program.math)
    _rebind(module)
    value, grads = grad(x, y, s)  # the unit compiled before, with the new cells and globals
    assert np.isclose(value, module.prog(x.copy(), y.copy(), s), rtol=1e-12, atol=1e-12)
    assume(abs(value) < 1e6)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, finite_difference(module.prog, (x, y, s), i),
                                   rtol=1e-5, atol=1e-6, err_msg=f"rebound, argument {i}")
