"""Normalise a function body so that one reverse pass handles all of it.

After exits are lowered to flags (exits.py), ``Normalizer`` puts the body in
A-normal form: one primitive operation per assignment with names or constants as
operands; ``x += y`` becomes ``x = x + y``; tuple targets are unpacked; methods
become NumPy calls (``x.sum()`` is ``np.sum(x)``); every loop becomes
``for i in range(...)``; an elif chain too long for Python's nesting limit is
written flat.

Conditions (comparisons, ``and``/``or``/``not``) are kept whole: their value is
a bool, which never carries a gradient, so they need no adjoint.

The output grammar (``checks.check_anf`` checks exactly this)::

    body      := stmt* return
    return    := 'return' atom | 'return' '(' atom, ... ')'
    block     := stmt+ | 'pass'                     ('pass' only alone)
    stmt      := name '=' value
               | name '[' index ']' '=' atom
               | name, ... '=' call                 (one call, several results)
               | 'if' atom ':' block ['else' ':' block]
               | 'for' name 'in' 'range(' atom [, atom [, atom]] ')' ':' block
               | 'while' atom ':' stmt*             (the body re-evaluates the test last)
               | 'if' flag ':' 'break'              (last in a loop body; in a while body
                                                     only the test's re-evaluation follows)
               | expr                               (an expression statement, kept as written)
               | 'assert' ... | 'raise' ...         (kept as written)
    value     := atom | atom binop atom | unaryop atom | call
               | atom '[' index ']' | atom '.' attr | '(' atom, ... ')' | '[' atom, ... ']'
               | condition                          (comparison, and/or/not: kept whole)
               | comprehension, dict, set, f-string (kept whole)
    call      := (name | atom '.' attr) '(' arg, ..., kw '=' arg, ... ')'
    arg       := atom | '(' arg, ... ')' | '[' arg, ... ']'
    index     := atom | [atom] ':' [atom] [':' atom] | index, ...
    atom      := name | constant | module constant (a dotted name such as ``np.pi``
                 whose root is not a local)

No ``continue``, no ``return`` but the last statement, no ``break`` but the
flag test, no loop ``else``, no ``for`` over anything but ``range``.
"""
import gast
import numpy as np

from . import mutators
from . import syntax as S
from .anf import ExpressionLowering, keys_of
from .exits import copy_location
from .managers import lower_with

# ---------------------------------------------------------------- A-normal form


class Normalizer(ExpressionLowering):
    """Rewrite a body into A-normal form (see the module docstring); the expression
    half is anf.ExpressionLowering."""

    def block(self, stmts):
        saved, self.out = self.out, []
        for s in stmts:
            self.stmt(s)
        block, self.out = self.out, saved
        return block or [gast.Pass()]

    # --- statements ---
    def stmt(self, s):
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise self.unsupported(s)
        method(s)

    def unsupported(self, s):
        what = {
            "Try": ("'try' is not supported with 'except' or 'else': an exception's path "
                    "would need the eager tape", "Move the try/except outside the function "
                    "you differentiate (try/finally alone is compiled)."),
            "With": ("'with' is not supported", "Move the with-block outside the function."),
            "Global": ("'global' is not supported: the compiler cannot track writes to module "
                       "state", "Return the value instead of writing a global."),
            "Nonlocal": ("'nonlocal' is not supported: the compiler cannot track writes to an "
                         "enclosing scope", "Return the value instead."),
            "FunctionDef": ("a nested 'def' is not supported",
                            "Define the helper at module level; the compiler follows calls."),
            "ClassDef": ("a nested 'class' is not supported", "Define it at module level."),
            "Import": ("'import' inside the function is not supported", "Import at module level."),
            "ImportFrom": ("'import' inside the function is not supported",
                           "Import at module level."),
            "Delete": ("'del' is not supported", "Let the name go out of use instead."),
        }.get(type(s).__name__, (f"'{type(s).__name__}' statements are not supported",
                                 "Write it with if/elif/else, for, while and assignments, "
                                 "or move it outside the function you differentiate."))
        return self.source_map.error(s, what[0], hint=what[1])

    def stmt_Pass(self, s):
        pass

    def stmt_Expr(self, s):
        if isinstance(s.value, (gast.Yield, gast.YieldFrom, gast.Await)):
            raise self.source_map.error(s, "generators are not supported",
                                        hint="Return a list or an array instead of yielding.")
        if isinstance(s.value, gast.Constant):  # docstring
            return
        call = s.value
        if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr == "append" and isinstance(call.func.value, gast.Name)
                and len(call.args) == 1 and not call.keywords
                and not self._resolves(call.func)):
            # xs.append(v): xs = append(xs, v), the same list one item longer
            xs = call.func.value.id
            value = gast.Call(func=S.name("append"), keywords=[],
                              args=[S.name(xs), self.atom(call.args[0], xs)])
            value.srcdiff_append = True
            self.emit(S.assign(xs, value), s)
            return
        if isinstance(call, gast.Call) and mutators.lowers(call, self._resolves):
            mutators.lower(self, call)  # its value (None, or the item popped) unused
            return
        target = _whole_write(call, self.resolve, self._resolves)
        if target is not None:  # a write into every element, as x[...] = v is modelled
            self.stmt_Assign(gast.copy_location(gast.Assign(
                targets=[gast.Subscript(value=target, slice=S.const(Ellipsis),
                                        ctx=gast.Store())],
                value=call.args[-1], type_comment=None), s))
            return
        if any(type(n) is gast.NamedExpr for n in S.walk(call)):  # print(n := f(x))
            s = gast.Expr(value=self.simple(call, "t"))
        self.emit(s, s)

    def stmt_Assert(self, s):
        self.emit(s, s)

    def stmt_Raise(self, s):
        self.emit(s, s)

    def stmt_Break(self, s):
        self.emit(s, s)

    def stmt_Return(self, s):
        value = s.value if s.value is not None else S.const(None)
        if isinstance(value, gast.Tuple):
            elts = [self.atom(e, "out") for e in value.elts]
            self.emit(gast.Return(value=gast.Tuple(elts=elts, ctx=gast.Load())), s)
        elif S.is_atom(value):
            self.emit(gast.Return(value=value), s)
        else:
            # the inner steps become out_1, out_2, ... and the result itself ``out``
            result = self.simple(value, "out")
            name = self.names.fresh("out")
            self.emit(S.assign(name, result), s)
            self.emit(gast.Return(value=S.name(name)), s)

    def stmt_AugAssign(self, s):
        target = s.target
        load = _as_load(target)
        start = len(self.out)
        self.stmt_Assign(gast.copy_location(gast.Assign(
            targets=[target], value=gast.BinOp(left=load, op=s.op, right=s.value),
            type_comment=None), s))
        # NumPy updates an array in place: names sharing it change too (aliasing.py);
        # so does an array item of a container in c[k] += v, before c gets it back
        self.out[-1].in_place = True
        if isinstance(target, gast.Subscript):
            self.out[-1].update_temps = S.assigned_names(self.out[start:-1])

    def stmt_AnnAssign(self, s):
        if s.value is not None:
            self.stmt_Assign(gast.copy_location(
                gast.Assign(targets=[s.target], value=s.value, type_comment=None), s))

    def stmt_Assign(self, s):
        # a = b = v: v once into the last target, then copies into the others
        self.assign_target(s.targets[-1], s.value, s)
        for target in s.targets[:-1]:
            self.assign_target(target, _as_load(s.targets[-1]), s)

    def assign_target(self, target, value, at):
        if isinstance(target, gast.Name):
            self.emit(S.assign(target.id, self.simple(value, target.id)), at)
        elif isinstance(target, (gast.Tuple, gast.List)) and any(
                isinstance(t, gast.Starred) for t in target.elts):
            self.assign_starred(target, value, at)
        elif isinstance(target, (gast.Tuple, gast.List)):
            pairs = _pairs(target, value)
            if pairs is not None:
                # a, b = b, a: evaluate every value before assigning any target
                bound = {n for t, _ in pairs for n in S.names_in(t)}
                clash = any(S.loaded_names(v) & bound for _, v in pairs)
                parts = [self.atom(v, _hint(t), force_temp=clash) if clash else v
                         for t, v in pairs]
                for (t, _), part in zip(pairs, parts):
                    self.assign_target(t, part, at)
            elif isinstance(value, gast.Call) and all(
                    isinstance(t, gast.Name) for t in target.elts) and not mutators.lowers(
                        value, self._resolves):  # a, b = xs.pop(): unpacked below
                # p, q = f(x): one call with several results, unpacked where it is made
                targets = gast.Tuple(elts=[S.name(t.id, gast.Store()) for t in target.elts],
                                     ctx=gast.Store())
                call = self.simple(value, _hint(target.elts[0]))
                call.srcdiff_unpacked = True  # a split's pieces: joined back (analysis)
                self.emit(gast.Assign(targets=[targets], value=call, type_comment=None), at)
            else:  # x, y = x: the value read before the first target rebinds it
                whole = self.atom(value, "_".join(_hint(t) for t in target.elts)[:24],
                                  force_temp=S.names_in(target) & S.names_in(value))
                self.check_unpacking(whole, len(target.elts), "", at)
                for k, t in enumerate(target.elts):
                    self.assign_target(t, gast.Subscript(value=whole, slice=S.const(k),
                                                         ctx=gast.Load()), at)
        elif isinstance(target, gast.Subscript):
            array = target.value
            if not isinstance(array, gast.Name):
                raise self.source_map.error(target, "only writes into a named array "
                                            "(x[i] = v) are supported",
                                            hint="Name the array first: row = x[i]; "
                                                 "row[j] = v.")
            index = self.index(target.slice, array.id)
            v = self.atom(value, array.id)
            self.emit(S.assign(gast.Subscript(value=S.name(array.id), slice=index,
                                              ctx=gast.Store()), v), at)
        elif isinstance(target, gast.Attribute):
            raise self.source_map.error(target, "assigning to an attribute is not supported",
                                        hint="Return the value instead.")
        else:
            raise self.source_map.error(target, f"assigning to a "
                                        f"{type(target).__name__} is not supported",
                                        hint="Assign to a name, a tuple of names, or an "
                                             "element of a named array (x[i] = v).")

    def assign_starred(self, target, value, at):
        """``a, *rest, b = seq``: a literal ``seq`` is paired item by item, ``rest``
        getting a list literal of the items between; any other value is unpacked by
        position when it runs, after the length check Python makes, ``rest`` being
        ``[seq[i] for i in range(1, len(seq) - 1)]`` (an array's rows, as Python
        gives)."""
        elts = target.elts
        k = next(i for i, t in enumerate(elts) if isinstance(t, gast.Starred))
        after = len(elts) - k - 1
        plain = type(target)(elts=elts[:k] + [elts[k].value] + elts[k + 1:],
                             ctx=gast.Store())
        if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) >= k + after and \
                not any(isinstance(v, gast.Starred) for v in value.elts):
            items = value.elts
            middle = gast.List(elts=items[k:len(items) - after], ctx=gast.Load())
            self.assign_target(plain, gast.Tuple(ctx=gast.Load(), elts=items[:k] + [middle]
                                                 + items[len(items) - after:]), at)
            return
        seq = self.atom(value, "seq", force_temp=S.names_in(target) & S.names_in(value))
        self.check_unpacking(seq, k + after, "at least ", at)
        parts = ([gast.Subscript(value=seq, slice=S.const(i), ctx=gast.Load())
                  for i in range(k)]
                 + [S.Substitute({"seq": seq}).visit(S.expr(
                     f"[seq[i] for i in range({k}, len(seq) - {after})]"))]
                 + [gast.Subscript(value=seq, slice=S.const(i - after), ctx=gast.Load())
                    for i in range(after)])
        for t, part in zip(plain.elts, parts):
            self.assign_target(t, part, at)

    def check_unpacking(self, seq, count, at_least, at):
        """Python's checks of unpacking ``seq`` into ``count`` targets (``at_least``
        with a starred one), made before it is unpacked by position: a dict or a set
        (whose items are not its positions) is refused."""
        short = "<" if at_least else "!="
        for text in ("if isinstance(seq, (dict, set, frozenset)): raise TypeError("
                     "'compiled code unpacks by position: unpack list(d) or "
                     "sorted(d) of a dict or set')",
                     f"if len(seq) {short} {count}: raise ValueError(f'cannot unpack "
                     f"{{len(seq)}} values (expected {at_least}{count})')"):
            self.stmt(copy_location(S.stmt(text, seq=seq), at))

    def stmt_With(self, s):
        """A branch always taken, its test the Manager that says so (managers.py)."""
        manager = lower_with(s, self.resolve, self.source_map)
        self.emit(gast.If(test=S.const(manager), body=self.block(s.body), orelse=[]), s)

    def stmt_If(self, s):
        arms, last = _elif_chain(s)
        if len(arms) > FLAT_ELIF:
            for flat in _flat_elif(arms, last, self.names):
                self.stmt(copy_location(flat, s))
            return
        test = self.condition(s.test)
        self.emit(gast.If(test=test, body=self.block(s.body), orelse=self.block(s.orelse)
                          if s.orelse else []), s)

    def stmt_While(self, s):
        # while c: body  ->  c = ...; while c: body; c = ...
        first = self.condition(s.test, "cond")
        saved, self.out = self.out, []
        again = self.condition(s.test, first.id if isinstance(first, gast.Name) else "cond")
        recompute, self.out = self.out, saved
        if isinstance(first, gast.Name) and isinstance(again, gast.Name) and again.id != first.id:
            recompute.append(S.assign(first.id, again))
        body = self.block(s.body)
        if body == [gast.Pass()]:
            body = []
        self.emit(gast.While(test=first, body=body + recompute, orelse=[]), s)

    def stmt_For(self, s):
        rewritten = self.dict_loop(s) or self.reversed_loop(s)
        if rewritten is not None:
            return self.stmt_For(copy_location(rewritten, s))
        iter_ = s.iter
        target = s.target
        call = _range_call(iter_, self.resolve)
        if call is not None and isinstance(target, gast.Name):
            bounds = [self.atom(a, "n") for a in call.args]
            assigned = S.assigned_names(s.body)
            bounds = [self.copy_if_assigned(b, assigned) for b in bounds]
            loop_range = gast.Call(func=S.name("range"), args=bounds, keywords=[])
            self.emit(gast.For(target=target, iter=loop_range, body=self.block(s.body),
                               orelse=[], type_comment=None), s)
            return
        # for x in xs / enumerate(xs) / zip(xs, ys): index the sequences instead
        counter, start = None, None
        fn = _call_of(iter_, self.resolve)
        if fn in (enumerate, zip) and (iter_.keywords and fn is zip or any(
                k.arg != "start" for k in iter_.keywords) or fn is enumerate and (
                    len(iter_.args) + len(iter_.keywords) not in (1, 2)
                    or not isinstance(target, gast.Tuple) or len(target.elts) != 2)):
            raise self.source_map.error(iter_, f"this form of {fn.__name__}(...) is not "
                                        "supported in a loop the compiler differentiates",
                                        hint="Loop over range(len(xs)) and index instead.")
        if fn is enumerate:
            counter = target.elts[0]
            sequences = [iter_.args[0]]
            targets = [target.elts[1]]
            start = (iter_.args[1:] + [k.value for k in iter_.keywords] or [None])[0]
            inner = iter_.args[0]
            if (_call_of(inner, self.resolve) is zip and not inner.keywords
                    and isinstance(targets[0], gast.Tuple)
                    and len(targets[0].elts) == len(inner.args)):
                sequences, targets = inner.args, targets[0].elts  # enumerate(zip(xs, ys))
        elif fn is zip and isinstance(target, gast.Tuple):
            sequences = iter_.args
            targets = target.elts
        else:
            sequences = [iter_]
            targets = [target]
        for q in sequences:
            if isinstance(q, gast.Name) and _resized(q.id, s.body):
                raise self.source_map.error(
                    s, f"this loop changes the length of {q.id}, the list it runs over: "
                       "Python's loop would see the change, a loop by position would not",
                    hint=f"Loop over a copy (for x in list({q.id})), or over "
                         f"range(len({q.id})) as it was, or use a while loop.")
        # the loop iterates over the sequences as they were before it: the body may rebind them
        assigned = S.assigned_names(s.body) | S.names_in(target)
        seqs = [self.copy_if_assigned(self.atom(q, "seq"), assigned) for q in sequences]
        if start is not None:  # enumerate(xs, start): as it was before the loop, too
            start = self.copy_if_assigned(self.atom(start, "start"), assigned)
        if counter is None or not isinstance(counter, gast.Name) or start is not None:
            index = self.names.fresh("i")
        else:
            index = counter.id
        lengths = []
        for q in seqs:  # each checked on its own (runtime.Positions)
            lengths.append(S.name(self.names.fresh("n")))
            self.emit(S.assign(lengths[-1].id, _positions(q, s.iter)), s)
        n = lengths[0].id
        if len(lengths) > 1:
            n = self.names.fresh("n")
            self.emit(S.assign(n, gast.Call(func=S.name("min"), args=lengths, keywords=[])), s)
        head = []
        for t, q in zip(targets, seqs):
            head.append(gast.copy_location(gast.Assign(
                targets=[t], value=gast.Subscript(value=q, slice=S.name(index), ctx=gast.Load()),
                type_comment=None), s))
        if counter is not None and (start is not None or not isinstance(counter, gast.Name)):
            count = S.name(index) if start is None else gast.BinOp(
                left=S.name(index), op=gast.Add(), right=start)
            head.append(gast.Assign(targets=[counter], value=count, type_comment=None))
        body = self.block(head + s.body)
        self.emit(gast.For(target=S.name(index, gast.Store()),
                           iter=gast.Call(func=S.name("range"), args=[S.name(n)], keywords=[]),
                           body=body, orelse=[], type_comment=None), s)

    def dict_loop(self, s):
        """``for k, v in d.items()`` (``.values()``, ``.keys()``) as a loop over the
        keys, ``list(d)``, reading ``d[k]``: a key carries no gradient, an item may.
        ``for k in d`` whose body reads ``d[k]`` is taken for ``d.keys()``: the keys
        of a dict (runtime.Keys refuses anything else when the loop is reached, as
        runtime.Positions refuses a dict in a loop by position)."""
        call = s.iter
        if _indexed_by_its_keys(s) or _made_a_dict(call, self.out):
            view, owner = "keys", call
        elif (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr in ("items", "values", "keys") and not call.args
                and not call.keywords and not self._resolves(call.func)):
            view, owner = call.func.attr, call.func.value
        else:
            return None
        if isinstance(owner, gast.Name) and _rekeyed(owner.id, _loop_key(s, view), s.body):
            raise self.source_map.error(
                s, f"this loop may add or remove keys of {owner.id} while it runs over "
                   "them: Python raises RuntimeError then, a loop over a list of them would not",
                hint=f"Loop over list({owner.id}), a copy of its keys, to change it in the loop.")
        d = self.copy_if_assigned(self.atom(owner, "d"),
                                  S.assigned_names(s.body) | S.names_in(s.target))
        keys = S.name(self.names.fresh("keys"))
        self.emit(S.assign(keys.id, keys_of(d, taken=owner is call)), s)
        if view == "keys":
            return gast.For(target=s.target, iter=keys, body=s.body, orelse=s.orelse,
                            type_comment=None)
        key = S.name(self.names.fresh("key"))
        item = gast.Subscript(value=d, slice=key, ctx=gast.Load())
        value = item if view == "values" else gast.Tuple(elts=[key, item], ctx=gast.Load())
        head = copy_location(gast.Assign(targets=[s.target], value=value, type_comment=None),
                             s)
        return gast.For(target=S.name(key.id, gast.Store()), iter=keys, body=[head] + s.body,
                        orelse=s.orelse, type_comment=None)

    def reversed_loop(self, s):
        """``for x in reversed(xs)`` as a loop over positions from the last."""
        if _call_of(s.iter, self.resolve) is not reversed or len(s.iter.args) != 1:
            return None
        inner = s.iter.args[0]
        rng = _range_call(inner, self.resolve)
        if rng is not None and len(rng.args) <= 2 and isinstance(s.target, gast.Name):
            lo, hi = ([S.const(0)] + rng.args)[-2:]
            return gast.For(target=s.target, iter=gast.Call(
                func=S.name("range"), keywords=[], args=[
                    gast.BinOp(left=hi, op=gast.Sub(), right=S.const(1)),
                    gast.BinOp(left=lo, op=gast.Sub(), right=S.const(1)), S.const(-1)]),
                body=s.body, orelse=s.orelse, type_comment=None)
        if rng is not None:
            return None
        seq = self.atom(inner, "seq")
        at = self.names.fresh("i")
        n = self.names.fresh("n")
        self.emit(S.assign(n, _positions(seq, inner)), s)
        last = gast.BinOp(left=S.name(n), op=gast.Sub(), right=S.const(1))
        head = copy_location(gast.Assign(targets=[s.target], type_comment=None, value=(
            gast.Subscript(value=seq, slice=S.name(at), ctx=gast.Load()))), s)
        return gast.For(target=S.name(at, gast.Store()), iter=gast.Call(
            func=S.name("range"), args=[last, S.const(-1), S.const(-1)], keywords=[]),
            body=[head] + s.body, orelse=s.orelse, type_comment=None)

    def copy_if_assigned(self, bound, assigned):
        if isinstance(bound, gast.Name) and bound.id in assigned:
            fresh = self.names.temp(bound.id)
            self.emit(S.assign(fresh, bound))
            return S.name(fresh)
        return bound



_RESIZING = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})
_REKEYING = frozenset({"pop", "popitem", "clear", "update", "setdefault"})  # of a dict


def _resized(name, body):
    """Whether ``body`` may change the length of the list ``name`` holds: a method that
    resizes it, ``del name[...]``, or a list (a literal, a comprehension, ``list(...)``)
    added in place (``name += [v]``) or assigned to a slice of it.  (An array's ``+=``
    and slices keep its length; rebinding ``name`` leaves the list as it was.)"""
    for node in (n for stmt in body for n in S.walk(stmt)):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute):
            if _is(node.func.value, name) and node.func.attr in _RESIZING:
                return True
        elif isinstance(node, gast.AugAssign):
            if _is(node.target, name) and _a_list(node.value):
                return True
        elif isinstance(node, gast.Delete):
            if any(isinstance(t, gast.Subscript) and _is(t.value, name) for t in node.targets):
                return True
        elif isinstance(node, gast.Assign) and _a_list(node.value):
            if any(isinstance(t, gast.Subscript) and _is(t.value, name)
                   and isinstance(t.slice, gast.Slice) for t in node.targets):
                return True
    return False


def _indexed_by_its_keys(s):
    """Whether the loop ``s`` is ``for k in d`` with ``d[k]`` in its body: a loop
    over the keys of a dict, as a list indexed by its own items seldom is."""
    d, k = s.iter, s.target
    return isinstance(d, gast.Name) and isinstance(k, gast.Name) and any(
        isinstance(n, gast.Subscript) and _is(n.value, d.id) and _is(n.slice, k.id)
        for stmt in s.body for n in S.walk(stmt))


def _loop_key(s, view):
    """The name that holds the key in a loop over ``view`` ("keys", "values", "items")
    of a dict, if the body leaves it as the loop set it."""
    target = s.target.elts[0] if view == "items" and isinstance(s.target, gast.Tuple) else (
        s.target if view == "keys" else None)
    if isinstance(target, gast.Name) and target.id not in S.assigned_names(s.body):
        return target.id
    return None


def _rekeyed(d, key, body):
    """Whether ``body`` may add or remove keys of the dict ``d``: a method that does,
    ``del d[...]``, or a store ``d[j] = v`` by another key than the loop's ``key``."""
    for node in (n for stmt in body for n in S.walk(stmt)):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute):
            if _is(node.func.value, d) and node.func.attr in _REKEYING:
                return True
        elif isinstance(node, gast.Subscript) and _is(node.value, d) and isinstance(
                node.ctx, (gast.Store, gast.Del)):
            if isinstance(node.ctx, gast.Del) or key is None or not _is(node.slice, key):
                return True
    return False


def _made_a_dict(node, before):
    """Whether the name ``node`` was last bound, in the statements ``before``, to a
    dict display or comprehension."""
    bound = next((b for b in reversed(before) if isinstance(node, gast.Name)
                  and node.id in S.assigned_names([b])), None)
    return isinstance(bound, gast.Assign) and isinstance(bound.value, (gast.Dict, gast.DictComp))


def _a_list(node):
    return isinstance(node, (gast.List, gast.ListComp)) or (
        isinstance(node, gast.Call) and _is(node.func, "list"))


def _is(node, name):
    return isinstance(node, gast.Name) and node.id == name


def _positions(seq, at):
    """``len(seq)`` for a loop over the positions of ``seq``: it checks, when it runs,
    that positions give what iterating ``seq`` gives (runtime.Positions)."""
    call = copy_location(gast.Call(func=S.name("len"), args=[seq], keywords=[]), at)
    call.srcdiff_positions = True
    return call


# An elif chain nests one block per arm in the generated code, since each condition is
# computed in the previous arm's else; Python allows 100 levels.  Longer chains than
# this are written flat (see _flat_elif).
FLAT_ELIF = 24


def _elif_chain(s):
    """The arms ``[(test, body, node)]`` of the if/elif chain ``s`` and its final else."""
    arms = []
    while True:
        arms.append((s.test, s.body, s))
        if len(s.orelse) != 1 or not isinstance(s.orelse[0], gast.If):
            return arms, s.orelse
        s = s.orelse[0]


def _flat_elif(arms, last, names):
    """The chain as a sequence of ifs one level deep: each condition is computed only
    while no earlier one held (``pending``), each body runs if its condition held.

        pending = True                      cond = False
        if pending: cond = <test>           if cond: <body>
        pending = pending and not cond      ...   if pending: <else>"""
    pending = names.fresh("pending")
    flat = [S.assign(pending, S.const(True))]
    for test, body, node in arms:
        cond = names.temp("cond")
        flat += [S.assign(cond, S.const(False)),
                 gast.If(test=S.name(pending), body=[copy_location(S.assign(cond, test),
                                                                    node)], orelse=[]),
                 copy_location(gast.If(test=S.name(cond), body=body, orelse=[]), node),
                 S.assign(pending, S.expr(f"{pending} and not {cond}"))]
    if last:
        flat.append(gast.If(test=S.name(pending), body=last, orelse=[]))
    return flat


def _as_load(target):
    import copy
    node = copy.deepcopy(target)
    for n in S.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = gast.Load()
    return node


def _pairs(target, value):
    """(target, value) leaves of a structured assignment like ``(a, b), c = (x, y), z``,
    or None when the shapes of the two sides differ."""
    if isinstance(target, (gast.Tuple, gast.List)):
        if not isinstance(value, (gast.Tuple, gast.List)) or len(value.elts) != len(
                target.elts):
            return None
        pairs = []
        for t, v in zip(target.elts, value.elts):
            inner = _pairs(t, v)
            pairs += inner if inner is not None else [(t, v)]
        return pairs
    return [(target, value)]


def _hint(target):
    return target.id if isinstance(target, gast.Name) else "t"


def _whole_write(call, resolve, resolves):
    """The array ``call`` writes into every element of, as ``x[...] = v`` would:
    ``np.copyto(x, v)`` and ``x.fill(v)`` (a name ``x``); None for any other call.
    (copyto refuses an unsafe cast where the assignment casts: only a call Python
    would have run is rewritten the same, one that raises now truncates instead.)"""
    if not isinstance(call, gast.Call) or call.keywords:
        return None
    if (_call_of(call, resolve) is np.copyto and len(call.args) == 2
            and isinstance(call.args[0], gast.Name)):
        return S.name(call.args[0].id)
    func = call.func
    if (isinstance(func, gast.Attribute) and func.attr == "fill" and len(call.args) == 1
            and isinstance(func.value, gast.Name) and not resolves(func)):
        return S.name(func.value.id)
    return None


def _call_of(node, resolve):
    if isinstance(node, gast.Call):
        try:
            return resolve(node.func)
        except KeyError:
            return None
    return None


def _range_call(node, resolve):
    if _call_of(node, resolve) is range and not node.keywords and 1 <= len(node.args) <= 3:
        return node
    return None

