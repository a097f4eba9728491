"""Exits to flags: ``break``, ``continue`` and ``return`` anywhere become flag
assignments, so that one reverse pass handles every path.

The statements after a possible exit are guarded by ``if not <flag>:`` and each
loop ends with ``if <broke>: break``; the backward pass replays the branches the
flags took, like any other.  Invariant of the output: no ``continue``, one final
``return``, ``break`` only as the flag test that ends its loop's body.
"""
import gast

from . import syntax as S


class _Loop:
    def __init__(self, skip, broke):
        self.skip = skip      # set by continue, break and return: skip the rest of the body
        self.broke = broke    # set by break and return: leave the loop after this iteration
        self.used = False
        self.breaks = False


class ExitLowering:
    """Turn break, continue and return into flags (see the module docstring)."""

    def __init__(self, names, source_map):
        self.names = names
        self.source_map = source_map
        self.returned = None   # flag set by an early return
        self.retval = None     # the value an early return left

    def lower_function(self, node):
        # the first pass to see the whole function: rename its locals that would shadow
        # what generated code reads before any pass builds code around them
        self.names.rename_reserved(node)
        body = node.body
        early = has_early_return(body)
        if early:
            self.returned = self.names.fresh("returned")
            self.retval = self.names.fresh("result")
        body = self.lower_block(body, [])
        if early:
            body = ([S.assign(self.returned, S.const(False)), S.assign(self.retval, S.const(None))]
                    + body + [gast.Return(value=S.name(self.retval))])
        elif not (body and isinstance(body[-1], gast.Return)):
            body = body + [gast.Return(value=S.const(None))]  # falling off the end: None
        node.body = body
        return node

    def lower_block(self, stmts, loops):
        out = []
        for k, s in enumerate(stmts):
            exits = _may_exit(s, bool(loops))  # before lowering rewrites the exits away
            out.extend(self.lower_stmt(s, loops))
            rest = stmts[k + 1:]
            if rest and exits:
                flag = loops[-1].skip if loops else self.returned
                guarded = self.lower_block(rest, loops)
                out.append(copy_location(gast.If(test=S.expr(f"not {flag}"), body=guarded,
                                                   orelse=[]), rest[0]))
                break
        return out

    def lower_stmt(self, s, loops):
        if isinstance(s, gast.Break):
            loops[-1].used = loops[-1].breaks = True
            return [S.assign(loops[-1].skip, S.const(True)),
                    S.assign(loops[-1].broke, S.const(True))]
        if isinstance(s, gast.Continue):
            loops[-1].used = True
            return [S.assign(loops[-1].skip, S.const(True))]
        if isinstance(s, gast.Return):
            if self.returned is None:  # the one final return
                return [s]
            value = s.value if s.value is not None else S.const(None)
            out = [copy_location(S.assign(self.retval, value), s),
                   S.assign(self.returned, S.const(True))]
            for loop in loops:
                loop.used = loop.breaks = True
                out += [S.assign(loop.skip, S.const(True)), S.assign(loop.broke, S.const(True))]
            return out
        if isinstance(s, gast.If):
            s.body = self.lower_block(s.body, loops) or [gast.Pass()]
            s.orelse = self.lower_block(s.orelse, loops)
            return [s]
        if isinstance(s, gast.With):  # a branch always taken (managers.py)
            s.body = self.lower_block(s.body, loops) or [gast.Pass()]
            return [s]
        if isinstance(s, (gast.For, gast.While)):
            loop = _Loop(self.names.fresh("skip"), self.names.fresh("broke"))
            body = self.lower_block(s.body, loops + [loop])
            # the else clause runs when the loop ends without a break (or a return)
            orelse, s.orelse = self.lower_block(s.orelse, loops), []
            if loop.used:
                body = [S.assign(loop.skip, S.const(False))] + body
            s.body = body
            if not loop.breaks:
                return [s] + orelse
            body.append(gast.If(test=S.name(loop.broke), body=[gast.Break()], orelse=[]))
            out = [S.assign(loop.broke, S.const(False)), s]
            if orelse:
                out.append(copy_location(gast.If(test=S.expr(f"not {loop.broke}"), body=orelse,
                                                 orelse=[]), orelse[0]))
            return out
        return [s]


def copy_location(new, old):
    return gast.copy_location(new, old) if hasattr(old, "lineno") else new


def has_early_return(body):
    """Whether a return occurs anywhere but as the body's last top-level statement."""
    for k, s in enumerate(body):
        last = k == len(body) - 1
        if isinstance(s, gast.Return):
            if not last:
                return True
        elif _has_return(s):
            return True
    return False


def _has_return(node):
    """Whether a return statement lies anywhere in ``node`` (an expression holds none,
    so none is walked)."""
    if isinstance(node, gast.Return):
        return True
    return not isinstance(node, gast.expr) and any(_has_return(c) for c in S.children(node))


def _may_exit(s, in_loop):
    """Whether ``s`` may leave the current block early (at this loop level)."""
    if isinstance(s, (gast.For, gast.While)):  # its else clause is in the block's loop
        return _has_return(s) or any(_exits(o, 0, in_loop) for o in s.orelse)
    return _exits(s, 0, in_loop)


def _exits(node, depth, in_loop):
    """Whether ``node``, ``depth`` loops inside the block's, holds an early exit of it."""
    if isinstance(node, gast.Return):
        return True
    if isinstance(node, (gast.Break, gast.Continue)):
        return depth == 0 and in_loop
    if isinstance(node, (gast.For, gast.While)):  # its else clause is at this depth
        return (any(_exits(c, depth + 1, in_loop) for c in node.body)
                or any(_exits(c, depth, in_loop) for c in node.orelse))
    if isinstance(node, (gast.FunctionDef, gast.expr)):  # an expression holds no exit
        return False
    return any(_exits(c, depth, in_loop) for c in S.children(node))
