"""Nested structures (lists, tuples, namedtuples, dicts) of values, as tf.nest sees them."""


def flatten(structure):
    """The leaves of ``structure`` in TensorFlow's order (dicts by sorted key)."""
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


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
