"""Layers whose Variables are created on first call, as Keras builds them."""
import numpy as np

from .. import nn
from ..ops.linalg_ops import matmul
from ..tensor import Variable, cast, convert_to_tensor

_ACTIVATIONS = {None: None, "linear": None, "relu": nn.relu, "sigmoid": nn.sigmoid,
                "tanh": nn.tanh, "softmax": nn.softmax, "softplus": nn.softplus}


class Layer:
    def __init__(self, dtype=None):
        self._variables = []
        self.built = False
        self.dtype = np.dtype(dtype or "float32")

    @property
    def variables(self):
        return list(self._variables)

    @property
    def trainable_variables(self):
        return [v for v in self._variables if v.trainable]

    @property
    def weights(self):
        return self.variables

    def add_weight(self, name, value, trainable=True):
        variable = Variable(value, trainable=trainable, name=name)
        self._variables.append(variable)
        return variable

    def __call__(self, inputs):
        inputs = convert_to_tensor(inputs)
        if inputs.dtype.kind == "f" and inputs.dtype != self.dtype:
            inputs = cast(inputs, self.dtype)  # Keras casts float inputs to the layer's dtype
        if not self.built:
            self.build(inputs.shape)
            self.built = True
        return self.call(inputs)


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``, with Glorot-uniform kernel and zero bias."""

    def __init__(self, units, activation=None, use_bias=True, seed=None, dtype=None, **kwargs):
        super().__init__(dtype)
        self.units = int(units)
        self.activation = _ACTIVATIONS[activation] if not callable(activation) else activation
        self.use_bias = use_bias
        self._rng = np.random.default_rng(seed)
        self.kernel = self.bias = None

    def build(self, input_shape):
        fan_in = int(input_shape[-1])
        limit = np.sqrt(6.0 / (fan_in + self.units))
        kernel = self._rng.uniform(-limit, limit, (fan_in, self.units)).astype(self.dtype)
        self.kernel = self.add_weight("kernel", kernel)
        if self.use_bias:
            self.bias = self.add_weight("bias", np.zeros(self.units, self.dtype))

    def call(self, inputs):
        out = matmul(inputs, self.kernel)
        if self.use_bias:
            out = out + self.bias
        return self.activation(out) if self.activation is not None else out
