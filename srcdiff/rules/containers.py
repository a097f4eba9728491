"""The adjoint of a Python container (list, tuple, dict, namedtuple), and the rules of
the functions that take a container whole (``np.stack(xs)``, ``sum(xs)``).

A container of arrays and numbers is a pytree, and its adjoint has its structure.
:class:`Items` holds the adjoints of the items that some code reached, by position or
key; an item it does not hold has adjoint zero, so reading one of a thousand items
costs one entry, not a thousand arrays of zeros.  Adjoints add item by item (``+``),
and NumPy defers to ``Items`` in arithmetic (``__array_ufunc__ = None``), so the
generated ``dx = dx + ...`` serves arrays and containers alike, and mixing the two
by mistake raises instead of computing something.  :func:`dense` gives the caller
the gradient with the structure of the value.

A list that grows by ``append`` is read, for gradients, only after its last append
(``compiler.containers`` checks it), so ``like``, the list as it ends, names the
items of every adjoint; ``length`` counts the items that exist at the point the
backward pass has reached: undoing an append drops the last one.
"""
import operator

import numpy as np

from .helpers import concat_adjoint, unbroadcast
from .registry import Rule

CONTAINERS = (list, tuple, dict)


class Items:
    """The adjoint of the container ``like``: ``items`` maps a position or key to the
    adjoint of that item; the first ``length`` items of a list exist."""

    __slots__ = ("like", "items", "length")
    __array_ufunc__ = None  # ndarray + Items -> Items.__radd__, never an object array

    def __init__(self, like, items=None, length=None):
        self.like = like
        self.items = {} if items is None else items
        self.length = len(like) if length is None else length

    def key(self, k):
        """``k`` as the key ``items`` uses: a position from 0, for a sequence."""
        if isinstance(self.like, dict):
            if k not in self.like:
                raise KeyError(k)
            return k
        k = operator.index(k)
        if not -self.length <= k < self.length:
            raise IndexError(f"index {k} out of range for {self.length} items")
        return k % self.length

    def held(self):
        """(key, adjoint) of the items held, of those that exist."""
        if isinstance(self.like, dict):
            return self.items.items()
        return ((k, v) for k, v in self.items.items() if k < self.length)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return Items(self.like[k], {j: self[p] for j, p in
                                        enumerate(range(self.length)[k]) if p in self.items})
        k = self.key(k)
        held = self.items.get(k)
        return zeros_like(self.like[k]) if held is None else held

    def __setitem__(self, k, value):
        if isinstance(k, slice):  # ``dxs[s] = dxs[s] + g`` for a slice held in a name
            positions = range(self.length)[k]
            if not isinstance(value, Items):
                value = as_items(value, [self.like[p] for p in positions])
            for j, p in enumerate(positions):
                self.items[p] = value[j]
            return
        self.items[self.key(k)] = value

    def __len__(self):
        return self.length

    def __iter__(self):
        keys = self.like if isinstance(self.like, dict) else range(self.length)
        return (self[k] for k in keys)

    def __add__(self, other):
        if not isinstance(other, Items):
            other = as_items(other, self.like)
        merged = Items(self.like, dict(self.held()), max(self.length, other.length))
        return merged.add(other)

    __radd__ = __add__

    def __iadd__(self, other):
        if not isinstance(other, Items):
            other = as_items(other, self.like)
        return self.add(other)

    def add(self, other):
        """Add ``other``'s items into this object's own."""
        for k, v in other.held():
            mine = self.items.get(k)
            self.items[k] = v if mine is None else mine + v
        return self

    def copy(self):
        return Items(self.like, dict(self.held()), self.length)

    def __repr__(self):
        return f"Items({dict(self.held())!r})"


def as_items(g, like):
    """``g``, an adjoint of container ``like`` in another form, as :class:`Items`: zero
    (``0``, ``None``), an array stacking the adjoints of equal-shaped items, or a tuple
    of the items' adjoints (what a caller that unpacks ``like`` passes)."""
    if g is None or (np.ndim(g) == 0 and not isinstance(g, CONTAINERS) and g == 0):
        return Items(like)
    if isinstance(g, tuple) and not isinstance(like, dict) and len(g) == len(like):
        return Items(like, dict(enumerate(g)))
    if isinstance(g, np.ndarray) and not isinstance(like, dict) and len(g) == len(like):
        return Items(like, {k: g[k] for k in range(len(g))})
    raise TypeError(f"cannot add an adjoint of type {type(g).__name__} to the adjoint of "
                    f"a {type(like).__name__}")


def zeros_like(x):
    """The zero adjoint of ``x``: Items for a container, 0.0 for a number, else an array."""
    if isinstance(x, CONTAINERS):
        return Items(x)
    if isinstance(x, (float, int)):
        return 0.0
    return np.zeros(np.shape(x), np.result_type(getattr(x, "dtype", float), np.float32))


def zero_adjoints(xs):
    """The adjoint of container ``xs`` before any item has one."""
    return Items(xs)


def dense(g, like, leaf):
    """The gradient for value ``like`` from its adjoint ``g``: the same structure, with
    ``leaf(adjoint or None, value)`` for each array or number in it."""
    if not isinstance(like, CONTAINERS):
        return leaf(g, like)
    g = g if isinstance(g, Items) else as_items(g, like)
    held = dict(g.held())
    if isinstance(like, dict):
        return type(like)((k, dense(held.get(k), v, leaf)) for k, v in like.items())
    values = [dense(held.get(k), v, leaf) for k, v in enumerate(like)]
    if isinstance(like, tuple):
        return type(like)(*values) if hasattr(like, "_fields") else tuple(values)
    return values


def own_item(g, key):
    """``g[key]`` of a container's adjoint ``g``, as a value no later write changes: an
    item of Items is replaced, never written into; a row of an array is copied."""
    return g[key].copy() if isinstance(g, np.ndarray) else g[key]


def drop_item(g, key, xs):
    """Zero the adjoint of item ``key`` of container ``xs``, whose old item (put back)
    ``xs[key] = v`` replaced: zeros of its shape, not ``0``, which rules that reshape,
    transpose or index their cotangent cannot take; a row of an array adjoint (of
    equal-shaped items) is zeroed in place."""
    if isinstance(g, Items) and isinstance(xs, dict) and key not in xs:
        g.items.pop(key, None)  # a key new to the dict, deleted again: no old item
    elif isinstance(g, Items):
        g[key] = zeros_like(xs[key])
    else:
        g[key] = 0


def item_adjoint(g, index, xs):
    """The adjoint of container ``xs`` from the adjoint ``g`` of ``xs[index]``."""
    if isinstance(index, slice):
        positions = range(len(xs))[index]
        return Items(xs, {p: g[j] for j, p in enumerate(positions)})
    out = Items(xs)
    out[index] = g
    return out


def last(g):
    """The adjoint of the item an ``append`` added: the last of list adjoint ``g``."""
    return g[len(g) - 1]


def drop_last(g):
    """List adjoint ``g`` as it was before the last ``append``: one item shorter.
    The items are shared, not copied: ``g`` is dead once its append is undone."""
    if not isinstance(g, Items):  # an array, or a tuple from a caller that unpacks
        return g[:-1]
    return Items(g.like, g.items, g.length - 1)


def append(xs, v):
    """``xs.append(v)`` as a value: the same list, one item longer."""
    xs.append(v)
    return xs


def _adjoints_of(xs, pieces):
    """The adjoint of ``xs`` from those of its items: Items for a container; for an
    array (whose rows the function took as items), the array they make."""
    if isinstance(xs, CONTAINERS):
        return Items(xs, dict(enumerate(pieces)))
    return np.reshape(np.stack(pieces), np.shape(xs)) if len(pieces) else np.zeros(np.shape(xs))


def field(x, name):
    """``x.name`` of a namedtuple ``x``: its item at that field."""
    return getattr(x, name)


def field_adjoint(g, name, x):
    """The adjoint of namedtuple ``x`` from the adjoint ``g`` of ``x.name``."""
    if not hasattr(x, "_fields"):
        raise TypeError(f"cannot differentiate .{name} of a {type(x).__name__}: only the "
                        "fields of a namedtuple are modelled")
    return item_adjoint(g, x._fields.index(name), x)


def join_lists(a, b):
    """``a + b`` of two lists (or tuples): one after the other."""
    return a + b


def front(g, a):
    """The adjoint of ``a`` from that of ``a + b``: its first ``len(a)`` items."""
    if isinstance(g, np.ndarray):
        return g[:len(a)]
    return Items(a, {k: v for k, v in g.held() if k < len(a)})


def back(g, a, b):
    """The adjoint of ``b`` from that of ``a + b``: the items after ``a``'s."""
    if isinstance(g, np.ndarray):
        return g[len(a):]
    return Items(b, {k - len(a): v for k, v in g.held() if k >= len(a)})


def parts(g, xs, axis, promote=np.asarray):
    """The adjoints of the items of ``xs`` from the adjoint ``g`` of their join along
    ``axis`` (of the items flattened where it is None), each item first promoted
    (``np.atleast_2d`` for vstack...)."""
    if axis is None:
        return _adjoints_of(xs, [concat_adjoint(k, g, xs, None) for k in range(len(xs))])
    shapes = [np.shape(promote(x)) for x in xs]
    bounds = np.cumsum([s[axis] for s in shapes])[:-1]
    pieces = np.split(g, bounds, axis=axis)
    return _adjoints_of(xs, [np.reshape(p, np.shape(x)) for p, x in zip(pieces, xs)])


def unstacked(g, xs, axis=0):
    """The adjoints of the items of ``xs`` from the adjoint of ``np.stack(xs, axis)``."""
    return _adjoints_of(xs, list(np.moveaxis(g, axis, 0)))


def from_array(g, x):
    """The adjoint of ``x`` (nested lists of numbers or arrays, or an array) from the
    adjoint of ``np.array(x)``."""
    if isinstance(x, CONTAINERS) and not isinstance(x, dict):
        return Items(x, {k: from_array(g[k], item) for k, item in enumerate(x)})
    return np.reshape(g, np.shape(x))


def copied(g, xs, keyed=False):
    """The adjoint of ``xs`` from that of ``list(xs)``, ``tuple(xs)`` or (``keyed``)
    ``dict(xs)``: item for item (an array's rows are its items); a dict's keys, which
    ``list(d)`` and ``tuple(d)`` hold, have none, whatever they are."""
    if isinstance(xs, dict) and not keyed:
        return Items(xs)
    held = dict(as_items(g, list(xs) if isinstance(xs, np.ndarray) else xs).held()
                if not isinstance(g, Items) else g.held())
    if isinstance(xs, np.ndarray):
        return _adjoints_of(xs, [held[k] if k in held else zeros_like(x)
                                 for k, x in enumerate(xs)])
    if isinstance(xs, dict):
        return Items(xs, {k: v for k, v in held.items() if k in xs})
    return Items(xs, {k: v for k, v in held.items() if isinstance(k, int) and k < len(xs)})


def spread(g, xs):
    """The adjoints of the items of ``xs`` from the adjoint of ``sum(xs)``."""
    return _adjoints_of(xs, [unbroadcast(g, x) for x in xs])


def picked(g, ans, xs):
    """The adjoints of the items of ``xs`` from the adjoint of ``max(xs)`` or
    ``min(xs)``: all of it to the item Python picked (the first of equal ones, whatever
    its ``key=``), none from an empty ``xs`` (``default=`` was picked: ``unpicked``)."""
    if not len(xs):
        return _adjoints_of(xs, [])
    k = next((k for k, x in enumerate(xs) if x is ans), None)
    if k is None:  # an equal copy (a list rebuilt): the first equal item, as picked
        k = next(k for k, x in enumerate(xs) if x == ans)
    if isinstance(xs, np.ndarray):  # its rows were the items: an array, as copied's
        return _adjoints_of(xs, [g if j == k else zeros_like(x) for j, x in enumerate(xs)])
    return Items(xs, {k: g})


def unpicked(g, xs, default):
    """The adjoint of ``default`` from the adjoint of ``max(xs, default=default)``: all
    of it if ``xs`` is empty, else zero."""
    return g if not len(xs) else zeros_like(default)


def max_adjoint(i, g, xs, key=None):
    """The adjoint of ``xs[i]`` from the adjoint of ``max(*xs, key=key)``: all of it if
    Python picked that argument, else zero."""
    return g if i == _picked_at(xs, operator.gt, key) else zeros_like(xs[i])


def min_adjoint(i, g, xs, key=None):
    """The adjoint of ``xs[i]`` from the adjoint of ``min(*xs, key=key)``, as
    ``max_adjoint``."""
    return g if i == _picked_at(xs, operator.lt, key) else zeros_like(xs[i])


def _picked_at(xs, beats, key=None):
    """The position of the argument ``max(*xs)`` (``beats`` is ``>``) or ``min(*xs)``
    (``<``) returns: Python's own comparisons, in its order (a later item replaces the
    one held only if it beats it), so ties go to the first and a NaN is kept or passed
    over as Python keeps or passes it over; by ``key(x)``, when given, as Python."""
    keys = xs if key is None else [key(x) for x in xs]
    k = 0
    for j in range(1, len(xs)):
        if beats(keys[j], keys[k]):
            k = j
    return k


def unsorted(g, ans, xs, reverse):
    """The adjoints of the items of ``xs`` from the adjoint of ``sorted(xs, reverse=...)``:
    item k of the result is item ``order[k]`` of ``xs``, ``order`` made by the same
    comparisons of the same items as the sort (so equal items keep their order, as
    Python's stable sort keeps it).  A dict's keys carry no gradient."""
    if isinstance(xs, dict):
        return Items(xs)
    order = sorted(range(len(xs)), key=xs.__getitem__, reverse=reverse)
    g = g if isinstance(g, Items) else as_items(g, ans)
    if isinstance(xs, np.ndarray):  # sorted(x) of a vector: a list of its items
        d = zeros_like(xs)
        for k, v in g.held():
            d[order[k]] += v
        return d
    return Items(xs, {order[k]: v for k, v in g.held()})


def block_parts(g, arrays):
    """The adjoints of the items of the nested lists ``arrays`` from the adjoint ``g`` of
    ``np.block(arrays)``: cut back along the axis each level of lists joined (the last
    for the innermost lists), then each piece shaped as its item (NumPy gave an item
    leading axes of length one up to the result's rank)."""
    depth = 0
    x = arrays
    while isinstance(x, list):
        depth, x = depth + 1, x[0]
    rank = np.ndim(g)

    def shape(x, level):
        """The shape of the block ``x`` makes at ``level`` (lists above it)."""
        if not isinstance(x, list):
            own = np.shape(x)
            return (1,) * (rank - len(own)) + own
        shapes = [shape(item, level + 1) for item in x]
        joined = list(shapes[0])
        joined[level - depth] = sum(s[level - depth] for s in shapes)
        return tuple(joined)

    def cut(g, x, level):
        if not isinstance(x, list):
            return np.reshape(g, np.shape(x))
        sizes = [shape(item, level + 1)[level - depth] for item in x]
        pieces = np.split(g, np.cumsum(sizes)[:-1], axis=level - depth)
        return Items(x, {k: cut(piece, item, level + 1)
                         for k, (piece, item) in enumerate(zip(pieces, x))})

    return cut(g, arrays, 0)


def _hstack_axis(xs):
    return 0 if all(np.ndim(x) <= 1 for x in xs) else 1


def _column(x):
    x = np.asarray(x)
    return x.reshape(-1, 1) if x.ndim < 2 else x


# The rules of functions given a whole container (a name, not a literal [a, b]): the
# compiler differentiates np.stack(xs) through these; the tape sees the items one by one.
WHOLE = {
    np.stack: Rule(np.stack, [lambda g, ans, arrays, axis=0: unstacked(g, arrays, axis)],
                   "numpy.stack"),
    np.concatenate: Rule(np.concatenate,
                         [lambda g, ans, arrays, axis=0: parts(g, arrays, axis)],
                         "numpy.concatenate"),
    np.hstack: Rule(np.hstack, [lambda g, ans, tup: parts(g, tup, _hstack_axis(tup),
                                                         np.atleast_1d)], "numpy.hstack"),
    np.vstack: Rule(np.vstack, [lambda g, ans, tup: parts(g, tup, 0, np.atleast_2d)],
                    "numpy.vstack"),
    np.column_stack: Rule(np.column_stack, [lambda g, ans, tup: parts(g, tup, 1, _column)],
                          "numpy.column_stack"),
    np.dstack: Rule(np.dstack, [lambda g, ans, tup: parts(g, tup, 2, np.atleast_3d)],
                    "numpy.dstack"),
    np.block: Rule(np.block, [lambda g, ans, arrays: block_parts(g, arrays)], "numpy.block"),
    np.array: Rule(np.array, [lambda g, ans, object, dtype=None: from_array(g, object)],
                   "numpy.array"),
    np.asarray: Rule(np.asarray, [lambda g, ans, a, dtype=None: from_array(g, a)],
                     "numpy.asarray"),
    list: Rule(list, [lambda g, ans, iterable: copied(g, iterable)], "list"),
    tuple: Rule(tuple, [lambda g, ans, iterable: copied(g, iterable)], "tuple"),
    dict: Rule(dict, [lambda g, ans, iterable: copied(g, iterable, True)], "dict"),
    # max(xs, key=f, default=d): the item picked is found as it is, whatever f
    max: Rule(max, [lambda g, ans, iterable, default=None, *, key=None: picked(g, ans, iterable),
                    lambda g, ans, iterable, default=None, *, key=None: unpicked(
                        g, iterable, default)], "max"),
    sorted: Rule(sorted, [lambda g, ans, iterable, reverse=False: unsorted(
        g, ans, iterable, reverse)], "sorted"),
    min: Rule(min, [lambda g, ans, iterable, default=None, *, key=None: picked(g, ans, iterable),
                    lambda g, ans, iterable, default=None, *, key=None: unpicked(
                        g, iterable, default)], "min"),
    sum: Rule(sum, [lambda g, ans, iterable, start=0: spread(g, iterable),
                    lambda g, ans, iterable, start=0: unbroadcast(g, start)], "sum"),
    field: Rule(field, [lambda g, ans, x, name: field_adjoint(g, name, x)], "field"),
    join_lists: Rule(join_lists, [lambda g, ans, a, b: front(g, a), lambda g, ans, a, b: back(g, a, b)],
               "join_lists"),
    append: Rule(append, [lambda g, ans, xs, v: drop_last(g), lambda g, ans, xs, v: last(g)],
                 "append"),
}

# The rules of max and min given several arguments (max(a, b, c)), each an input.
SEVERAL = {
    max: Rule(max, [], "max",
              argnum_vjp=lambda i, g, ans, *args, key=None: max_adjoint(i, g, args, key)),
    min: Rule(min, [], "min",
              argnum_vjp=lambda i, g, ans, *args, key=None: min_adjoint(i, g, args, key)),
}
