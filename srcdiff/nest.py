"""Nested structures (lists, tuples, namedtuples, dicts) of values, as tf.nest sees them."""
import numpy as np

_PLAIN = (np.ndarray, float, int)  # the values most calls pass: nothing to unwrap
_CONTAINERS = (list, tuple, dict)


def flatten(structure):
    """The leaves of ``structure`` in TensorFlow's order (dicts by sorted key)."""
    kind = type(structure)
    if kind is not list and kind is not tuple and isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    if kind is list or kind is tuple or isinstance(structure, (list, tuple)):
        leaves = []
        for item in structure:  # a leaf without a call: most structures are flat lists
            if isinstance(item, _CONTAINERS):
                leaves.extend(flatten(item))
            else:
                leaves.append(item)
        return leaves
    return [structure]


def paths(structure):
    """The path of each leaf of ``structure`` (the keys and positions that lead to it
    from the top), in :func:`flatten`'s order."""
    if isinstance(structure, dict):
        return [(key,) + p for key in sorted(structure) for p in paths(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [(i,) + p for i, item in enumerate(structure) for p in paths(item)]
    return [()]


def pack_sequence_as(structure, leaves):
    """``leaves`` rebuilt into the shape of ``structure``."""
    it = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            built = {key: build(s[key]) for key in sorted(s)}
            return type(s)((key, built[key]) for key in s)
        if isinstance(s, (list, tuple)):
            items = [build(item) for item in s]
            if hasattr(s, "_fields"):  # namedtuple
                return type(s)(*items)
            return type(s)(items)
        return next(it)

    return build(structure)


def unwrapped(structure):
    """``structure`` with the array behind each Tensor and Variable in it: what compiled
    code sees.  The same containers, in the same order; ``structure`` is not changed."""
    if type(structure) in _PLAIN:
        return structure
    if isinstance(structure, (list, tuple, dict)):
        return rebuilt(structure, [unwrapped(v) for v in items(structure)])
    array = getattr(structure, "_array", None)
    return array() if array is not None else structure


def items(container):
    """The values a list, tuple or dict holds, in its own order (a dict's insertion order)."""
    return container.values() if isinstance(container, dict) else container


def rebuilt(container, values):
    """A container like ``container`` holding ``values`` (one level)."""
    if isinstance(container, dict):
        return type(container)(zip(container, values))
    if hasattr(container, "_fields"):  # a namedtuple
        return type(container)(*values)
    return type(container)(values)


def frozen(value):
    """``value`` with a read-only copy of each ndarray in it the caller may write into
    (of each leaf of a pytree): the compiled forward pass keeps views of its arguments
    for a backward step that runs later (a tape's, a pullback's), after the caller may
    have written into them.  A read-only array that owns its memory is kept."""
    if type(value) is np.ndarray:
        if value.base is None and not value.flags.writeable:
            return value
        value = value.copy()
        value.setflags(False)  # write=False, by position: cheaper than the flags object
        return value
    if isinstance(value, _CONTAINERS):
        return rebuilt(value, [frozen(v) for v in items(value)])
    return value
