"""A sentence-transformers loss wrapping any contrastkit two-view loss.

Use it like sentence-transformers' own losses, with (anchor, positive) pair datasets:

    >>> from sentence_transformers import SentenceTransformer  # doctest: +SKIP
    >>> model = SentenceTransformer(path)  # doctest: +SKIP
    >>> loss = ContrastkitLoss(model, "macl", temperature=0.05, alpha=2.0, a0=0.8,
    ...                        reweight=False)  # doctest: +SKIP
    >>> trainer = SentenceTransformerTrainer(model, train_dataset=ds, loss=loss)  # doctest: +SKIP
    >>> trainer.train()  # doctest: +SKIP

The anchors and positives are embedded by the model and passed to
:func:`contrastkit.frameworks.simcse.two_view_loss`: the similarity-level losses get the
cross-view layout (anchor ``i`` vs positive ``i``, the batch's other positives as negatives,
as in sentence-transformers' ``MultipleNegativesRankingLoss``), others ``loss(h1, h2)``.
For unsupervised SimCSE, give each sentence as both anchor and positive.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import Tensor, nn

from ..frameworks.simcse import SimCSE, two_view_loss
from .simcse_trainer import loss_hyperparameters


class ContrastkitLoss(nn.Module):
    """sentence-transformers loss: ``loss(sentence_features, labels)`` over (anchor, positive).

    Args:
        model: the ``SentenceTransformer`` being trained.
        loss: a registry name (built with
            :meth:`SimCSE.make_loss <contrastkit.frameworks.Framework.make_loss>`, so the
            sentence defaults apply) or a ready loss module.
        **loss_kwargs: hyper-parameters when ``loss`` is a name.
    """

    def __init__(
        self, model: nn.Module, loss: str | nn.Module = "infonce", **loss_kwargs: object
    ) -> None:
        super().__init__()
        self.model = model
        if isinstance(loss, str):
            get_dim = getattr(model, "get_embedding_dimension", None) or getattr(
                model, "get_sentence_embedding_dimension", None
            )
            loss = SimCSE.make_loss(loss, loss_kwargs, get_dim() if get_dim else None)
        elif loss_kwargs:
            raise ValueError("loss_kwargs are only accepted with a loss name, not a loss module")
        if not isinstance(loss, nn.Module):
            raise TypeError(
                f"loss must be a registry name or an nn.Module, got {type(loss).__name__}"
            )
        self.loss = loss

    def forward(
        self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None
    ) -> Tensor:
        features = list(sentence_features)
        if len(features) != 2:
            raise ValueError(
                f"ContrastkitLoss needs (anchor, positive) columns, got {len(features)} columns"
            )
        h1, h2 = (self.model(f)["sentence_embedding"] for f in features)
        return two_view_loss(self.loss, h1, h2)

    def get_config_dict(self) -> dict[str, object]:
        """Shown in the model card sentence-transformers writes."""
        return {"loss": type(self.loss).__name__, **loss_hyperparameters(self.loss)}
