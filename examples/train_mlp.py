"""Train a classifier as a TensorFlow user would: Keras layers, Adam, a GradientTape,
and a loss compiled by srcdiff.

Run:  python3 examples/train_mlp.py            (SRCDIFF_EXAMPLE_SMALL=1: a quick run)

Three interleaved spirals of 2-D points, one class each, are separated by two
``sd.keras.layers.Dense`` layers. The loss is plain NumPy in an ``@sd.function``: under
the tape each call is one entry whose backward step is the adjoint srcdiff generated
and cached, so ``tape.gradient`` gives the layers' Variables their gradients and
``sd.keras.optimizers.Adam`` applies them. The script first checks that compiled
gradient against the eager tape's gradient of the same loss computed through the
layers themselves, shows the loss of each epoch with a progress bar, prints the final
accuracy (chance is 1/3), and ends with the adjoint code srcdiff generated.
"""
import os
import sys

import numpy as np

import srcdiff as sd

CLASSES = 3


def spirals(points_per_class, rng):
    """Points ``x`` (float32, n x 2) on three noisy spiral arms and one-hot labels."""
    radius = np.tile(np.linspace(0.05, 1.0, points_per_class), CLASSES)
    arm = np.repeat(np.arange(CLASSES), points_per_class)
    angle = 4.0 * radius + arm * 2 * np.pi / CLASSES + rng.normal(0, 0.15, radius.size)
    x = np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1)
    return x.astype(np.float32), np.eye(CLASSES, dtype=np.float32)[arm]


def cross_entropy(logits, labels):
    """The mean cross-entropy of softmax(logits) against one-hot ``labels``."""
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probabilities = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probabilities, axis=1))


@sd.function
def loss(kernel, bias, out_kernel, out_bias, x, labels):
    """What ``output(hidden(x))`` computes (tanh, then linear), and its cross-entropy."""
    h = np.tanh(x @ kernel + bias)
    return cross_entropy(h @ out_kernel + out_bias, labels)


def progress(epoch, epochs, done, total, value, width=24):
    """One line a terminal redraws as the batches of an epoch go by."""
    filled = width * done // total
    bar = "=" * filled + (">" if filled < width else "") + "." * (width - filled - 1)
    return f"epoch {epoch:3d}/{epochs}  [{bar[:width]}]  loss {value:.4f}"


def main(small=False, seed=0):
    rng = np.random.default_rng(seed)
    x, labels = spirals(60 if small else 150, rng)
    hidden = sd.keras.layers.Dense(32, activation="tanh", seed=seed)
    output = sd.keras.layers.Dense(CLASSES, seed=seed + 1)
    output(hidden(x[:1]))  # build the layers' Variables
    variables = hidden.trainable_variables + output.trainable_variables

    # Both engines, one answer: the compiled loss's gradient under the tape, and the
    # eager tape's through the layers' own calls and sd.nn's cross-entropy.
    with sd.GradientTape() as tape:
        compiled = tape.gradient(loss(*variables, x, labels), variables)
    with sd.GradientTape() as tape:
        eager_loss = sd.reduce_mean(
            sd.nn.softmax_cross_entropy_with_logits(labels, output(hidden(x))))
    eager = tape.gradient(eager_loss, variables)
    assert all(np.allclose(c.numpy(), e.numpy(), rtol=1e-4, atol=1e-6)
               for c, e in zip(compiled, eager))
    print("compiled gradient == tape gradient")

    optimizer = sd.keras.optimizers.Adam(learning_rate=0.02)
    epochs, batch_size = (40 if small else 60), 30
    live = sys.stdout.isatty()
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x))
        batches = range(0, len(x), batch_size)
        total = seen = 0.0
        for k, start in enumerate(batches, 1):
            batch = order[start:start + batch_size]
            with sd.GradientTape() as tape:
                value = loss(*variables, x[batch], labels[batch])
            optimizer.apply_gradients(zip(tape.gradient(value, variables), variables))
            total, seen = total + float(value) * len(batch), seen + len(batch)
            if live:
                print("\r" + progress(epoch, epochs, k, len(batches), total / seen), end="",
                      flush=True)
        line = progress(epoch, epochs, len(batches), len(batches), total / len(x))
        print(("\r" if live else "") + line)

    predicted = np.argmax(output(hidden(x)).numpy(), axis=1)
    accuracy = np.mean(predicted == np.argmax(labels, axis=1))
    print(f"accuracy {accuracy:.3f}  (chance: {1 / CLASSES:.3f})")
    print("\nThe adjoint srcdiff generated for the loss (the gradient of the layers' weights):\n")
    print(sd.adjoint_source(loss, wrt=(0, 1, 2, 3)))
    return accuracy


if __name__ == "__main__":
    main(small=os.environ.get("SRCDIFF_EXAMPLE_SMALL") == "1")
