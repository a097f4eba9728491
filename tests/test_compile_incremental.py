"""The compiler's one-walk and worklist shortcuts (kept for compile time linear in a
function's length) equal the from-scratch computations they replace, on random
programs: liveness (``optimize.unread_after`` against ``live_after``), the guesses of
ranks (``facts._ranks`` against rounds over every name), ``syntax.walk`` against
``gast.walk``, ``loads_and_stores``, and ``copy_node`` with substitutions against
``Substitute``."""
import gast
import numpy as np
import pytest

from srcdiff.compiler import facts as F
from srcdiff.compiler import syntax as S
from srcdiff.compiler.optimize import live_after, statement_kills, unread_after
from srcdiff.compiler import analysis as A
from srcdiff.compiler.analysis import Describer
from srcdiff.compiler.errors import InvariantError
from srcdiff.compiler.forward import definitely_assigned
from srcdiff.compiler.managers import manager_of
from compiler_passes import normalised, source
from util import function_from_text

NAMES = ["a", "b", "c", "d", "e"]


def random_block(rng, depth=0, length=None, lambdas=True):
    """Lines of a random block: assignments, branches, loops, deletes, lambdas (or,
    without ``lambdas``, values made of nothing varied in their place)."""
    lines = []
    for _ in range(length or int(rng.integers(1, 6))):
        kind = rng.integers(0, 10 if depth < 2 else 6)
        target, x, y = rng.choice(NAMES, 3)
        if kind < 4:
            lines.append(f"{target} = np.sin({x}) + {y}")
        elif kind == 4:
            lines.append(f"{target}[0] = {x}")
        elif kind == 5:
            lines.append(f"{target} = lambda u: u * {x}" if lambdas else f"{target} = {x} * 0.0")
        elif kind < 8:
            lines.append(f"if {x} > 0:")
            lines += ["    " + l for l in random_block(rng, depth + 1, lambdas=lambdas)]
            if rng.integers(0, 2):
                lines.append("else:")
                lines += ["    " + l for l in random_block(rng, depth + 1, lambdas=lambdas)]
        else:
            lines.append(f"for {target} in range(2):")
            lines += ["    " + l for l in random_block(rng, depth + 1, lambdas=lambdas)]
    return lines


def random_body(seed):
    rng = np.random.default_rng(seed)
    text = "def f(a, b):\n" + "".join(f"    {l}\n" for l in random_block(rng, length=12))
    return gast.parse(text).body[0].body


@pytest.mark.parametrize("seed", range(40))
def test_unread_after_is_candidates_minus_live_after(seed):
    body = random_body(seed)
    rng = np.random.default_rng(seed + 1000)
    candidates = [set(rng.choice(NAMES, int(rng.integers(0, 4)))) for _ in body]
    live_out = set(rng.choice(NAMES, 2))
    found = unread_after(body, candidates, live_out)
    expected = live_after(body, live_out)
    assert [u for u, _ in found] == [c - live for c, live in zip(candidates, expected)]
    assert [k for _, k in found] == [statement_kills(s) for s in body]


@pytest.mark.parametrize("seed", range(20))
def test_walk_and_name_collectors_match_gast_walk(seed):
    body = random_body(seed)
    for s in body:
        assert [id(n) for n in S.walk(s)] == [id(n) for n in gast.walk(s)]
        if isinstance(s, gast.Assign):
            loads = {n.id for n in gast.walk(s) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, gast.Load)}
            assert S.loads_and_stores(s) == (loads, S.assigned_names([s]))


@pytest.mark.parametrize("seed", range(20))
def test_copy_with_substitutions_is_substitute_of_a_copy(seed):
    body = random_body(seed)
    subs = {"a": "renamed", "c": S.expr("np.cos(z)[1]"), "d": None}
    assert source(S.copy_node(body, subs)) == source(
        [S.Substitute(subs).visit(s) for s in S.copy_node(body)])
    assert source(S.copy_node(body, subs)) != source(body)


def _ranks_by_rounds(by_name, known, unknown, fixed, ints, ops, loads):
    """``facts._ranks`` as first written: each round tries every name not guessed yet."""
    guess = dict(known)
    open_ = {n for n in by_name if n not in fixed and n not in unknown}
    while True:
        found = {n: r for n in open_ - set(guess) for s in by_name[n]
                 if (r := F.rank_of(s.value, ops[id(s)], guess, ints)) is not None}
        if not found:
            break
        guess.update(found)

    def confirmed(s, names):
        within = {n: guess[n] for n in S.loaded_names(s.value) if n in names}
        return F.rank_of(s.value, ops[id(s)], within, ints) == guess[s.targets[0].id]

    kept = F.greatest(set(guess), open_ & set(guess), by_name, {}, confirmed)
    return {n: guess[n] for n in kept}


def random_ranked_function(seed):
    """A function of a vector x, a matrix W and a number s: a chain of values of
    several ranks, some names rebound (to another rank, or under a branch)."""
    rng = np.random.default_rng(seed)
    names, lines = ["x", "W", "s"], []
    forms = ["np.tanh({0})", "{0} + {1}", "np.sum({0})", "{0} @ {1}", "np.outer({0}, {1})",
             "{0}[0]", "{0}[:, None]", "np.zeros_like({0})", "{0} * 2.0"]
    for k in range(int(rng.integers(8, 30))):
        form = forms[int(rng.integers(0, len(forms)))]
        value = form.format(*rng.choice(names, 2))
        target = rng.choice(names[3:]) if len(names) > 3 and rng.random() < 0.3 else f"v{k}"
        line = f"    {target} = {value}"
        if rng.random() < 0.2:
            line = f"    if s > 0:\n    {line}"
        lines.append(line)
        if target not in names:
            names.append(target)
    text = "def f(x, W, s):\n" + "\n".join(lines) + f"\n    return np.sum({names[-1]})\n"
    return function_from_text(text, "f", f"<incremental ranks {seed}>")


def ranks_both_ways(seed, monkeypatch):
    """The Facts of a random function, with the worklist and with rounds."""
    body, parsed = normalised(random_ranked_function(seed))

    def facts():
        return F.gather(body, parsed.params, {"s"}, Describer(parsed.resolve, parsed.source_map),
                        {"x": 1, "W": 2})

    worklist = facts()
    with monkeypatch.context() as m:
        m.setattr(F, "_ranks", _ranks_by_rounds)
        rounds = facts()
    return worklist, rounds


@pytest.mark.parametrize("seed", range(40))
def test_rank_worklist_equals_rounds_over_every_name(seed, monkeypatch):
    worklist, rounds = ranks_both_ways(seed, monkeypatch)
    assert dict(worklist.ranks) == dict(rounds.ranks)
    assert worklist.numbers == rounds.numbers


def test_random_ranked_functions_have_ranks_to_find(monkeypatch):
    # the comparison above means something: most values get a rank
    found = [len(ranks_both_ways(seed, monkeypatch)[0].ranks) for seed in range(5)]
    assert sum(found) > 30


def random_flow_function(seed):
    """A function of two vectors x, w whose values flow through branches, loops (which
    rebind what they read) and writes into arrays: varied here, not there."""
    rng = np.random.default_rng(seed)
    lines = ["a = x * 1.0", "b = w * 1.0", "c = x * 0.0", "d = w + x", "e = w * 2.0"]
    lines += random_block(rng, length=12, lambdas=False)
    text = "def f(x, w):\n" + "".join(f"    {l}\n" for l in lines) + \
        "    return np.sum(a * b + c * d * e)\n"
    return function_from_text(text, "f", f"<incremental flows {seed}>")


def _varied_at_as_first_written(facts, active_params):
    """``analysis._varied_at`` as first written: a frozenset of every varied name before
    each statement."""
    before = {}

    def block(stmts, varied):
        for s in stmts:
            seen = before.get(id(s))
            before[id(s)] = varied if seen is None else seen | varied
            varied = stmt(s, varied)
        return varied

    def stmt(s, varied):
        if isinstance(s, gast.If):
            return block(s.body, varied) | block(s.orelse, varied)
        if isinstance(s, (gast.For, gast.While)):
            bound = {s.target.id} if isinstance(s, gast.For) else set()
            head = varied
            while not (out := block(s.body, head - bound)) <= head:
                head = head | out
            return head
        if not isinstance(s, gast.Assign):
            return varied
        op = facts.ops[id(s)]
        names = frozenset(A.target_names(s.targets[0]))
        reached = op.kind is not A.Kind.NONE and bool(A._dependencies(s, op) & varied)
        if isinstance(s.targets[0], gast.Subscript):
            return varied | names if reached else varied
        return (varied - names) | (names if reached else frozenset())

    block(facts.body, frozenset(active_params))
    return before


def _assigned_as_first_written(facts):
    """``forward.definitely_assigned`` as first written, a frozenset per statement."""
    before = {}

    def walk(stmts, defined):
        for s in stmts:
            before[id(s)] = defined
            if isinstance(s, gast.Assign) and not isinstance(s.targets[0], gast.Subscript):
                defined = defined | set(A.target_names(s.targets[0]))
            elif isinstance(s, gast.If) and manager_of(s):
                defined = walk(s.body, defined)
            elif isinstance(s, gast.If):
                defined = walk(s.body, defined) & walk(s.orelse, defined)
            elif isinstance(s, gast.For):
                walk(s.body, defined | {s.target.id})
            elif isinstance(s, gast.While):
                walk(s.body, defined)
        return defined

    return before, walk(facts.body, frozenset(facts.params))


@pytest.mark.parametrize("seed", range(30))
def test_dataflows_along_one_set_equal_a_copy_per_statement(seed):
    """``adjoint_inputs`` (which keeps, at a plain statement, only the varied names it
    reads) and ``definitely_assigned`` (one set along a straight run) answer as the
    frozenset per statement they replace, for every question asked of them."""
    fn = random_flow_function(seed)
    body, parsed = normalised(fn)
    facts = F.gather(body, parsed.params, set(), Describer(parsed.resolve, parsed.source_map))
    for wrt in (["x"], ["w"], ["x", "w"]):
        active = A.activity(facts, wrt) | set(wrt)
        feeds = A.adjoint_inputs(facts, active, wrt)
        expected = _varied_at_as_first_written(facts, wrt)
        for s in facts.in_order:
            branching = isinstance(s, (gast.If, gast.For, gast.While))
            asked = facts.primal if branching else S.loaded_names(s)
            for name in asked:
                assert feeds(s, name) == (name in active and name in expected[id(s)])
            if not branching and active - asked:
                with pytest.raises(InvariantError):  # a question it did not foresee
                    feeds(s, sorted(active - asked)[0])
    before, end = _assigned_as_first_written(facts)
    found = {}
    assert definitely_assigned(facts, found) == end
    assert found == before


def test_random_flow_functions_vary_and_do_not():
    # the comparison above means something: statements see both answers
    answers = set()
    for seed in range(5):
        body, parsed = normalised(random_flow_function(seed))
        facts = F.gather(body, parsed.params, set(),
                         Describer(parsed.resolve, parsed.source_map))
        feeds = A.adjoint_inputs(facts, facts.primal, ["x"])
        answers |= {feeds(s, n) for s in facts.assigns for n in S.loaded_names(s)}
    assert answers == {True, False}
