"""Fit y = sin(x) with a small tanh network, differentiated by srcdiff's compiler.

Run:  python3 examples/train_mlp.py

The loss is plain NumPy. ``sd.value_and_grad`` compiles its adjoint once and
reuses it every step; the tape (TensorFlow-style) gives the same gradient,
which the script checks before training. At the end it prints the generated
adjoint code.
"""
import numpy as np

import srcdiff as sd


def loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    prediction = h @ W2 + b2
    return np.mean((prediction - y) ** 2)


def main(steps=1500, learning_rate=0.1, seed=0):
    rng = np.random.default_rng(seed)
    x = np.linspace(-3, 3, 64).reshape(-1, 1)
    y = np.sin(x)
    params = [rng.normal(0, 1.0, (1, 32)), np.zeros(32),
              rng.normal(0, 0.2, (32, 1)), np.zeros(1)]
    value_and_grad = sd.value_and_grad(loss, wrt=(0, 1, 2, 3))

    # Both engines, one answer: the compiled adjoint and the eager tape agree.
    _, compiled = value_and_grad(*params, x, y)
    variables = [sd.Variable(p) for p in params]
    with sd.GradientTape() as tape:
        value = loss(*variables, sd.constant(x), sd.constant(y))
    taped = tape.gradient(value, variables)
    assert all(np.allclose(c, t.numpy()) for c, t in zip(compiled, taped))
    print("compiled gradient == tape gradient")

    for step in range(steps + 1):
        value, grads = value_and_grad(*params, x, y)
        params = [p - learning_rate * g for p, g in zip(params, grads)]
        if step % 300 == 0:
            print(f"step {step:5d}   loss {value:.5f}")
    print("\nThe adjoint srcdiff generated for the loss:\n")
    print(sd.adjoint_source(loss, wrt=(0, 1, 2, 3)))
    return value


if __name__ == "__main__":
    main()
