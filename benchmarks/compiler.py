"""The compiler against hand-written NumPy: ``sd.value_and_grad`` (compiled once,
then timed on steady-state calls) beside the forward and backward pass an
expert writes by hand, and HIPS autograd on the very same functions.

Workloads (each differentiated with respect to all its parameters but the data):

* ``scalar_loop``: 100 steps of a recurrence on Python floats with ``math``, and the
  same written with ``np.sin``/``np.cos`` (against the same hand-written ``math`` code);
* ``mlp``: a 2-layer tanh network, batch 32, square layers of width 64 to 2048,
  mean squared error, gradients of both weights and biases;
* ``rnn``: a tanh RNN over 50 steps (batch 32, input 32, hidden 64), loss on
  the final state, gradients of W, U and b;
* ``branchy``: 200 steps, each taking one of two branches on the sign of
  ``np.sum(h)`` (both are taken);
* ``overhead``: a cached call of a trivial function on a float, whose
  hand-written equivalent costs next to nothing;
* ``compile``: a fresh compile (``sd.clear_cache()`` first) of a ~30-line function.

Every system's gradients are checked against the hand-written ones before
anything is timed.  Peak memory is ``tracemalloc``'s peak over one forward
and backward pass (NumPy reports its buffers to tracemalloc).
"""
import math
import time
import tracemalloc
import types

import numpy as np

import srcdiff as sd

import peers
from _timing import QUICK, compare

TIME_TARGET = 1.25      # srcdiff / hand-written, each workload
MEMORY_TARGET = 1.2     # peak memory, srcdiff / hand-written
CHAIN = 1e6             # elements of the elementwise chain
BRIDGE_TARGET = 1.3     # @sd.function on a tape / sd.value_and_grad, same function
COMPILE_TARGET = 0.050  # seconds for a fresh compile of a ~30-line function
OVERHEAD_TARGET = 5e-6  # seconds a cached call costs beyond the hand-written code


# --- the functions, written as a user writes them --------------------------------

def scalar_loop(x, a):
    y = x
    for i in range(100):
        y = math.sin(y) * a + math.cos(x * y)
    return y


def scalar_loop_np(x, a):
    """The scalar loop written with NumPy's sin and cos: compiled for Python floats,
    they become math's (compiler/numbers.py)."""
    y = x
    for i in range(100):
        y = np.sin(y) * a + np.cos(x * y)
    return y


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - Y) ** 2)


def rnn(W, U, b, xs, h0):
    h = h0
    for t in range(50):
        h = np.tanh(xs[t] @ W + h @ U + b)
    return np.sum(h ** 2)


def branchy(W, x, h0):
    h = h0
    for t in range(200):
        if np.sum(h) > 0:
            h = np.tanh(W @ h)
        else:
            h = h * 0.5 + x
    return np.sum(h)


def chain(x):
    y = np.sin(x)
    z = np.tanh(y * x + 0.5)
    w = np.exp(-z)
    return np.sum(x - 0.1 * w)


def square(x):
    return x * x


def classifier(W1, b1, W2, b2, X, labels, decay, steps):
    """~30 lines for the compile-time benchmark: layers, a loop, branches, softmax."""
    h = X @ W1 + b1
    h = np.tanh(h)
    for k in range(steps):
        z = h @ W1
        if np.mean(z) > 0:
            h = np.tanh(z) + h
        else:
            h = 0.5 * h
    logits = h @ W2 + b2
    top = np.max(logits, axis=1, keepdims=True)
    shifted = logits - top
    e = np.exp(shifted)
    norm = np.sum(e, axis=1, keepdims=True)
    log_p = shifted - np.log(norm)
    picked = np.sum(log_p * labels, axis=1)
    loss = -np.mean(picked)
    reg = 0.0
    for w in (W1, W2):
        reg = reg + np.sum(w * w)
    loss = loss + decay * reg
    spread = np.std(logits)
    if spread > 10.0:
        loss = loss + 0.01 * (spread - 10.0) ** 2
    bias_size = np.sum(np.abs(b1)) + np.sum(np.abs(b2))
    loss = loss + 1e-4 * bias_size
    scale = np.sqrt(np.mean(h ** 2) + 1e-6)
    loss = loss * (1.0 + 0.0 * scale)
    return loss


# --- the same, by hand: forward saving what the backward pass reads ---------------

def scalar_loop_by_hand(x, a):
    saved = []
    y = x
    for i in range(100):
        s = math.sin(y)
        saved.append((y, s))
        y = s * a + math.cos(x * y)
    dy, dx, da = 1.0, 0.0, 0.0
    for y_in, s in reversed(saved):
        dxy = -dy * math.sin(x * y_in)
        dx += dxy * y_in
        da += dy * s
        dy = dy * a * math.cos(y_in) + dxy * x
    return y, (dx + dy, da)


def mlp_by_hand(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 + b2 - Y
    loss = np.mean(r * r)
    dr = r * (2.0 / r.size)
    dW2 = h.T @ dr
    db2 = dr.sum(axis=0)
    dz = dr @ W2.T
    dz *= 1 - h * h
    dW1 = X.T @ dz
    db1 = dz.sum(axis=0)
    return loss, (dW1, db1, dW2, db2)


def rnn_by_hand(W, U, b, xs, h0):
    hs = [h0]
    for x in xs[:50]:
        hs.append(np.tanh(x @ W + hs[-1] @ U + b))
    h = hs[-1]
    loss = np.sum(h * h)
    dh = 2 * h
    dW, dU, db = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    for t in reversed(range(50)):
        dz = dh * (1 - hs[t + 1] * hs[t + 1])
        dW += xs[t].T @ dz
        dU += hs[t].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ U.T
    return loss, (dW, dU, db)


def branchy_by_hand(W, x, h0):
    taken = []  # per step: (h before, h after) where the tanh branch ran, else None
    h = h0
    for t in range(200):
        if np.sum(h) > 0:
            h_in, h = h, np.tanh(W @ h)
            taken.append((h_in, h))
        else:
            h = h * 0.5 + x
            taken.append(None)
    loss = np.sum(h)
    dh = np.ones_like(h)
    dW, dx = np.zeros_like(W), np.zeros_like(x)
    for step in reversed(taken):
        if step is None:
            dx += dh
            dh = dh * 0.5
        else:
            h_in, h_out = step
            dz = dh * (1 - h_out * h_out)
            dW += np.outer(dz, h_in)
            dh = W.T @ dz
    return loss, (dW, dx)


def chain_by_hand(x):
    """What an expert keeps: z and w for the backward pass, updated in place."""
    y = np.sin(x)
    z = y * x
    z += 0.5
    np.tanh(z, out=z)
    w = np.negative(z)
    np.exp(w, out=w)
    value = np.sum(x) - 0.1 * np.sum(w)
    g = w                   # the adjoint of tanh's argument, in w's buffer
    g *= 0.1
    np.multiply(z, z, out=z)
    np.subtract(1.0, z, out=z)
    g *= z
    del z
    dx = np.cos(x)          # d(y * x)/dx = y + x cos(x), times g, plus 1 from the sum
    dx *= x
    dx += y
    dx *= g
    dx += 1.0
    return value, (dx,)


def square_by_hand(x):
    return x * x, 2 * x


# --- running them -----------------------------------------------------------------

def _workloads():
    """(label, function, wrt, args, hand-written, timing rounds) of each workload."""
    rng = np.random.default_rng(0)

    def mlp_args(width):
        scale = 1 / math.sqrt(width)
        return (rng.normal(0, scale, (width, width)), rng.normal(0, 0.1, width),
                rng.normal(0, scale, (width, width)), rng.normal(0, 0.1, width),
                rng.normal(size=(32, width)), rng.normal(size=(32, width)))

    rnn_args = (rng.normal(0, 1 / math.sqrt(32), (32, 64)), rng.normal(0, 1 / 8, (64, 64)),
                rng.normal(0, 0.1, 64), rng.normal(size=(50, 32, 32)),
                rng.normal(0, 0.5, (32, 64)))
    branchy_args = (rng.normal(0, 1 / 8, (64, 64)), rng.normal(0.05, 0.3, 64),
                    rng.normal(0, 1, 64))
    yield "scalar loop, 100 steps, floats", scalar_loop, (0, 1), (0.5, 0.9), \
        scalar_loop_by_hand, 300
    yield "scalar loop, 100 steps, np.sin/np.cos on floats", scalar_loop_np, (0, 1), \
        (0.5, 0.9), scalar_loop_by_hand, 300
    for width, rounds in ((64, 300), (256, 100), (1024, 40), (2048, 25)):
        yield f"MLP 2 layers, batch 32, width {width}", mlp, (0, 1, 2, 3), mlp_args(width), \
            mlp_by_hand, rounds
    yield "tanh RNN, 50 steps, 32x32 -> 64", rnn, (0, 1, 2), rnn_args, rnn_by_hand, 100
    yield "200 steps with branches, 64", branchy, (0, 1), branchy_args, branchy_by_hand, 100
    yield f"elementwise chain, {CHAIN:.0e} elements", chain, (0,), \
        (np.linspace(-1.0, 1.0, int(CHAIN)),), chain_by_hand, 20


def _srcdiff_on_tape(fn, wrt, decorated):
    """``fn`` run on Tensors under a GradientTape (``math`` read as NumPy, whose
    functions Tensors take), or, ``decorated``, ``@sd.function(fn)`` called under one.
    The arguments at ``wrt`` are Tensors already (made once, as torch's are)."""
    same = sd.function(fn) if decorated else types.FunctionType(
        fn.__code__, {**fn.__globals__, "math": np}, fn.__name__)

    def value_and_grad(*args):
        with sd.GradientTape() as tape:
            tape.watch([args[i] for i in wrt])
            value = same(*args)
        return value, tape.gradient(value, [args[i] for i in wrt])
    return value_and_grad


def _systems(fn, wrt, args, by_hand):
    """(name, call of no arguments or None, reason) of every system, the hand-written first."""
    tensors = [sd.constant(np.asarray(a, np.float64)) if i in wrt else a
               for i, a in enumerate(args)]
    ours = [("hand-written NumPy", by_hand, args),
            ("srcdiff sd.grad", sd.value_and_grad(fn, wrt), args),
            ("srcdiff tape", _srcdiff_on_tape(fn, wrt, False), tensors),
            ("srcdiff @sd.function on tape", _srcdiff_on_tape(fn, wrt, True), tensors)]
    return ([(name, lambda f=f, a=a: f(*a), None) for name, f, a in ours]
            + peers.value_and_grad_systems(fn, wrt, args))


def peak_memory(fn, args):
    """Bytes allocated at the peak of one call, beyond what was allocated before it."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def _same_gradients(name, got, reference):
    for g, r in zip(got, reference):
        if not np.allclose(g, r, rtol=1e-9, atol=1e-12):
            raise AssertionError(f"{name} computes a different gradient than the hand-written code")


def _verdict(ratio, target):
    return f"{'ok' if ratio <= target else 'MISSED'} (<= {target:g}x)"


def _compare_workload(label, fn, wrt, args, by_hand, rounds):
    systems = _systems(fn, wrt, args, by_hand)
    unavailable = [(label, name, None, None, None, f"unavailable: {reason}")
                   for name, call, reason in systems if call is None]
    timed_rows = []
    systems = [(name, call) for name, call, _ in systems if call is not None]
    reference = by_hand(*args)[1]
    for name, call in systems[1:]:
        _same_gradients(name, peers.as_numpy(call())[1], reference)  # also compiles srcdiff's
    timed = compare(systems, rounds=rounds, budget=4.0)
    # tracemalloc sees NumPy's buffers, not those of jax, torch or TensorFlow
    peaks = [None if name in peers.NAMES[1:] else peak_memory(call, ()) for name, call in systems]
    base_time, base_peak = timed[0][1], peaks[0]
    graded = timed[1][2]  # sd.grad's median
    for (name, best, median), peak in zip(timed, peaks):
        note = ""
        if name == "srcdiff @sd.function on tape":
            note = f"{median / graded:.2f}x sd.grad: {_verdict(median / graded, BRIDGE_TARGET)}"
        elif name == "srcdiff sd.grad":
            note = (f"time {_verdict(best / base_time, TIME_TARGET)}, "
                    f"memory {_verdict(peak / base_peak, MEMORY_TARGET)}")
        timed_rows.append((label, name, best, median, peak, note))
    return timed_rows + unavailable


def _overhead_rows(calls=2000):
    """A cached call of a trivial function: srcdiff's cost beyond the arithmetic."""
    srcdiff_square = sd.value_and_grad(square)
    assert srcdiff_square(3.0)[1] == square_by_hand(3.0)[1]

    def loop(fn):
        def run():
            for _ in range(calls):
                fn(3.0)
        return run

    timed = compare([("hand-written", loop(square_by_hand)),
                     ("srcdiff sd.grad", loop(srcdiff_square))], rounds=30)
    (_, hand, hand_median), (_, ours, ours_median) = timed
    extra = ours / calls - hand / calls
    label = "cached call of x * x on a float"
    return [(label, "hand-written NumPy", hand / calls, hand_median / calls, None, ""),
            (label, "srcdiff sd.grad", ours / calls, ours_median / calls, None,
             f"overhead {extra * 1e6:.2f} us: "
             f"{'ok' if extra < OVERHEAD_TARGET else 'MISSED'} (< {OVERHEAD_TARGET * 1e6:g} us)")]


def _compile_rows(repeats=15):
    """A fresh compile of ``classifier`` (about 30 lines) through ``sd.grad``."""
    rng = np.random.default_rng(1)
    args = (rng.normal(0, 0.3, (8, 8)), rng.normal(0, 0.1, 8), rng.normal(0, 0.3, (8, 3)),
            rng.normal(0, 0.1, 3), rng.normal(size=(5, 8)), np.eye(3)[[0, 1, 2, 0, 1]], 1e-3, 3)
    if QUICK["on"]:
        repeats = 2
    fn = sd.value_and_grad(classifier, (0, 1, 2, 3))
    fn(*args)
    steady = min(_seconds(fn, args) for _ in range(repeats))
    fresh = []
    for _ in range(repeats):
        sd.clear_cache()
        fresh.append(_seconds(fn, args) - steady)
    fresh.sort()
    best, median = fresh[0], fresh[len(fresh) // 2]
    verdict = f"{'ok' if best < COMPILE_TARGET else 'MISSED'} (< {COMPILE_TARGET * 1e3:g} ms)"
    return [("compile a 30-line function (fresh)", "srcdiff compile", best, median, None,
             verdict)]


def _seconds(fn, args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def run():
    """Rows of (workload, system, best s, median s, peak bytes, note)."""
    rows = []
    for workload in _workloads():
        rows.extend(_compare_workload(*workload))
    rows.extend(_overhead_rows())
    rows.extend(_compile_rows())
    return rows


if __name__ == "__main__":
    from run import print_table
    print_table(run())
