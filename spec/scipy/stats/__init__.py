"""``spec.scipy.stats``: JAX's ``jax.scipy.stats`` distributions (one module each)."""

from spec.scipy.stats import bernoulli as bernoulli
from spec.scipy.stats import beta as beta
from spec.scipy.stats import cauchy as cauchy
from spec.scipy.stats import expon as expon
from spec.scipy.stats import gamma as gamma
from spec.scipy.stats import laplace as laplace
from spec.scipy.stats import logistic as logistic
from spec.scipy.stats import norm as norm
from spec.scipy.stats import poisson as poisson
from spec.scipy.stats import t as t
from spec.scipy.stats import uniform as uniform
