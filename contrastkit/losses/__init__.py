"""Contrastive objectives as ``nn.Module`` wrappers over :mod:`.functional`, plus a registry.

>>> from contrastkit import losses
>>> losses.get("ntxent", temperature=0.2)
NTXent()
"""

from . import functional, views
from ._fused_settings import FusedSettings
from .alignment import AlignUniform
from .amcl import AMCL
from .amcl_temperature import AdaptiveTemperature
from .cacr import CACR, CMC
from .hparams import Param
from .infonce import DCL, DCLW, HCL, DualTemperature, FlatNCE, InfoNCE, NTXent, TwoViewContrastive
from .macl import MACL
from .multihead_temperature import CosineTemperature, TemperatureAsUncertainty
from .noncontrastive import BarlowTwins, SimSiamLoss, VICReg
from .paradigm import (
    MET,
    MHE,
    MHS,
    MMHE,
    MMHS,
    MPT,
    ArcCon,
    BarlowL2,
    MBarlow,
    MVICReg,
    Paradigm,
    VICRegL2,
)
from .registry import (
    INPUT_KINDS,
    LossInfo,
    available,
    check_args,
    get,
    info,
    info_of,
    register,
    set_check_finite,
)
from .supervised import LASCon, SupCon

__all__ = [
    "AMCL",
    "CACR",
    "CMC",
    "DCL",
    "DCLW",
    "HCL",
    "INPUT_KINDS",
    "MACL",
    "MET",
    "MHE",
    "MHS",
    "MMHE",
    "MMHS",
    "MPT",
    "AdaptiveTemperature",
    "AlignUniform",
    "ArcCon",
    "BarlowL2",
    "BarlowTwins",
    "CosineTemperature",
    "DualTemperature",
    "FlatNCE",
    "FusedSettings",
    "InfoNCE",
    "LASCon",
    "LossInfo",
    "MBarlow",
    "MVICReg",
    "NTXent",
    "Paradigm",
    "Param",
    "SimSiamLoss",
    "SupCon",
    "TemperatureAsUncertainty",
    "TwoViewContrastive",
    "VICReg",
    "VICRegL2",
    "available",
    "check_args",
    "functional",
    "get",
    "info",
    "info_of",
    "register",
    "set_check_finite",
    "views",
]
