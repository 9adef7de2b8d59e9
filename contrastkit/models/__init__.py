"""Encoders (the backbone registry), projection heads, and encoders exported on their own
(:mod:`.export`)."""

from .backbones import BACKBONES, ImageInput, build_encoder  # noqa: F401
from .encoders import ConvEncoder, mlp  # noqa: F401
from .export import architectures, load_encoder, register_architecture, save_encoder  # noqa: F401
from .multihead import MultiHeadProjector  # noqa: F401
from .resnet import ResNet  # noqa: F401
