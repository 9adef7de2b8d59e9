"""The functional core: every loss as a pure function of similarities (or costs).

One module per paper family; :mod:`contrastkit.losses` wraps these in ``nn.Module`` classes
that hold the hyper-parameters and build the similarities from raw embeddings.
"""

from .alignment import alignment, uniformity
from .cacr import cacr
from .infonce import dcl, dclw, dual_temperature, flatnce, hcl, info_nce, info_nce_terms
from .macl import macl, macl_temperature
from .noncontrastive import barlow_twins, negative_cosine, off_diagonal, vicreg
from .supervised import label_similarity, lascon, supcon

__all__ = [
    "alignment",
    "barlow_twins",
    "cacr",
    "dcl",
    "dclw",
    "dual_temperature",
    "flatnce",
    "hcl",
    "info_nce",
    "info_nce_terms",
    "label_similarity",
    "lascon",
    "macl",
    "macl_temperature",
    "negative_cosine",
    "off_diagonal",
    "supcon",
    "uniformity",
    "vicreg",
]
