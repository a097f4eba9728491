"""Realistic programs, as autograd's examples and JAX's tutorials write them: logistic
regression, an MLP over a list of (W, b) tuples, a Gaussian process likelihood, a
mixture of Gaussians with a hand-written logsumexp, an RNN and an LSTM with dict
parameters, convolutions, variational inference with a reparameterised sample,
Euler and RK4 integrators, classification losses, in-place updates in loops, pytree
parameters, ``has_aux`` and TensorFlow-style models holding ``sd.Variable``s.

Each is differentiated compiled (``sd.grad``), on the eager tape and by central finite
differences (``check_grad``, ``check_tree`` for pytree parameters); a handful also as
``@sd.function`` under a tape.  Where autograd is installed, the same source run on
``autograd.numpy`` is a further oracle (finite differences stay the one CI relies on).
What srcdiff refuses of such programs is listed at the end as expected refusals, so
that a change in that boundary shows here.
"""
import collections
import inspect
import textwrap

import numpy as np
import pytest
import scipy.special

import srcdiff as sd
from compiler_programs import check_grad, check_three_ways
from test_compiler_containers import check_tree

R = np.random.default_rng(2024)
X = R.normal(size=(6, 4))
Y01 = (R.random(6) > 0.5).astype(float)
SIGNS = np.where(R.random(6) > 0.5, 1.0, -1.0)


# --- models and losses --------------------------------------------------------------

def logistic_regression(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


def logsumexp_rows(a):
    m = np.max(a, axis=1, keepdims=True)  # the max-subtraction trick
    return m + np.log(np.sum(np.exp(a - m), axis=1, keepdims=True))


def mlp_log_posterior(params, X, T):
    inputs = X
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    logp = outputs - logsumexp_rows(outputs)
    return -np.sum(logp * T) + 0.1 * sum(np.sum(W ** 2) for W, _ in params)


def softmax_cross_entropy(W, X, y):
    logits = X @ W
    logits = logits - np.max(logits, axis=1, keepdims=True)
    logp = logits - np.log(np.sum(np.exp(logits), axis=1))[:, None]
    return -np.mean(logp[np.arange(X.shape[0]), y])


def gp_negative_log_likelihood(params, x, y):
    amplitude, lengthscale, noise = np.exp(params[0]), np.exp(params[1]), np.exp(params[2])
    d = x[:, None] - x[None, :]
    K = amplitude * np.exp(-0.5 * d ** 2 / lengthscale ** 2) + noise * np.eye(len(x))
    _, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * logdet + 0.5 * len(x) * np.log(2 * np.pi)


def gp_cholesky_inverse(params, x, y):
    K = np.exp(params[0]) * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2)
    K = K + np.exp(params[1]) * np.eye(x.shape[0])
    L = np.linalg.cholesky(K)
    return 0.5 * y @ np.linalg.inv(K) @ y + np.sum(np.log(np.diag(L)))


def gmm_negative_log_likelihood(params, data):
    logw = params["logw"] - np.log(np.sum(np.exp(params["logw"])))
    lls = []
    for k in range(params["means"].shape[0]):
        s = np.exp(params["logstd"][k])
        diff = data - params["means"][k]
        lls.append(logw[k] - 0.5 * np.sum(diff ** 2, axis=1) / s ** 2 - data.shape[1] * np.log(s))
    A = np.stack(lls)
    m = np.max(A, axis=0)
    return -np.sum(m + np.log(np.sum(np.exp(A - m), axis=0)))


def rnn(params, inputs):
    h = np.zeros(params["Wh"].shape[0])
    loss = 0.0
    for x in inputs:
        h = np.tanh(params["Wx"] @ x + params["Wh"] @ h + params["b"])
        loss = loss + np.sum(h ** 2)
    return loss


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)


def lstm(params, xs):
    n = params["Wf"].shape[0]
    h, c = np.zeros(n), np.zeros(n)
    outputs = []
    for x in xs:
        hx = np.concatenate([h, x])
        f, i, o = sigmoid(params["Wf"] @ hx), sigmoid(params["Wi"] @ hx), sigmoid(params["Wo"] @ hx)
        c = f * c + i * np.tanh(params["Wg"] @ hx)
        h = o * np.tanh(c)
        outputs.append(h)
    return np.sum(np.stack(outputs) ** 2)


def conv_einsum(w, image):
    k = w.shape[0]
    n = image.shape[0] - k + 1
    patches = np.stack([image[i:i + k, j:j + k] for i in range(n) for j in range(n)])
    return np.sum(np.maximum(np.einsum("pij,ij->p", patches, w), 0.0) ** 2)


def conv_loops(w, image):
    k = w.shape[0]
    n = image.shape[0] - k + 1
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = np.sum(image[i:i + k, j:j + k] * w)
    return np.sum(np.tanh(out))


def variational_objective(params, X, y, eps):
    mean, log_std = params[:4], params[4:]
    w = mean + np.exp(log_std) * eps  # the reparameterised sample
    log_likelihood = -0.5 * np.sum((np.tanh(X @ w) - y) ** 2)
    return -(log_likelihood + np.sum(log_std))


def sampled_inside(params):
    eps = np.random.RandomState(0).randn(5, 2)  # the same draw at every call
    samples = params[:2] + np.exp(params[2:]) * eps
    return np.mean(np.sum(samples ** 2, axis=1))


def vae(params, x, eps):
    h = np.tanh(params["enc"] @ x)
    mu, logvar = h[:2], h[2:]
    z = mu + np.exp(0.5 * logvar) * eps
    kl = -0.5 * np.sum(1 + logvar - mu ** 2 - np.exp(logvar))
    return np.sum((params["dec"] @ z - x) ** 2) + kl


def euler_ode(theta, y0):
    y = y0
    for _ in range(10):
        y = y + 0.1 * np.tanh(theta @ y)
    return np.sum(y ** 2)


def rk4(theta, y0):
    def f(y):
        return -theta * y + np.sin(y)
    y, h = y0, 0.05
    for _ in range(8):
        k1 = f(y)
        k2 = f(y + 0.5 * h * k1)
        k3 = f(y + 0.5 * h * k2)
        k4 = f(y + h * k3)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum(y)


def oscillator(state):
    x, v = state[0], state[1]
    for _ in range(5):
        state = state + 0.1 * np.array([v, -2.0 * x - 0.1 * v])  # a vector of scalars
        x, v = state[0], state[1]
    return x ** 2 + v


def hinge(w, X, y):
    return np.mean(np.maximum(0.0, 1.0 - y * (X @ w))) + 0.1 * np.linalg.norm(w) ** 2


def huber(w, X, y):
    r = X @ w - y
    return np.sum(np.where(np.abs(r) < 1.0, 0.5 * r ** 2, np.abs(r) - 0.5))


def leaky_relu_net(W, X):
    h = X @ W
    return np.sum(np.where(h > 0, h, 0.01 * h) ** 2)


def pairwise_ranking(s, relevance):
    mask = (relevance[:, None] > relevance[None, :]).astype(float)
    return np.sum(mask * np.log1p(np.exp(-(s[:, None] - s[None, :]))))


def attention(Wq, X):
    scores = np.einsum("id,jd->ij", X @ Wq, X @ Wq.T) / np.sqrt(Wq.shape[1])
    a = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.sum((a / a.sum(axis=-1, keepdims=True) @ X) ** 2)


def batch_norm(gamma, X):
    Z = (X - X.mean(axis=0)) / np.sqrt(X.var(axis=0) + 1e-5)
    return np.sum(np.tanh(gamma * Z))


def array_zoo(x):
    a = np.clip(x, -0.5, 0.5)
    b = np.concatenate([a, x ** 2, np.tile(x[:2], 2)])
    m = x[:6].reshape(2, 3).T
    s = np.stack([x, 2 * x], axis=1)
    return (np.sum(b * np.arange(b.shape[0])) + np.sum(np.sin(m) @ m.T) + np.sum(s[::2] * s[1::2])
            + np.linalg.norm(m) + np.linalg.norm(x, ord=1) + np.sum(np.linalg.norm(m, axis=1)))


def in_place_updates(x):
    a = np.zeros(4)
    for i in range(4):
        a[i] += x[i] * x[(i + 1) % 4]
        a[i] += np.sin(x[i])
    return np.sum(a ** 2)


def rows_in_place(W, xs):
    H = np.zeros((len(xs), W.shape[0]))
    h = np.zeros(W.shape[0])
    for t in range(len(xs)):
        h = np.tanh(W @ h + xs[t])
        H[t, :] = h
    return np.sum(H ** 2)


def named_layers(params, x):
    n = len(params) // 2
    for i in range(n):
        x = params[f"W{i}"] @ x + params[f"b{i}"]
        if i < n - 1:
            x = np.maximum(x, 0.0)
    return np.sum(x ** 2)


Layer = collections.namedtuple("Layer", "W b")


def namedtuple_layers(layers, x):
    for layer in layers:
        x = np.tanh(layer.W @ x + layer.b)
    return np.sum(x)


def take_along_labels(logits, y):
    logp = logits - scipy.special.logsumexp(logits, axis=1, keepdims=True)
    return -np.sum(np.take_along_axis(logp, y[:, None], axis=1))


def while_converge(a):
    x, i = np.ones(3), 0
    while i < 10 and np.max(np.abs(x)) < 5.0:
        x = x * a + 0.1
        i += 1
    return np.sum(x)


def method_forms(x):
    M = x.reshape((3, -1))
    return (M.clip(-0.5, 0.5).sum() + M.std() + M.cumsum(axis=1).sum() + M.diagonal().sum()
            + M.cumprod(axis=0).sum() + M.repeat(2, axis=0).take([0, 3], axis=0).sum()
            + M.max(axis=1, keepdims=True).sum() + M.trace() + M.mean(0).dot(M.mean(0)))


def array_edits(x):
    a, b = np.split(x, 2)
    c = np.append(a, 2.0)
    d = np.rot90(np.append(a[None], b[None], axis=0))
    return np.sum(c * np.arange(4)) + np.sum(d * np.arange(6).reshape(3, 2))


def copied_containers(params, xs):
    p = dict(params)  # the caller's dict is not changed
    p["a"] = np.sin(p["a"])
    p["c"] = p["b"] * 2.0
    ys = list(xs)
    ys[0] = ys[0] * 3.0
    rows = list(p["c"][None] * ys[1][:, None])  # an array's rows
    return np.sum(p["a"] * p["c"]) + np.sum(ys[0] * tuple(xs)[1]) + np.sum(rows[1])


def aux_loss(w, X):
    pred = X @ w
    return np.sum(pred ** 2), {"pred": pred, "mean": np.mean(pred)}


def ode_list_reads_before_append(y0):
    ys = [y0]
    for _ in range(3):
        ys.append(ys[-1] + 0.1 * np.sin(ys[-1]))  # ys[-1] read before the next append
    return np.sum(np.stack(ys))


def pseudo_inverse(A):
    return np.sum(np.linalg.pinv(A))


# --- the programs and their arguments --------------------------------------------------

def mlp_params():
    return [(R.normal(size=(4, 5)), R.normal(size=5)), (R.normal(size=(5, 3)), R.normal(size=3))]


ARRAY_PROGRAMS = {
    "logistic regression": (logistic_regression, [R.normal(size=4), X, Y01], 0),
    "softmax cross-entropy, integer labels": (softmax_cross_entropy,
                                              [R.normal(size=(4, 3)), X, R.integers(0, 3, 6)], 0),
    "Gaussian process, slogdet and solve": (gp_negative_log_likelihood,
                                            [R.normal(size=3) * 0.3, np.linspace(0, 2, 5),
                                             R.normal(size=5)], 0),
    "Gaussian process, cholesky and inv": (gp_cholesky_inverse,
                                           [R.normal(size=2) * 0.3, np.linspace(0, 2, 5),
                                            R.normal(size=5)], 0),
    "convolution by einsum over patches": (conv_einsum, [R.normal(size=(3, 3)),
                                                         R.normal(size=(5, 5))], (0, 1)),
    "variational objective": (variational_objective, [R.normal(size=8) * 0.3, X,
                                                      R.normal(size=6), R.normal(size=4)], 0),
    "a sample drawn inside": (sampled_inside, [R.normal(size=4) * 0.3], 0),
    "Euler integrator": (euler_ode, [R.normal(size=(3, 3)) * 0.5, R.normal(size=3)], (0, 1)),
    "RK4 integrator": (rk4, [R.normal(size=3), R.normal(size=3)], (0, 1)),
    "hinge loss": (hinge, [R.normal(size=4), X, SIGNS], 0),
    "Huber loss": (huber, [R.normal(size=4), X, R.normal(size=6)], 0),
    "leaky ReLU by np.where": (leaky_relu_net, [R.normal(size=(4, 3)), X], 0),
    "pairwise ranking loss": (pairwise_ranking, [R.normal(size=5), R.normal(size=5)], 0),
    "self-attention": (attention, [R.normal(size=(4, 4)) * 0.5, X], (0, 1)),
    "batch normalisation": (batch_norm, [R.normal(size=4), X], (0, 1)),
    "clip, concatenate, tile, reshape, stack, norms": (array_zoo, [R.normal(size=8)], 0),
    "scipy logsumexp, take_along_axis": (take_along_labels, [R.normal(size=(5, 3)),
                                                             R.integers(0, 3, 5)], 0),
    "while loop to a threshold": (while_converge, [R.normal(size=3)], 0),
    "array methods": (method_forms, [R.normal(size=9)], 0),
    "an ODE's states read from the list as it grows": (ode_list_reads_before_append,
                                                       [R.normal(size=2)], 0),
    "np.linalg.pinv": (pseudo_inverse, [R.normal(size=(3, 3))], 0),
}

# Programs the eager tape cannot follow as written (a write into an ndarray, np.array
# of Tensors, or scipy's logsumexp on a Tensor: clear TypeErrors there, as in TF).
WRITES_INTO_ARRAYS = {
    "convolution by loops": (conv_loops, [R.normal(size=(3, 3)), R.normal(size=(5, 5))], (0, 1)),
    "a += in a loop": (in_place_updates, [R.normal(size=4)], 0),
    "an RNN's states written as rows": (rows_in_place, [R.normal(size=(3, 3)) * 0.5,
                                                        R.normal(size=(4, 3))], (0, 1)),
    "an oscillator's state as np.array of scalars": (oscillator, [R.normal(size=2)], 0),
    "np.split, np.append, np.rot90": (array_edits, [R.normal(size=6)], 0),
}


@pytest.mark.parametrize("name", ARRAY_PROGRAMS)
def test_compiled_equals_eager_equals_finite_differences(name):
    fn, args, wrt = ARRAY_PROGRAMS[name]
    if name == "scipy logsumexp, take_along_axis":  # scipy's function leaves the tape
        check_grad(fn, args, wrt, eager=False)
    else:
        check_grad(fn, args, wrt)


@pytest.mark.parametrize("name", WRITES_INTO_ARRAYS)
def test_programs_writing_into_arrays_against_finite_differences(name):
    fn, args, wrt = WRITES_INTO_ARRAYS[name]
    check_grad(fn, args, wrt, eager=False)


PYTREE_PROGRAMS = {
    "MLP over a list of (W, b) tuples": (mlp_log_posterior, mlp_params(),
                                         X, np.eye(3)[R.integers(0, 3, 6)]),
    "mixture of Gaussians": (gmm_negative_log_likelihood,
                             {"logw": R.normal(size=3), "means": R.normal(size=(3, 2)),
                              "logstd": R.normal(size=3) * 0.2}, R.normal(size=(7, 2))),
    "RNN with dict parameters": (rnn, {"Wx": R.normal(size=(3, 2)) * 0.5,
                                       "Wh": R.normal(size=(3, 3)) * 0.5, "b": R.normal(size=3)},
                                 [R.normal(size=2) for _ in range(4)]),
    "LSTM": (lstm, {k: R.normal(size=(3, 5)) * 0.5 for k in ("Wf", "Wi", "Wo", "Wg")},
             [R.normal(size=2) for _ in range(3)]),
    "VAE with a reparameterised sample": (vae, {"enc": R.normal(size=(4, 3)) * 0.5,
                                                "dec": R.normal(size=(3, 2))},
                                          R.normal(size=3), R.normal(size=2)),
    "layers named by f-strings": (named_layers, {"W0": R.normal(size=(3, 4)), "b0": R.normal(size=3),
                                                 "W1": R.normal(size=(2, 3)), "b1": R.normal(size=2)},
                                  R.normal(size=4)),
    "namedtuple layers": (namedtuple_layers, [Layer(R.normal(size=(3, 3)), R.normal(size=3)),
                                              Layer(R.normal(size=(2, 3)), R.normal(size=2))],
                          R.normal(size=3)),
    "dict(), list(), tuple() copies": (copied_containers,
                                       {"a": R.normal(size=2), "b": R.normal(size=2)},
                                       [R.normal(size=2), R.normal(size=2)]),
}


@pytest.mark.parametrize("name", PYTREE_PROGRAMS)
def test_pytree_parameters_get_gradients_of_their_structure(name):
    fn, tree, *rest = PYTREE_PROGRAMS[name]
    check_tree(fn, tree, *rest)


@pytest.mark.parametrize("name", ["logistic regression", "Gaussian process, slogdet and solve",
                                  "self-attention", "RK4 integrator"])
def test_as_sd_function_under_a_tape(name):
    fn, args, wrt = ARRAY_PROGRAMS[name]
    check_three_ways(fn, args, wrt)


def test_has_aux_passes_the_pytree_through():
    w = R.normal(size=4)
    (value, aux), g = sd.value_and_grad(aux_loss, has_aux=True)(w, X)
    np.testing.assert_allclose(g, 2 * X.T @ (X @ w), rtol=1e-12)  # analytic
    np.testing.assert_allclose(value, np.sum((X @ w) ** 2), rtol=1e-12)
    np.testing.assert_allclose(aux["pred"], X @ w, rtol=1e-12)
    g2, aux2 = sd.grad(aux_loss, has_aux=True)(w, X)
    np.testing.assert_allclose(g2, g, rtol=1e-12)
    assert set(aux2) == {"pred", "mean"}


# --- TensorFlow style: a model object holding Variables --------------------------------

class Model:
    def __init__(self, rng):
        self.W = sd.Variable(rng.normal(size=(4, 3)), name="W")
        self.b = sd.Variable(np.zeros(3), name="b")

    @sd.function
    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)

    @sd.function
    def loss(self, x, y):
        return sd.reduce_mean((np.tanh(x @ self.W + self.b) - y) ** 2)

    def forward(self, x):
        return np.tanh(x @ self.W + self.b)

    @sd.function
    def loss_by_call(self, x, y):
        return sd.reduce_mean((self(x) - y) ** 2)

    @sd.function
    def loss_by_helper(self, x, y):
        return sd.reduce_mean((self.forward(x) - y) ** 2)


def model_gradients(loss):
    rng = np.random.default_rng(1)
    model = Model(rng)
    x, y = rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    with sd.GradientTape() as tape:
        value = loss(model, x, y)
    return value, tape.gradient(value, [model.W, model.b])


def eager_model_loss(model, x, y):
    return sd.reduce_mean((model.forward(x) - y) ** 2)


@pytest.mark.parametrize("loss", [lambda m, x, y: m.loss(x, y),
                                  lambda m, x, y: sd.reduce_mean((m(x) - y) ** 2)],
                         ids=["compiled method", "compiled __call__ in an eager loss"])
def test_a_model_holding_variables_on_a_tape(loss):
    value, grads = model_gradients(loss)
    want_value, want = model_gradients(eager_model_loss)
    np.testing.assert_allclose(np.asarray(value), np.asarray(want_value), rtol=1e-12)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12)


# --- autograd, where installed: the same source on autograd.numpy ----------------------

AUTOGRAD_PROGRAMS = ["logistic regression", "softmax cross-entropy, integer labels",
                     "Gaussian process, slogdet and solve", "RK4 integrator", "self-attention",
                     "hinge loss", "batch normalisation"]


@pytest.mark.parametrize("name", AUTOGRAD_PROGRAMS)
def test_gradients_equal_autograds(name):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    fn, args, wrt = ARRAY_PROGRAMS[name]
    namespace = {"np": anp}
    exec(textwrap.dedent(inspect.getsource(fn)), namespace)  # the same source, on autograd
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    ours = sd.grad(fn, wrt)(*args)
    ours = ours if isinstance(wrt, tuple) else (ours,)
    for g, i in zip(ours, positions):
        np.testing.assert_allclose(g, autograd.grad(namespace[fn.__name__], i)(*args),
                                   rtol=1e-9, atol=1e-12)


# --- what stays refused: a clear CompileError, never a wrong gradient ----------------

def inner_loss(W, X, y):
    return np.mean((X @ W - y) ** 2)


def hypergradient(lr, W, X, y):
    for _ in range(2):
        W = W - lr * sd.grad(inner_loss)(W, X, y)  # a derivative inside compiled code
    return inner_loss(W, X, y)


def dict_copy_method(params):
    p = params.copy()
    return np.sum(p["a"] * p["b"])


def aliasing_in_place(x):
    y = x
    y += 1.0  # writes into the caller's array through another name
    return np.sum(x * y)


def normal_log_density(x):
    import scipy.stats
    return np.sum(scipy.stats.norm.logpdf(x, 0.5, 2.0))


REFUSED = {
    "sd.grad called inside the function": (hypergradient, [0.1, R.normal(size=4), X,
                                                           R.normal(size=6)]),
    "dict.copy()": (dict_copy_method, [{"a": R.normal(size=2), "b": R.normal(size=2)}]),
    "y = x; y += 1": (aliasing_in_place, [R.normal(size=3)]),
    "scipy.stats.norm.logpdf": (normal_log_density, [R.normal(size=3)]),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_is_refused_is_a_compile_error(name):
    fn, args = REFUSED[name]
    with pytest.raises(sd.CompileError):
        sd.grad(fn)(*args)


@pytest.mark.parametrize("loss", [lambda m, x, y: m.loss_by_call(x, y),
                                  lambda m, x, y: m.loss_by_helper(x, y)],
                         ids=["self(x)", "self.forward(x)"])
def test_a_compiled_method_calling_a_method_that_reads_variables_is_refused(loss):
    with pytest.raises(sd.CompileError, match="not an input"):
        model_gradients(loss)
