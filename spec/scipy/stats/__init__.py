"""``spec.scipy.stats``: JAX's ``jax.scipy.stats`` distributions (one module each) and sample
statistics."""

from spec._src.scipy.stats._core import mode as mode
from spec._src.scipy.stats._core import rankdata as rankdata
from spec._src.scipy.stats._core import sem as sem
from spec._src.scipy.stats.kde import gaussian_kde as gaussian_kde
from spec.scipy.stats import bernoulli as bernoulli
from spec.scipy.stats import beta as beta
from spec.scipy.stats import betabinom as betabinom
from spec.scipy.stats import binom as binom
from spec.scipy.stats import cauchy as cauchy
from spec.scipy.stats import chi2 as chi2
from spec.scipy.stats import dirichlet as dirichlet
from spec.scipy.stats import expon as expon
from spec.scipy.stats import gamma as gamma
from spec.scipy.stats import gennorm as gennorm
from spec.scipy.stats import geom as geom
from spec.scipy.stats import gumbel_l as gumbel_l
from spec.scipy.stats import gumbel_r as gumbel_r
from spec.scipy.stats import laplace as laplace
from spec.scipy.stats import logistic as logistic
from spec.scipy.stats import multinomial as multinomial
from spec.scipy.stats import multivariate_normal as multivariate_normal
from spec.scipy.stats import nbinom as nbinom
from spec.scipy.stats import norm as norm
from spec.scipy.stats import pareto as pareto
from spec.scipy.stats import poisson as poisson
from spec.scipy.stats import t as t
from spec.scipy.stats import truncnorm as truncnorm
from spec.scipy.stats import uniform as uniform
from spec.scipy.stats import vonmises as vonmises
from spec.scipy.stats import wrapcauchy as wrapcauchy
