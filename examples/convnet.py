"""A small convolutional network telling horizontal bars from vertical ones.

Run:  python3 examples/convnet.py

Layers are objects whose ``forward`` method applies them; the parameters are a
list with one tuple per layer (empty for pooling).  The convolution is a sum of
einsums over the kernel's offsets, written with NumPy.
"""
import numpy as np

import _engines
from neural_net import logsumexp


def convolve(images, kernels):
    """'Valid' 2-D cross-correlation: images (n, c_in, h, w), kernels
    (c_out, c_in, kh, kw) -> (n, c_out, h - kh + 1, w - kw + 1)."""
    kh, kw = kernels.shape[2:]
    rows, cols = images.shape[2] - kh + 1, images.shape[3] - kw + 1
    return sum(np.einsum("nchw,oc->nohw", images[:, :, i:i + rows, j:j + cols], kernels[:, :, i, j])
               for i in range(kh) for j in range(kw))


class ConvLayer:
    def __init__(self, kernel_size, filters):
        self.kernel_size, self.filters = kernel_size, filters

    def init(self, shape, rng, scale):
        """Parameters for inputs of ``shape`` (channels, h, w), and the output shape."""
        channels, h, w = shape
        kernels = scale * rng.normal(size=(self.filters, channels, self.kernel_size, self.kernel_size))
        biases = scale * rng.normal(size=(1, self.filters, 1, 1))
        edge = self.kernel_size - 1
        return (kernels, biases), (self.filters, h - edge, w - edge)

    def forward(self, params, inputs):
        kernels, biases = params
        return np.tanh(convolve(inputs, kernels) + biases)


class MaxPoolLayer:
    def __init__(self, size):
        self.size = size

    def init(self, shape, rng, scale):
        channels, h, w = shape
        return (), (channels, h // self.size, w // self.size)

    def forward(self, params, inputs):
        n, c, h, w = inputs.shape
        tiles = inputs.reshape(n, c, h // self.size, self.size, w // self.size, self.size)
        return np.max(np.max(tiles, axis=5), axis=3)


class DenseLayer:
    def __init__(self, size, log_softmax=False):
        self.size, self.log_softmax = size, log_softmax

    def init(self, shape, rng, scale):
        inputs = int(np.prod(shape))
        return (scale * rng.normal(size=(inputs, self.size)), np.zeros(self.size)), (self.size,)

    def forward(self, params, inputs):
        W, b = params
        outputs = np.dot(inputs.reshape(inputs.shape[0], -1), W) + b
        if self.log_softmax:
            return outputs - logsumexp(outputs, axis=1, keepdims=True)
        return np.tanh(outputs)


LAYERS = [ConvLayer(3, 4), MaxPoolLayer(2), DenseLayer(8), DenseLayer(2, log_softmax=True)]


def init_params(layers, shape, rng, scale=0.3):
    params = []
    for layer in layers:
        p, shape = layer.init(shape, rng, scale)
        params.append(p)
    return params


def predict(params, inputs):
    for layer, p in zip(LAYERS, params):
        inputs = layer.forward(p, inputs)
    return inputs


def loss(params, images, labels, l2_reg):
    log_prior = -l2_reg * sum(np.sum(w ** 2) for p in params for w in p)
    log_likelihood = np.sum(predict(params, images) * labels)
    return -(log_prior + log_likelihood) / len(images)


def make_data(rng, count=16, size=8):
    """Noisy images (count, 1, size, size) of one bar, horizontal (class 0) or
    vertical (class 1), with one-hot labels."""
    classes = np.arange(count) % 2
    images = 0.3 * rng.normal(size=(count, 1, size, size))
    for k, (kind, where) in enumerate(zip(classes, rng.integers(1, size - 1, count))):
        if kind == 0:
            images[k, 0, where, :] += 1.0
        else:
            images[k, 0, :, where] += 1.0
    return images, np.eye(2)[classes]


def problem():
    rng = np.random.default_rng(0)
    images, labels = make_data(rng)
    return loss, init_params(LAYERS, (1, 8, 8), rng), (images, labels, 1e-3)


def check():
    """The compiled gradient equals the eager tape's."""
    _engines.check(problem())


if __name__ == "__main__":
    _engines.train(*problem(), steps=30, learning_rate=0.5, report_every=10)
