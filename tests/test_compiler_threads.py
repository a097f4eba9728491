"""The compile cache under threads: concurrent first calls of one function, with
``sd.clear_cache()`` running alongside, all succeed with the right gradients
(a compile in another thread is not recursion; a clear does not break a call in flight)."""
import sys
import threading

import numpy as np
import pytest

import srcdiff as sd

X = np.linspace(0.1, 1.0, 5)


def helper(x):
    return np.sin(x) * x


def loss(x):
    return np.sum(helper(x) ** 2)


def dloss(x):
    s = np.sin(x) * x
    return 2 * s * (np.cos(x) * x + np.sin(x))


compiled = sd.function(loss)


@pytest.fixture
def busy_switching():
    """Switch threads as often as possible, so their compiles interleave."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _race(work, threads, clear):
    """Run ``work`` in ``threads`` threads started at once (plus one clearing the
    cache if ``clear``), and return the exceptions they raised."""
    errors = []
    barrier = threading.Barrier(threads + clear)

    def run(task):
        barrier.wait()
        try:
            task()
        except Exception as exc:  # collected: the test asserts there are none
            errors.append(exc)

    def clearer():
        for _ in range(20):
            sd.clear_cache()

    tasks = [work] * threads + [clearer] * clear
    pool = [threading.Thread(target=run, args=(t,)) for t in tasks]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors


@pytest.mark.parametrize("clear", [False, True], ids=["calls", "calls-and-clear"])
def test_concurrent_first_calls(busy_switching, clear):
    results = []

    def work():
        for _ in range(4):
            results.append(sd.grad(loss)(X))
            x = sd.constant(X)
            with sd.GradientTape() as tape:
                tape.watch(x)
                y = compiled(x)
            results.append(tape.gradient(y, x).numpy())

    for _ in range(5):
        sd.clear_cache()
        errors = _race(work, threads=8, clear=clear)
        assert errors == []
    assert len(results) == 5 * 8 * 4 * 2
    for r in results:
        np.testing.assert_allclose(r, dloss(X), rtol=1e-12)


def test_recursion_is_compiled_once_in_each_thread(busy_switching):
    results = []

    def work():  # a compile in another thread is not mistaken for recursion
        results.append(sd.grad(recursive)(2.0))

    sd.clear_cache()
    assert _race(work, threads=4, clear=False) == []
    assert results == [1.0] * 4  # (x / 2) ** 2 at 2.0


def recursive(x):
    if x > 1.0:
        return recursive(x / 2.0)
    return x * x
