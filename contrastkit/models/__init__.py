"""Encoders (the backbone registry) and projection heads."""

from .backbones import BACKBONES, ImageInput, build_encoder  # noqa: F401
from .encoders import ConvEncoder, mlp  # noqa: F401
from .multihead import MultiHeadProjector  # noqa: F401
from .resnet import ResNet  # noqa: F401
