"""The functional core: every loss as a pure function of similarities (or costs).

One module per paper family; :mod:`contrastkit.losses` wraps these in ``nn.Module`` classes
that hold the hyper-parameters and build the similarities from raw embeddings.
"""

from ._negatives import DenseNegatives, GramNegatives, Negatives
from .alignment import alignment, uniformity
from .amcl import amcl_barlow_twins, amcl_contrast, amcl_omega, amcl_runaway, amcl_simsiam
from .cacr import cacr, cacr_cosine
from .infonce import dcl, dclw, dual_temperature, flatnce, hcl, info_nce, info_nce_terms
from .macl import macl, macl_temperature
from .modified import barlow_l2, mbarlow, mhe, mhs, mmhe, mmhs, mvicreg, vicreg_l2
from .noncontrastive import barlow_twins, negative_cosine, off_diagonal, vicreg
from .paradigm import arccon, met, mpt, paradigm
from .supervised import label_similarity, lascon, lascon_out_terms, supcon

__all__ = [
    "DenseNegatives",
    "GramNegatives",
    "Negatives",
    "alignment",
    "amcl_barlow_twins",
    "amcl_contrast",
    "amcl_omega",
    "amcl_runaway",
    "amcl_simsiam",
    "arccon",
    "barlow_l2",
    "barlow_twins",
    "cacr",
    "cacr_cosine",
    "dcl",
    "dclw",
    "dual_temperature",
    "flatnce",
    "hcl",
    "info_nce",
    "info_nce_terms",
    "label_similarity",
    "lascon",
    "lascon_out_terms",
    "macl",
    "macl_temperature",
    "mbarlow",
    "met",
    "mhe",
    "mhs",
    "mmhe",
    "mmhs",
    "mpt",
    "mvicreg",
    "negative_cosine",
    "off_diagonal",
    "paradigm",
    "supcon",
    "uniformity",
    "vicreg",
    "vicreg_l2",
]
