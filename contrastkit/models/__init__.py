"""Encoders and projection heads, and encoders exported on their own (:mod:`.export`)."""

from .encoders import ConvEncoder, build_encoder, mlp  # noqa: F401
from .export import architectures, load_encoder, register_architecture, save_encoder  # noqa: F401
from .multihead import MultiHeadProjector  # noqa: F401
