"""Compile a function into a :class:`~.unit.Unit`: the driver of the passes.

``prepare`` parses and normalises; ``reverse`` runs the passes in order (facts,
activity and refusals, aliasing, calls, a draft backward pass, the plan, the final
backward pass and its peepholes (copies, spreads, bare shapes), the forward pass),
each handing a record to the next;
``compile_unit`` wraps the pair in functions, releases values after their last
read, generates and compiles the source, and records what the unit depends on.

Invariant: this module is the only place that knows the order of the passes; each
pass gets the records of those before it from here.  The unit it returns is
unit.py's (the runtime object); the cache is cache.py.
"""

import copy
import functools
import inspect
from dataclasses import dataclass

import gast

from . import checks
from . import syntax as S
from .aliasing import (check_call_writes, check_effects, check_updates, check_views,
                       check_shared_writes, returned_aliases, written_names)
from .analysis import Describer, activity, adjoint_inputs, check_modelled, varied_names
from .backward import Backward
from .bare_shapes import bare_shapes
from .binding import CONSTANTS
from .closures import convert_closures
from .codegen import Refs, compile_source, to_source
from .containers import (check_appends, check_array_methods, check_fields, check_one_kind,
                         check_slice_writes, container_depths, definite, split_conversions)
from .contributions import Contributions, callee_writes, resolve_calls
from .free_effects import check_free_writes, keys_of
from .dispatch import Method, MethodCall
from .errors import CompileError, InvariantError, NotBatched
from .facts import gather
from .exits import ExitLowering
from .forward import Forward, shape_only
from .in_place import InPlace
from .local_functions import inline_local_functions
from .methods import receivers
from .names import FREE_VALUES, Names
from .normalize import Normalizer
from . import numbers
from .optimize import live_names, propagate_copies
from .parse import parse_function, unit_name
from .plan import Namer, Plan, Replay, make_plan
from .release import release_points, with_deletes
from .runtime import FreeValues, own_copy
from .spread import fold_spreads
from .unit import GONE, Unit
from .kwargs import expand_kwargs, keywords_of
from .varargs import expand_varargs
from .cleanup import flatten_finally
from .starred import splice_starred
from . import expression_effects, walrus


def prepare(fn, lifted=(), functions=(), arity=None):
    """Parse and normalise ``fn`` for ``arity`` arguments (its parameters' count if
    None): (parsed, normalised FunctionDef, Names)."""
    parsed = parse_function(fn)
    parsed.functions = _bound_functions(parsed, functions)
    node = S.copy_node(parsed.node)
    walrus.check(node, parsed.source_map)  # before any pass moves an expression
    expression_effects.check(node, parsed.source_map, parsed.resolve)
    flatten_finally(node, parsed.source_map)
    names = Names(S.names_in(node))
    keywords = keywords_of(fn) or ()
    extra = 0 if arity is None else arity - len(parsed.params) - len(keywords)
    expand_varargs(node, extra, names, parsed.source_map)
    expand_kwargs(node, fn, names, parsed.source_map)
    splice_starred(node, parsed.source_map)
    if lifted:
        named = parsed.namespace.get(node.name)
        own = node.name if getattr(named, "python_function", named) is fn else None
        parsed.passed, parsed.appended = _lift(node, lifted, names, own)
    convert_closures(node, parsed, names)
    inline_local_functions(node, names, parsed.source_map)
    ExitLowering(names, parsed.source_map).lower_function(node)
    node.body = Normalizer(names, parsed.source_map, parsed.resolve).block(node.body)
    split_conversions(node.body, names, parsed.resolve)
    return parsed, node, names


def compile_unit(fn, active, scalars, cache, lifted=(), ranks=(), functions=(), batched=False,
                 lean=None):
    parsed, node, names = prepare(fn, lifted, functions, len(active) - len(lifted))
    if checks.enabled():
        checks.check_anf(node, parsed.source_map)
    parsed.node = node  # lifted expressions are parameters now
    params = parsed.params
    if len(active) != len(params):
        raise TypeError(f"{fn.__qualname__} takes {len(params)} arguments, got {len(active)}")
    wrt = [p for p, a in zip(params, active) if a]
    float_params = {p for p, s in zip(params, scalars) if s in numbers.DOUBLE_KINDS}
    scalar_params = {p for p, s in zip(params, scalars) if s is True} | float_params
    param_depths = {p: s[1:] for p, s in zip(params, scalars) if isinstance(s, tuple)}
    param_ranks = {p: r for p, r in zip(params, ranks) if r is not None}
    refs = Refs(parsed.namespace)
    live = _read_when_called(fn, parsed)
    free_values = FreeValues(fn)
    if live:  # the values the function's free names hold when it runs, not when compiled
        values = refs.bind(free_values, FREE_VALUES)
        node.body[:0] = [S.assign(n, gast.Subscript(value=values, slice=S.const(n),
                                                    ctx=gast.Load())) for n in live]
    name = unit_name(fn)
    for own in (f"{name}_forward", f"{name}_backward", f"{name}_backward_spent"):  # taken:
        refs.bind(object(), own)  # a callee of the same name is bound under another

    def compile_call(callee, mask, callee_scalars, at, inputs):
        if isinstance(callee, Method):  # resolved when it runs: dispatch.py
            return MethodCall(callee, inputs[0].id, mask, callee_scalars, cache,
                              isinstance(getattr(at, "targets", [None])[0], gast.Tuple),
                              functools.partial(parsed.source_map.error, at))
        itself = callee is fn
        passed = callee_lifted(inputs, parsed.passed if itself else {
            **parsed.passed, **parsed.closures}, itself)
        try:
            return cache.get(callee, mask, callee_scalars, lifted=passed,
                             functions=function_arguments(inputs, parsed.resolve, callee),
                             batched=batched)
        except CompileError as exc:
            if exc.filename is None:
                raise parsed.source_map.error(at, exc.message, exc.hint) from None
            raise

    # asked before the passes below rewrite the body (for a parameter passed a NumPy
    # number, which may stand for a 0-d array: function.Units)
    describe = Describer(parsed.resolve, parsed.source_map)
    alike = True in scalars and numbers.numbers_alike(parsed, node.body, params, describe)
    specialised = float_params and numbers.specialise(
        parsed, node.body, params, float_params, names, _binder(parsed, refs, names),
        describe,
        {p for p, s in zip(params, scalars) if s == "float64"})
    pair = reverse(parsed, node.body, wrt, names, refs, compile_call, scalar_params,
                   param_depths, param_ranks, batched, keys_of(fn, live, parsed.namespace))
    forward_code, backward_code, result = pair.forward, pair.backward, pair.result
    forward = gast.FunctionDef(
        name=f"{name}_forward", args=_signature(node.args, fn, refs), body=forward_code,
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    outputs = pair.outputs
    unpack = []
    if len(outputs) == 1:
        d_out = (pair.namer.adjoint(outputs[0].id) if isinstance(outputs[0], gast.Name)
                 else names.fresh("d_out"))
    else:  # several results: their adjoints arrive as one tuple
        d_out = names.fresh("d_results")
        seen = set()
        for k, out in enumerate(outputs):
            if not isinstance(out, gast.Name) or out.id not in pair.active:
                continue
            part = S.expr(f"{d_out}[{k}]")
            d = pair.namer.adjoint(out.id)
            value = part if out.id not in seen else S.expr(f"{d} + {d_out}[{k}]")
            unpack.append(S.assign(d, value))
            seen.add(out.id)
    tape_names = pair.tape_names
    if tape_names:
        target = gast.Tuple(elts=[S.name(n, gast.Store()) for n in tape_names], ctx=gast.Store())
        # The backward pass pops stacks and restores written elements: it works on
        # copies, so a tape can be replayed (persistent tapes, Jacobian rows); a name
        # that only a branch not taken binds holds None
        copies = [S.assign(n, gast.Call(func=refs.bind(own_copy, "own_copy"), keywords=[],
                                        args=[S.name(n)]) if n in pair.plan.init_none
                           else S.expr(f"{n}.copy()")) for n in pair.consumed]
        unpack[:0] = [gast.Assign(targets=[target], value=S.name("tape"),
                                  type_comment=None)] + copies
    # what deleting would not free: the caller holds the arguments and the cotangent
    # (and a number, or a shape, is small)
    keep = set(params) | pair.measured | pair.facts.numbers | {d_out} | {
        d for v, d in pair.namer.adjoints().items() if v in pair.facts.numbers}
    backward = _backward_def(f"{name}_backward", ["tape", d_out],
                             _released(unpack + backward_code, ["tape", d_out], result, keep))
    defs = [forward, backward]
    if isinstance(pair.rows, tuple):  # the same prologue, then the batched walk
        code, rows_result, rows = pair.rows
        defs.append(_backward_def(f"{name}_backward_rows", ["tape", d_out, rows],
                                  _released(copy.deepcopy(unpack) + code,
                                            ["tape", d_out, rows], rows_result, keep | {rows})))
    lean = lean if not (batched or specialised) else None
    if lean is not None:  # computed in place into the arrays the code owns (in_place.py)
        spent, seed = _lean(defs, params, lean, ranks, refs, tape_names)
        defs.append(spent)
    namespace = {**parsed.namespace, **refs.bound}  # after every pass has bound its names
    if checks.enabled():
        for each in defs[1:]:
            checks.check_pair(forward, each, namespace, node)
    source, blocks = to_source(defs)
    scope = compile_source(source, namespace, fn.__qualname__)
    dependencies = _dependencies(fn, parsed, live)
    mutated = tuple(i for i, p in enumerate(params) if p in pair.written)
    unit = Unit(name, scope[forward.name], scope[backward.name], source, params, wrt, fn,
                dependencies, mutated, pair.aliased)
    unit.blocks = blocks  # codegen.Block: the side-by-side view's map (srcdiff/view.py)
    unit.numbers_alike = alike
    unit.callees = tuple(callee for callee, _ in pair.calls.values())
    unit.free_reads, unit.free_writes = pair.free_reads, pair.free_writes
    free_values.kept = pair.kept  # copied where the backward pass runs later
    unit.unconnected = pair.unconnected
    unit.several = len(outputs) > 1  # it returns a tuple
    depth = pair.depths.get(getattr(outputs[0], "id", None), (0, 0))
    unit.depth = depth[1] if depth[0] and not unit.several else 0
    if lean is not None:
        unit.lean, unit.seed = lean, seed
        unit.backward_spent = scope[defs[2].name]
    if isinstance(pair.rows, tuple):
        unit.backward_rows = scope[defs[2].name]
    else:
        unit.not_batched = pair.rows
    if specialised:
        general = (active, numbers.general_kinds(scalars), lifted, ranks, functions, batched)
        numbers.guard(unit, numbers.reference_of(unit, cache, general),
                      [i for i, s in enumerate(scalars) if s == "float64"])
    return unit


def _signature(args, fn, refs):
    """The forward pass's parameters: ``args`` with Python's own default values (a
    constant as itself, anything else bound by reference), never the default
    expressions, which would be evaluated again in the generated module: later, where
    a closure's names are not, and after a global they read may have been rebound."""
    args = copy.deepcopy(args)
    values = fn.__defaults__ or ()
    if args.defaults:  # only positional ones are left (parse._check_signature)
        if len(args.defaults) != len(values):
            raise InvariantError(f"{fn.__qualname__} has {len(values)} defaults, its "
                                 f"syntax {len(args.defaults)}")
        code = fn.__code__
        names = code.co_varnames[code.co_argcount - len(values):code.co_argcount]
        args.defaults = [S.const(v) if isinstance(v, CONSTANTS) else refs.bind(
            v, f"{name}_default") for v, name in zip(values, names)]
    return args


def _binder(parsed, refs, names):
    """``bind(obj, hint)`` for passes that add calls to the body before the passes that
    resolve them: a fresh name the generated code and ``parsed.resolve`` both know."""
    def bind(obj, hint):
        mine = hint not in names.taken or parsed.namespace.get(hint) is obj
        name = refs.bind(obj, hint if mine else names.fresh(hint))
        parsed.namespace[name.id] = obj
        return name
    return bind


def _released(body, params, result, keep):
    """A backward pass's ``body`` letting go of each value after its last read (see
    release.py), then returning ``result``: the tape itself once unpacked, a saved
    value after the last adjoint that reads it, an adjoint once added on.  The tape
    is freed only if its caller no longer holds it (``Unit.spend``); a caller that
    walks it again (a persistent tape, a pullback) keeps every value alive."""
    points = release_points(body, params, S.loaded_names(result), keep)
    return with_deletes(body, points) + [gast.Return(value=result)]


def _lean(defs, params, dtypes, ranks, refs, tape_names):
    """The lean unit's passes (in_place.py): ``defs`` (forward, backward) rewritten in
    place, and (the backward pass for a spent tape, the types of seed it is for):
    it may also write into the saved arrays that the forward pass made and only the
    tape holds, and where the result is a NumPy number it is proven for a seed of
    that number's dtype or a Python float only (None: for any)."""
    forward, backward = defs[0], defs[1]
    known = {p: (d, r) for p, d, r in zip(params, dtypes, ranks) if d is not None}
    in_place = InPlace(refs, set().union(*map(S.names_in, defs), refs.bound, refs.user))
    ret = forward.body[-1]
    forward.body, arrays, kinds = in_place.run(forward.body[:-1], S.loaded_names(ret),
                                               kinds=in_place.param_kinds(known))
    forward.body.append(ret)
    result, tape = ret.value.elts
    spendable = in_place.spendable(arrays, result, tape) if tape_names else set()
    saved = {n: in_place.kind(e, kinds) for n, e in zip(tape_names, tape.elts)}
    saved = {n: k for n, k in saved.items() if k is not None}
    body = backward.body
    params = [a.id for a in backward.args.args]
    seed = in_place.seed_kind(result, kinds)  # the spending walk checks its seed's type
    spent = _backward_def(backward.name + "_spent", params,
                          in_place.run(copy.deepcopy(body[:-1]), S.loaded_names(body[-1]),
                                       spendable, {**saved, params[1]: seed} if seed else saved
                                       )[0] + [copy.deepcopy(body[-1])])
    backward.body = in_place.run(body[:-1], S.loaded_names(body[-1]), set(), saved)[0] + body[-1:]
    return spent, seed[0] if seed else None


def _backward_def(name, params, body):
    return gast.FunctionDef(
        name=name,
        args=gast.arguments(args=[S.name(p, gast.Param()) for p in params],
                            posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                            kwarg=None, defaults=[]),
        body=body, decorator_list=[], returns=None, type_comment=None, type_params=[])


@dataclass
class Pair:
    """The reverse pass's records: the forward and backward statements and what the
    unit around them needs to know."""
    forward: list        # the forward pass's statements, returning (result, tape)
    backward: list       # the backward pass's statements
    result: object       # the expression the backward pass returns
    outputs: list        # the function's results (names or constants)
    active: set          # the names that get adjoints
    namer: Namer         # the adjoint of each name
    tape_names: list     # what the tape holds, in order
    consumed: list       # tape values the backward pass changes in place (copied first)
    calls: dict          # id(call statement) -> (compiled callee, tape variable)
    unconnected: tuple   # active parameters the result does not depend on
    facts: object        # the Facts of the normalised body
    plan: Plan           # what the forward pass saves
    depths: dict         # the names holding containers, and how deep (containers.py)
    written: set         # the names whose arrays the body may write into (aliasing.py)
    measured: set        # the values the backward pass only measures (forward.shape_only)
    aliased: tuple       # the parameters whose objects the result may share (aliasing.py)
    free_reads: frozenset   # the outside values the backward pass may read (free_effects.py)
    free_writes: frozenset  # those the forward pass may write into
    kept: frozenset         # the free names its own adjoints read
    rows: object = None  # (code, result, rows parameter) of the batched backward pass,
                         # or why there is none (asked for ``batched`` only)


def reverse(parsed, body, wrt, names, refs, compile_call, scalar_params, param_depths=None,
            param_ranks=None, batched=False, free=None):
    """The forward and backward passes of a normalised ``body``: facts, activity and
    aliasing checks, calls compiled, a draft backward pass whose marks are planned
    for, the final backward pass, then the forward pass that keeps what it reads."""
    source_map = parsed.source_map
    ret = body[-1] if body and isinstance(body[-1], gast.Return) else None
    if ret is None or ret.value is None:
        raise source_map.error(parsed.node, "the function must end by returning a value "
                                            "to differentiate",
                               hint="End it with 'return value' (every path must return "
                                    "one).")
    outputs = ret.value.elts if isinstance(ret.value, gast.Tuple) else [ret.value]
    facts = gather(body, parsed.params, scalar_params, Describer(parsed.resolve, source_map),
                   param_ranks or {})
    active = activity(facts, wrt) | set(wrt)
    varied = varied_names(facts, wrt)
    check_modelled(facts, active, varied, source_map)
    param_depths = param_depths or {}
    depths, _ = container_depths(facts, param_depths, source_map)
    check_views(facts, source_map, definite(depths))
    check_effects(facts, varied, source_map, active, parsed.resolve)
    check_appends(facts, source_map)
    namer = Namer(names)
    feeds = adjoint_inputs(facts, active, wrt)
    calls, tuples = resolve_calls(facts, active, feeds, compile_call, names, depths,
                                  {**parsed.passed, **parsed.closures})
    writes, aliases, units = callee_writes(facts, calls, compile_call, depths)
    check_call_writes(facts, writes, varied, active, source_map)
    free_reads, free_writes, kept = check_free_writes(
        facts, active, calls, units, writes, aliases, free or {}, source_map)
    depths, mixed = container_depths(facts, param_depths, source_map, {
        k: unit.depth for k, (unit, _) in calls.items() if getattr(unit, "depth", 0)})
    # with the containers user functions return known: c[k] += v on one is no array's
    updates = check_updates(facts, depths, source_map, aliases)
    check_shared_writes(facts, depths, source_map, aliases)
    check_one_kind(facts, mixed & active, source_map)
    check_fields(facts, tuples, source_map)
    check_array_methods(facts, depths, active, source_map)
    check_slice_writes(facts, depths, source_map)
    sequences = facts.packs | tuples | definite(depths)
    replay = Replay(calls)
    written = written_names(facts, writes)
    maybe_sequences = {n for n, (_, most) in depths.items() if most >= 1} - sequences
    forward = Forward(facts, replay, refs, written, updates, sequences | maybe_sequences)
    contributions = Contributions(facts, feeds, sequences, calls, refs, namer, source_map)
    backward = Backward(facts, active, wrt, sequences, contributions, replay, namer,
                        source_map, forward.computation, maybe_sequences)
    draft = backward.emit(Plan(), outputs)  # its marks say what the adjoints read
    marks = backward.marks()
    for _ in range(3):
        plan = make_plan(facts, marks, replay.tapes(), namer, aliases, sequences)
        if not plan.saves and not plan.recompute_before:
            code, result = draft  # nothing to restore or re-run: the draft is final
            break
        code, result = backward.emit(plan, outputs)
        unplanned = {name: at - plan.reads_at.get(name, set())
                     for name, at in backward.reads_at.items() if name in facts.primal}
        if not any(unplanned.values()):
            break
        # the plan models every read its restores add: this is a bug, made safe
        if checks.enabled():
            raise InvariantError(f"{parsed.fn.__qualname__}: reads the plan did not foresee: "
                                 f"{sorted(n for n, at in unplanned.items() if at)}")
        for name, at in backward.reads_at.items():
            marks.reads_at.setdefault(name, set()).update(at)
    else:
        raise InvariantError(f"{parsed.fn.__qualname__}: the backward pass kept reading "
                             "values the plan did not save")
    adjoints = set(namer.adjoints().values())
    propagate_copies(code, adjoints - {namer.adjoint(p) for p in wrt})
    if not batched:  # the batched pass runs on the same tape and reads what this one did
        fold_spreads(code, result, facts, refs)
    # the tape: what the backward pass reads before it assigns it (a loop's counter,
    # say, is its own)
    live = (live_names(code) & facts.primal) - adjoints
    measured = shape_only(code, live)
    bare = frozenset() if batched else bare_shapes(code, measured, facts, refs)
    forward_code = forward.body(plan, ret, live, measured, bare)
    pair = Pair(forward_code, code, result, outputs, active, namer, forward.tape_names,
                forward.consumed(), calls, backward.unconnected, facts, plan, depths,
                written, measured, returned_aliases(facts, outputs, aliases), free_reads,
                free_writes, kept)
    if batched:
        pair.rows = batched_pass(backward, plan, outputs, names.fresh("rows"), live, measured,
                                 adjoints - {namer.adjoint(p) for p in wrt},
                                 facts.primal - adjoints)
    return pair


def batched_pass(backward, plan, outputs, rows, live, measured, temporaries, primal):
    """The backward pass emitted again for a batch of adjoints whose leading shape is
    the parameter ``rows``: ``(code, result, rows)``, or why it cannot be (a str).

    It runs on the plain pass's tape, so it reads no primal value that pass does not
    (``live``, of which ``measured`` for their shape only): the same plan, emitted
    again, makes the same restores; only zeros and callees' backward passes differ."""
    loops = set(backward.replay.loops)
    try:
        code, result = backward.emit(plan, outputs, rows=rows)
    except NotBatched as why:
        return str(why)
    finally:
        backward.replay.loops = loops
        backward.rows = backward.contrib.rows = None
    propagate_copies(code, temporaries)
    reads = live_names(code) & primal
    beyond = (reads - live) | ((reads - shape_only(code, reads)) & measured)
    if beyond:  # a bug, made safe: the plain pass row by row is right
        why = f"the batched pass reads {sorted(beyond)} beyond what the tape keeps"
        if checks.enabled():
            raise InvariantError(why)
        return why
    return code, result, rows


def function_arguments(inputs, resolve, callee=None):
    """(position, function) for each argument of a call that names a function (a
    module-level def, a ufunc such as ``np.tanh``, a parameter passed one), and each
    parameter of ``callee`` left to a default that is one: the callee is compiled
    for it, as it is for its active arguments.  Only names (a function is a
    dependency of the unit) and a module's attributes: an attribute of a data object
    (``cfg.act``) may change while the unit stays."""
    found = []
    defaults = _function_defaults(callee) if callee is not None else {}
    for k, node in enumerate(inputs):
        if node is None and k in defaults:
            found.append((k, defaults[k]))
            continue
        if isinstance(node, gast.Attribute) and not _of_a_module(node, resolve):
            continue
        if not isinstance(node, (gast.Name, gast.Attribute)):
            continue
        try:
            value = resolve(node)
        except KeyError:
            continue  # a local value
        if callable(value) and not isinstance(value, type):
            found.append((k, value))
    return tuple(found)


def _function_defaults(fn):
    """position -> the default of each parameter of ``fn`` whose default is a function
    (``activation=linear``); keyword-only ones follow the others (parse.py)."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return {k: p.default for k, p in enumerate(params) if p.default is not p.empty
            and callable(p.default) and not isinstance(p.default, type)}


def _of_a_module(node, resolve):
    while isinstance(node, gast.Attribute):
        node = node.value
    try:
        return inspect.ismodule(resolve(node))
    except KeyError:
        return False


def _bound_functions(parsed, functions):
    """parameter -> function for the parameters the unit is compiled for that the
    body never rebinds (one it rebinds stays an unknown value, refused if active)."""
    params = parsed.params
    assigned = S.assigned_names(parsed.node.body)
    return {params[k]: value for k, value in functions if params[k] not in assigned}


def _lift(node, lifted, names, own=None):
    """Replace each lifted expression (``W``, ``self.kernel``) by a new parameter, and
    pass each ``helper/...`` one (what a function called by name reads) to the calls of
    ``helper``, and all of them to the function's calls of itself by its name ``own``:
    after their arguments, in the order of ``lifted``, where :func:`callee_lifted` finds
    them (binding.py then binds the arguments before them by position).  (parameter
    -> expression) for what it passes, and (callee name -> the parameters appended)."""
    params = {}
    for expr in lifted:
        params[expr] = expr if not set(expr) & set("./") else names.fresh(
            expr.replace(".", "_").replace("/", "_"))
    passed = {}  # callee name -> the parameters its calls get
    for expr in lifted:
        if "/" in expr:
            passed.setdefault(expr.split("/", 1)[0], []).append(params[expr])
    if own is not None:
        passed[own] = [params[e] for e in lifted]

    class Lift(gast.NodeTransformer):
        def visit_Attribute(self, n):
            text = _dotted(n)
            if text in params and isinstance(n.ctx, gast.Load):
                return gast.copy_location(S.name(params[text]), n)
            return self.generic_visit(n)

        def visit_Name(self, n):
            if n.id in params and isinstance(n.ctx, gast.Load):
                return gast.copy_location(S.name(params[n.id]), n)
            return n

        def visit_Call(self, n):
            self.generic_visit(n)
            if isinstance(n.func, gast.Name) and n.func.id in passed:
                n.args = n.args + [S.name(p) for p in passed[n.func.id]]
            return n

    node.body = [Lift().visit(s) for s in node.body]
    node.args.args += [S.name(params[e], gast.Param()) for e in lifted]
    node.args.defaults = list(node.args.defaults)
    return {params[e]: e for e in lifted if "/" in e or own is not None}, passed


def callee_lifted(inputs, passed, itself=False):
    """What a callee reads that its caller passes it (see ``_lift``): the trailing
    ``inputs`` (argument nodes) that are such parameters, as the callee's own
    expressions; all of the caller's when the callee is ``itself``."""
    if itself:
        tail = [n.id for n in inputs[len(inputs) - len(passed):] if isinstance(n, gast.Name)]
        return tuple(passed.values()) if tail == list(passed) else ()
    found = []
    for node in reversed(inputs):
        if not (isinstance(node, gast.Name) and node.id in passed and "/" in passed[node.id]):
            break
        found.insert(0, passed[node.id].split("/", 1)[1])
    return tuple(found)


def _dotted(node):
    parts = []
    while isinstance(node, gast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, gast.Name):
        return ".".join([node.id] + parts)
    return None


def _free_loads(parsed):
    """The free names the function loads (neither parameters nor locals)."""
    node = parsed.node
    return ({n.id for n in S.walk(node) if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Load)}
            - set(parsed.params) - S.assigned_names(node.body))


def _read_when_called(fn, parsed):
    """The free names (globals, closure cells) that hold data, not modules, classes or
    functions: read on every call (a minibatch rebound between calls is the one the
    gradient sees), and never a reason to compile again."""
    cells = set(fn.__code__.co_freevars)
    live = []
    for name in sorted(_free_loads(parsed) - receivers(parsed.node)):  # see methods.py
        if name not in cells and name not in fn.__globals__:
            continue  # a builtin
        value = parsed.namespace.get(name, GONE)
        if value is not GONE and not callable(value) and not inspect.ismodule(value):
            live.append(name)
    return live


def _dependencies(fn, parsed, live=()):
    """The free names the function loads, with the scopes they come from, but those
    it reads when called (``live``): the objects the code was built on."""
    loaded = _free_loads(parsed) - set(live)
    deps = []
    cells = {}
    if fn.__closure__:
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__))
    for name in sorted(loaded):
        if name in cells:  # a cell can be rebound (nonlocal), as a global can
            deps.append((_Cell(cells[name]), name, parsed.namespace.get(name, GONE)))
        elif name in fn.__globals__:
            deps.append((fn.__globals__, name, fn.__globals__[name]))
    return tuple(deps)


class _Cell:
    """A closure cell read as a namespace is, for :meth:`Unit.is_current`."""

    __slots__ = ("cell",)

    def __init__(self, cell):
        self.cell = cell

    def get(self, name, default):
        try:
            return self.cell.cell_contents
        except ValueError:  # emptied (del) since
            return default
