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
from srcdiff.compiler.analysis import Describer
from compiler_passes import normalised, source
from util import function_from_text

NAMES = ["a", "b", "c", "d", "e"]


def random_block(rng, depth=0, length=None):
    """Lines of a random block: assignments, branches, loops, deletes, lambdas."""
    lines = []
    for _ in range(length or int(rng.integers(1, 6))):
        kind = rng.integers(0, 10 if depth < 2 else 6)
        target, x, y = rng.choice(NAMES, 3)
        if kind < 4:
            lines.append(f"{target} = np.sin({x}) + {y}")
        elif kind == 4:
            lines.append(f"{target}[0] = {x}")
        elif kind == 5:
            lines.append(f"{target} = lambda u: u * {x}")
        elif kind < 8:
            lines.append(f"if {x} > 0:")
            lines += ["    " + l for l in random_block(rng, depth + 1)]
            if rng.integers(0, 2):
                lines.append("else:")
                lines += ["    " + l for l in random_block(rng, depth + 1)]
        else:
            lines.append(f"for {target} in range(2):")
            lines += ["    " + l for l in random_block(rng, depth + 1)]
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
