"""Gaussian process regression: fit the kernel's hyperparameters by maximising
the log marginal likelihood.

Run:  python3 examples/gaussian_process.py

``make_gp_funs`` builds the model's functions as closures over a covariance
function; the objective is a lambda over the data.  The Gaussian log density is
written with ``slogdet`` and ``solve``.
"""
import numpy as np

import _engines


def make_gp_funs(cov_func, num_cov_params):
    """The number of parameters, and predict and log_marginal_likelihood for a
    GP with covariance ``cov_func(cov_params, x, x2)``.  The parameter vector is
    [mean, log noise variance, *cov_params]."""

    def unpack(params):
        mean, log_noise, cov_params = params[0], params[1], params[2:]
        return mean, cov_params, np.exp(log_noise) + 1e-4

    def predict(params, x, y, x_star):
        """Mean and covariance of the latent function at ``x_star``."""
        mean, cov_params, noise = unpack(params)
        k_ss = cov_func(cov_params, x_star, x_star)
        k_xs = cov_func(cov_params, x, x_star)
        k_xx = cov_func(cov_params, x, x) + noise * np.eye(len(y))
        weights = np.linalg.solve(k_xx, k_xs)
        return mean + np.dot(weights.T, y - mean), k_ss - np.dot(weights.T, k_xs)

    def log_marginal_likelihood(params, x, y):
        mean, cov_params, noise = unpack(params)
        k_xx = cov_func(cov_params, x, x) + noise * np.eye(len(y))
        return gaussian_log_density(y, mean * np.ones(len(y)), k_xx)

    return num_cov_params + 2, predict, log_marginal_likelihood


def gaussian_log_density(x, mean, cov):
    """log N(x; mean, cov) for a vector ``x``."""
    residual = x - mean
    _, log_det = np.linalg.slogdet(cov)
    quadratic = np.dot(residual, np.linalg.solve(cov, residual))
    return -0.5 * (quadratic + log_det + len(x) * np.log(2 * np.pi))


def rbf_covariance(kernel_params, x, x2):
    """Squared-exponential kernel with one log lengthscale per input dimension."""
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(x2 / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))


def make_data(rng, n=20):
    """A noisy cosine sampled on two intervals, inputs as an (n, 1) column."""
    x = np.concatenate([np.linspace(0, 3, n // 2), np.linspace(6, 8, n // 2)])
    y = (np.cos(x) + 0.1 * rng.normal(size=n)) / 2
    return ((x - 4) / 2).reshape(n, 1), y


num_params, predict, log_marginal_likelihood = make_gp_funs(rbf_covariance, num_cov_params=2)
X, y = make_data(np.random.default_rng(0))
objective = lambda params: -log_marginal_likelihood(params, X, y)  # noqa: E731


def problem():
    return objective, 0.1 * np.random.default_rng(1).normal(size=num_params), ()


def check():
    """The compiled gradient equals the eager tape's."""
    _engines.check(problem())


if __name__ == "__main__":
    trained = _engines.train(*problem(), steps=100, learning_rate=0.02, report_every=20)
    mean, cov = predict(trained, X, y, np.zeros((1, 1)))
    print(f"prediction at x = 0: {mean[0]:.3f} +- {np.sqrt(cov[0, 0]):.3f}")
