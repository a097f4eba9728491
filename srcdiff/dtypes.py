"""TensorFlow's dtype names, as NumPy dtypes."""
import numpy as np

float16 = half = np.dtype("float16")
float32 = np.dtype("float32")
float64 = double = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool = np.dtype("bool")  # noqa: A001  (TensorFlow's name)
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")
string = np.dtype("str")


def as_dtype(dtype):
    return None if dtype is None else np.dtype(dtype)


def is_differentiable(dtype):
    """Only real and complex floating values carry gradients."""
    return np.dtype(dtype).kind in "fc"
