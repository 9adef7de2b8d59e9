"""Encoders and projection heads."""

from .encoders import ConvEncoder, build_encoder, mlp  # noqa: F401
from .multihead import MultiHeadProjector  # noqa: F401
