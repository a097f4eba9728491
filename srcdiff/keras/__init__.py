"""``sd.keras``: the small part of Keras that GradientTape examples use."""
from . import layers, optimizers  # noqa: F401
