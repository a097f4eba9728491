"""Which names hold containers (lists, tuples, dicts), and the lists built by append.

The adjoint of a container is :class:`rules.containers.Items`, which adds item by
item; the backward pass must know which names hold one, to start their adjoints at
``zero_adjoints(xs)`` and to add an item's adjoint into its slot.  A name holds a
container when it is a parameter passed one, a literal ``[a, b]`` or ``{"k": v}``,
a list built by ``append``, an item of a container of containers (the depth of each
parameter's nesting is known when it is compiled), or a copy of one of these (by name,
or by ``list``, ``tuple`` or ``dict``).

``xs.append(v)`` is differentiated as ``xs = append(xs, v)``: the list the adjoint
reads is the list as it ends.  That is exact where no adjoint reads the list before
an append changes it, and no other name or container shares it; and for ``xs[i]``
read before a later append too, whose adjoint goes into ``dxs[i]`` when the backward
pass has undone the appends after it: ``dxs`` then has the items the list had, and
``i`` (``-1`` too) names the item it named.  :func:`check_appends` refuses every
other use.

Invariant after ``container_depths``: a name of ``definite(depths)`` holds a container
wherever it is bound; any other name may hold one only where its adjoint's form is
decided when the backward pass runs (``unindex`` of a container gives Items).
"""
import operator

import gast

from ..rules import containers as runtime
from . import syntax as S
from .analysis import Kind, target_names


_LIST_MAKERS = (runtime.append, runtime.join_lists, runtime.field)  # not a new kind


def split_conversions(body, names, resolve):
    """``xs = np.array(xs)`` (a function of :data:`runtime.WHOLE` that makes an array
    or a number of the container it is given) in the function's top-level body, with
    ``xs`` not bound again anywhere after it: the new value gets a fresh name, read in
    its place from there on.  Renaming a value after its last binding changes nothing,
    and each name then holds one kind of value (see ``check_one_kind``)."""
    for k, s in enumerate(body):
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and isinstance(s.value, gast.Call) and s.value.args
                and isinstance(s.value.args[0], gast.Name)
                and s.value.args[0].id == s.targets[0].id):
            continue
        try:
            fn = resolve(s.value.func)
        except KeyError:
            continue
        old = s.targets[0].id
        rest = body[k + 1:]
        if fn not in runtime.WHOLE or fn in _LIST_MAKERS or old in S.assigned_names(rest):
            continue
        new = names.fresh(old)
        s.targets[0] = S.name(new, gast.Store())
        for later in rest:
            for n in S.walk(later):
                if isinstance(n, gast.Name) and n.id == old:
                    n.id = new


def container_depths(facts, param_depths, source_map, call_depths=None):
    """({name: (least, greatest) depth} of the names that may hold containers, the
    names that hold something else somewhere too).  The op of each ``xs + ys`` on
    lists becomes their join (``join_lists``): the describer could not tell.  A name whose least depth is 1 or
    more holds a container wherever it is bound; an item of a dict holding arrays
    and lists may be either (least 0).  ``param_depths`` are the parameters passed
    containers, ``call_depths`` {id(call statement): depth} the calls of user
    functions known to return one.  A name whose containers may nest without bound
    (``y = [y]``, which each pass of a loop deepens) is refused."""
    depths = dict(param_depths)
    call_depths = call_depths or {}
    leaves = set(facts.params) - set(param_depths)
    # each assignment adds at most one level to what it is given, unless it is given
    # its own result: deeper than this, a name holds itself
    bound = max([hi for _, hi in depths.values()] + list(call_depths.values()) + [0]) \
        + len(facts.assigns) + 1

    def depth(node):
        return depths.get(node.id, (0, 0)) if isinstance(node, gast.Name) else (0, 0)

    changed = True
    while changed:  # depths only spread: loops feed an append from its own results
        changed = False
        for s in facts.assigns:
            target = s.targets[0]
            if not isinstance(target, gast.Name):
                continue
            lo, hi = _depth_of(s, facts.ops[id(s)], depth, call_depths)
            if hi == 0:
                leaves.add(target.id)
                continue
            old = depths.get(target.id)
            new = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))
            if new[1] > bound:
                raise source_map.error(s, f"{target.id} holds containers nested without "
                                          "bound: a list, tuple or dict that holds "
                                          f"{target.id} itself",
                                       hint="Give the container a name of its own.")
            if new != old:
                depths[target.id] = new
                changed = True
    for s in facts.assigns:  # xs + [v] joins lists: its op is the join, not np.add
        if _is_join(s.value, depth):
            op = facts.ops[id(s)]
            op.fn, op.rule = runtime.join_lists, runtime.WHOLE[runtime.join_lists]
    return depths, leaves & set(depths)


def _is_join(value, depth):
    """``xs + ys`` of a list and what may be one: a join (an array and a list add item
    by item, which is arithmetic on a list, refused)."""
    if not (isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add)):
        return False
    (left, most_left), (right, most_right) = depth(value.left), depth(value.right)
    return bool(left and most_right or right and most_left)


def definite(depths):
    """The names that hold a container wherever they are bound."""
    return {name for name, (lo, _) in depths.items() if lo >= 1}


def _depth_of(s, op, depth, call_depths):
    if _is_join(s.value, depth):
        return _widest(depth(s.value.left), depth(s.value.right))
    if op.kind is Kind.PACK:
        inner = _widest(*(depth(a) for a in op.inputs)) if op.inputs else (0, 0)
        return inner[0] + 1, inner[1] + 1
    if op.kind is Kind.COPY:
        return depth(op.inputs[0])
    if op.kind is Kind.CALL:
        d = call_depths.get(id(s), 0)
        return d, d
    if op.fn is runtime.append:
        (lo, hi), (vlo, vhi) = depth(op.inputs[0]), depth(op.inputs[1])
        return max(lo, 1), max(hi, vhi + 1)
    if op.kind is Kind.PRIMITIVE and op.fn in (list, tuple, dict, sorted):  # a copy (of
        lo, hi = depth(op.inputs[0])                               # an array: its rows)
        return max(lo, 1), max(hi, 1)
    if op.fn is operator.getitem and isinstance(getattr(s.value, "slice", None), gast.Slice):
        return depth(op.inputs[0])  # xs[i:j]: a list as deep as xs
    if op.kind is Kind.PRIMITIVE and (op.fn in (operator.getitem, runtime.field) or (
            op.fn in (max, min) and len(op.inputs) == 1)):  # an item: max(pairs) is a pair
        lo, hi = depth(op.inputs[0])
        return max(lo - 1, 0), max(hi - 1, 0)
    if op.kind is Kind.PRIMITIVE and op.fn in (max, min):  # one of them: max(pair, pair)
        return _widest(*(depth(a) for a in op.inputs))
    return 0, 0


def _widest(*ranges):
    return min(lo for lo, _ in ranges), max(hi for _, hi in ranges)


def check_one_kind(facts, names, source_map):
    """Refuse names carrying a gradient that hold a container at one point and an
    array or a number at another (``xs = np.array(xs)``): their adjoints differ."""
    for s in facts.assigns:
        clash = set(target_names(s.targets[0])) & names
        if clash:
            name = min(clash)
            raise source_map.error(s, f"{name} holds a list, tuple or dict in one place and "
                                   "an array or a number in another",
                                   hint=f"Give the {name} of each kind a name of its own.")


def check_fields(facts, tuples, source_map):
    """Refuse ``t.name`` of a call's several results: compiled, they are a plain tuple
    (``np.linalg.slogdet(x).logabsdet``: read them by position or unpack them)."""
    for s in facts.assigns:
        op = facts.ops[id(s)]
        if op.fn is runtime.field and getattr(op.inputs[0], "id", None) in tuples:
            raise source_map.error(s, f"cannot read the attribute .{op.inputs[1].value} of "
                                   "a call's results when compiled",
                                   hint="Unpack them (a, b = f(x)) or index them (f(x)[1]).")


def check_array_methods(facts, depths, active, source_map):
    """Refuse an active ``obj.sum()``, ``obj.T``, ... (an ndarray method, compiled as
    ``np.sum(obj)``: anf.py) of a name that may hold a container.  A list, tuple or
    dict has no such method; a namedtuple class that defines one is called by NumPy
    (``np.sum`` calls ``obj.sum``), whose value the rule of ``np.sum`` would not
    differentiate."""
    for s in facts.assigns:
        call = s.value
        attr = getattr(call, "srcdiff_method", None)
        receiver = getattr(call.args[0], "id", None) if attr else None
        if receiver in depths and depths[receiver][1] >= 1 and set(
                target_names(s.targets[0])) & active:
            raise source_map.error(s, f"cannot differentiate {receiver}.{attr}: {receiver} "
                                      "may hold a list, tuple or dict, which has no ndarray "
                                      f"method {attr!r} (its own class's would be called)",
                                   hint=f"Call a function on its items, or make {attr} a "
                                        "function of your module.")


def check_slice_writes(facts, depths, source_map):
    """Refuse ``xs[i:j] = vs`` into a name that may hold a list: it may change the
    list's length, and its adjoint's slots are written one by one."""
    for s in facts.assigns:
        target = s.targets[0]
        if not isinstance(target, gast.Subscript) or depths.get(
                target.value.id, (0, 0))[1] < 1:
            continue
        index = target.slice
        if any(isinstance(p, gast.Slice) for p in (
                index.elts if isinstance(index, gast.Tuple) else [index])):
            raise source_map.error(s, f"cannot differentiate a write into a slice of "
                                      f"{target.value.id}, which may hold a list",
                                   hint="Write the items one by one (xs[i] = v), or build "
                                        "a new list (xs = xs[:i] + vs + xs[j:]).")


def check_appends(facts, source_map):
    """Refuse a change in place that the adjoints cannot follow: ``append``, and the
    statements of ``pop``, ``insert`` and ``update`` (mutators.py, which rebinds the
    name: exact only for a container nothing else holds), to a list (a dict) the
    function did not make itself (an argument: the caller's would change), or to one
    that some statement reads whole, copies or packs before a later change to it (an
    item read, ``xs[i]``, follows: see the module doc)."""
    changes = {}
    for s in facts.assigns:
        if facts.ops[id(s)].fn is runtime.append:
            changes.setdefault(s.targets[0].id, []).append((s, "append"))
        elif hasattr(s, "srcdiff_changes"):
            name, method = s.srcdiff_changes
            changes.setdefault(name, []).append((s, method))
    for name, group in changes.items():
        stmts = [s for s, _ in group]
        first, method = min(group, key=lambda c: facts.order[id(c[0])])
        literal, empty = (gast.Dict, "{}") if method == "update" else (gast.List, "[]")
        made = [s for s in facts.assigns if name in target_names(s.targets[0])
                and s not in stmts and not (literal is gast.Dict and isinstance(
                    s.targets[0], gast.Subscript))]  # d[k] = v: in_place.py
        reaching = [m for m in made if any(_may_follow(facts, a, m, ()) for a in stmts)]
        other = gast.List if literal is gast.Dict else gast.Dict
        if any(isinstance(m.value, other) for m in reaching):  # d.pop(k), a dict's
            raise source_map.error(first, f"cannot differentiate {name}.{method}(...) on a "
                                   f"{other.__name__.lower()}: a list's pop and insert and "
                                   "a dict's update are modelled",
                                   hint=f"Read {name}[k] and build the {name} you need "
                                   f"anew (a {other.__name__.lower()} display).")
        if any(not isinstance(m.value, literal) for m in reaching) or not any(
                _runs_before(facts, m, first) for m in reaching):
            raise source_map.error(first, f"cannot differentiate {name}.{method}(...) on "
                                   f"a {literal.__name__.lower()} the function did not make "
                                   "as a literal", hint=f"Start it here with {name} = "
                                   f"{empty} (or {empty[0]}...{empty[1]}).")
        for read in _reads(facts, name, stmts):
            for a, method in group:
                if _may_follow(facts, a, read, reaching):
                    raise source_map.error(
                        read, f"cannot differentiate a read of {name} before a later "
                        f"{name}.{method}(...), which changes it in place: the gradient "
                        "would see it as it ends",
                        hint=f"Read {name} after its last change, or keep the value you "
                             "need in a variable of its own.")


def _runs_before(facts, first, later):
    """Whether statement ``first`` runs, each time, before ``later`` does: earlier in
    order, in no loop or branch that ``later`` is not in too."""
    return (facts.order[id(first)] < facts.order[id(later)]
            and facts.loops_of[id(first)] <= facts.loops_of[id(later)]
            and facts.arms_of[id(first)] <= facts.arms_of[id(later)])


def _reads(facts, name, appends):
    """The statements that read ``name``, other than its appends, those that read only
    its length (``len(name)``) and an item of it (``v = name[i]``, ``i`` no slice: its
    adjoint is ``dname[i]``'s)."""
    skip = {id(s) for s in appends}
    for s in facts.in_order:
        if id(s) in skip or isinstance(s, (gast.For, gast.While, gast.If)):
            continue
        value = getattr(s, "value", None)
        if value is None or name not in S.loaded_names(s):
            continue
        if isinstance(s, gast.Assign) and _is_item_of(value, name) or _only_lengths(s, name):
            continue
        yield s


def _only_lengths(node, name):
    """Whether ``node`` reads ``name`` only as ``len(name)``."""
    reads = lengths = 0
    for n in S.walk(node):
        if isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load):
            reads += 1
        elif (isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
              and n.func.id == "len" and len(n.args) == 1 and not n.keywords
              and isinstance(n.args[0], gast.Name) and n.args[0].id == name):
            lengths += 1
    return reads == lengths


def _is_item_of(value, name):
    """Whether ``value`` is ``name[i]``, with no slice in ``i`` and no other read of
    ``name`` (ANF gives every index its own name or constant)."""
    return (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name)
            and value.value.id == name and not isinstance(value.slice, (gast.Slice, gast.Tuple))
            and name not in S.loaded_names(value.slice))


def _may_follow(facts, later, read, made):
    """Whether statement ``later`` may run after ``read`` on the same list: later in
    order, or in a loop around both that does not make the list afresh first."""
    order = facts.order
    if order[id(later)] > order[id(read)]:
        return True
    for loop in facts.loops_of[id(read)] & facts.loops_of[id(later)]:
        if not any(loop in facts.loops_of[id(m)] and _runs_before(facts, m, later)
                   for m in made):
            return True
    return False
