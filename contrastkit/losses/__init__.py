"""Contrastive objectives as ``nn.Module`` wrappers over :mod:`.functional`, plus a registry.

>>> from contrastkit import losses
>>> losses.get("ntxent", temperature=0.2)
NTXent()
"""

from . import functional, views
from .alignment import AlignUniform
from .cacr import CACR, CMC
from .infonce import DCL, DCLW, HCL, DualTemperature, FlatNCE, InfoNCE, NTXent, TwoViewContrastive
from .macl import MACL
from .noncontrastive import BarlowTwins, SimSiamLoss, VICReg
from .registry import INPUT_KINDS, LossInfo, available, get, info, register
from .supervised import LASCon, SupCon

__all__ = [
    "CACR",
    "CMC",
    "DCL",
    "DCLW",
    "HCL",
    "INPUT_KINDS",
    "LASCon",
    "MACL",
    "VICReg",
    "AlignUniform",
    "BarlowTwins",
    "DualTemperature",
    "FlatNCE",
    "InfoNCE",
    "LossInfo",
    "NTXent",
    "SimSiamLoss",
    "SupCon",
    "TwoViewContrastive",
    "available",
    "functional",
    "get",
    "info",
    "register",
    "views",
]
