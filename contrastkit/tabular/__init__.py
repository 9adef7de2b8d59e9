"""The tabular modality: feature vectors ``[N, F]`` with an MLP encoder and noise/mask views.

Importing this package registers the ``tabular`` modality, its export architecture
``mlp`` (:class:`~.encoder.MLPEncoder`) and the ``diabetes`` regression task
(:mod:`.datasets`). Its runs take the shared trainer rule: the label-aware trainer for
regression data.
"""

from ..data import Split, register_dataset
from ..models.export import Architecture
from ..training import Modality, TrainConfig, register_modality
from .augment import TabularAugment
from .datasets import load_diabetes
from .encoder import MLPEncoder, mlp_args


def mlp_encoder(split: Split, config: TrainConfig) -> MLPEncoder:
    """The :class:`MLPEncoder` of ``split``'s rows at the config's widths."""
    return MLPEncoder(split.input_shape[0], config.feature_dim, config.width)


def tabular_views(split: Split, config: TrainConfig) -> TabularAugment:
    """:class:`TabularAugment` at its defaults (the views keep the label)."""
    return TabularAugment()


TABULAR = register_modality(
    Modality(
        "tabular",
        kinds=("tabular",),  # feature vectors [N, F]
        encoder=mlp_encoder,
        augment=tabular_views,
        architectures=(Architecture("mlp", MLPEncoder, mlp_args),),
        description="feature vectors: an MLP encoder, Gaussian noise and feature masking",
    )
)
register_dataset("diabetes", load_diabetes, "tabular", regression=True)

__all__ = ["TABULAR", "MLPEncoder", "TabularAugment", "load_diabetes"]
