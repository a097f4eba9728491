"""Python models of the methods of built-in containers that read without writing.

A method call on a local value is resolved when it runs (dispatch.py), and compiled
as the Python function its class defines; a ``dict``'s methods are built in, with no
Python source to compile.  Each function here computes exactly what the built-in
method computes, written with the forms the compiler models, so that the method is
compiled like any other: ``d.get(k, v)`` of a dict holding differentiated arrays
gives ``d[k]`` its adjoint when the key is there, and ``v`` its adjoint when it is
not.  A method that writes into its object has no model here: ``pop``, ``insert``
and ``update`` are rewritten as rebindings and item writes (mutators.py), the rest
(``setdefault``, ``remove``...) stay refused.
"""


def get(self, key, default=None):
    """``dict.get``."""
    if key in self:
        return self[key]
    return default


MODELS = {(dict, "get"): get}
MODELLED = frozenset(MODELS.values())
