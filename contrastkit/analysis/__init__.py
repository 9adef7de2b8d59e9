"""Gradient diagnostics of the unified paradigm (Li, Zhang & Nie, ACL 2024).

* :func:`components` — closed-form GD, W, R of every loss of Tables 1–2;
* :func:`gradient_anatomy` — the implied W and R of any differentiable two-view loss, read
  off autograd;
* :func:`paradigm_maps`, :func:`hardest_share`, :func:`lemma1_min_ratio` — the §3.1
  simulations and Lemma 1.
"""

from .anatomy import Anatomy, gradient_anatomy, summarize, tangent
from .components import NAMES, Components, components, paradigm_gradient
from .simulation import (
    MAP_KEYS,
    angular_components,
    grid,
    hardest_share,
    lemma1_min_ratio,
    paradigm_maps,
    softmax_hardest_share,
)

__all__ = [
    "MAP_KEYS",
    "NAMES",
    "Anatomy",
    "Components",
    "angular_components",
    "components",
    "gradient_anatomy",
    "grid",
    "hardest_share",
    "lemma1_min_ratio",
    "paradigm_gradient",
    "paradigm_maps",
    "softmax_hardest_share",
    "summarize",
    "tangent",
]
