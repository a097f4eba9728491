"""Run the compiler's passes on a test function and hand back their records."""
import gast

from srcdiff.compiler.analysis import Describer
from srcdiff.compiler.codegen import Refs
from srcdiff.compiler.facts import gather
from srcdiff.compiler.cache import CACHE
from srcdiff.compiler.driver import prepare, reverse


def normalised(fn):
    """The normalised body of ``fn`` (a list of gast statements) and its Parsed."""
    parsed, node, _ = prepare(fn)
    return node.body, parsed


def facts_of(fn, numbers=()):
    """The Facts of ``fn``'s normalised body; ``numbers`` are parameters given floats."""
    body, parsed = normalised(fn)
    return gather(body, parsed.params, set(numbers),
                  Describer(parsed.resolve, parsed.source_map))


def reverse_of(fn, wrt=None, numbers=()):
    """The records of the reverse pass of ``fn`` (``driver.Pair``), differentiated with
    respect to ``wrt`` (all parameters by default)."""
    parsed, node, names = prepare(fn)
    wrt = list(wrt if wrt is not None else parsed.params)

    def compile_call(callee, mask, scalars, at):
        return CACHE.get(callee, mask, scalars)

    return reverse(parsed, node.body, wrt, names, Refs(parsed.namespace), compile_call,
                   set(numbers), {})


def assigned(facts, name):
    """The assignments binding ``name``, in forward order."""
    out = []
    for s in facts.assigns:
        target = s.targets[0]
        if isinstance(target, gast.Name) and target.id == name:
            out.append(s)
        elif isinstance(target, gast.Tuple) and any(getattr(e, "id", None) == name
                                                    for e in target.elts):
            out.append(s)
    return out


def source(stmts):
    """The statements as Python source, for readable assertions."""
    import ast
    module = gast.gast_to_ast(gast.Module(body=list(stmts), type_ignores=[]))
    return ast.unparse(ast.fix_missing_locations(module))
