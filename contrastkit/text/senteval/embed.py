"""Sentence embeddings for SentEval tasks from any local encoder, cached on disk.

:func:`resolve_model` accepts a Hugging Face model folder, a sentence-transformers model
folder, or a contrastkit SimCSE run directory (its ``best/`` model). A
sentence-transformers model that declares a ``Normalize`` module gets L2-normalised
embeddings, as ``SentenceTransformer.encode`` returns them (this matters for the
transfer classifiers, not for cosine-based STS).

:class:`CachedEmbedder` stores one ``.npy`` file per (model, task, sentence list) under
``cache_dir/<model key>/``: the model key hashes the resolved path, the pooling,
maximum length, normalisation and the size and modification time of the weight files;
the file name hashes the task's sentences. A second evaluation of the same model loads
the arrays instead of encoding (``np.load(allow_pickle=False)``, nothing is unpickled).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ...engine import PRECISIONS, Engine, select_device

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def resolve_model(path: str | os.PathLike[str]) -> Path:
    """The model folder behind ``path`` (a model folder, or a SimCSE run's ``best/``)."""
    root = Path(path)
    for candidate in (root, root / "best"):
        if (candidate / "config.json").is_file():
            return candidate
    raise FileNotFoundError(
        f"--model {str(root)!r}: expected a model folder with config.json, "
        "or a contrastkit SimCSE run directory with best/config.json"
    )


def model_key(root: Path, settings: dict[str, object]) -> str:
    """A hash naming the model's cache folder (path, settings, weight file stats)."""
    stats = {
        name: [(root / name).stat().st_size, (root / name).stat().st_mtime_ns]
        for name in WEIGHT_FILES
        if (root / name).is_file()
    }
    blob = json.dumps({"path": str(root.resolve()), **settings, "weights": stats}, sort_keys=True)
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()[:16]


def sentences_key(sentences: list[str]) -> str:
    """A hash of the sentence list (order and content)."""
    digest = hashlib.sha1()
    for s in sentences:
        digest.update(s.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


class CachedEmbedder:
    """``embed(task, sentences) -> [N, d] float32`` with a per-task disk cache.

    Args:
        encode: maps a list of sentences to a ``[N, d]`` array.
        cache_dir: folder of this model's cache files; ``None`` disables caching.
    """

    def __init__(self, encode: Callable[[list[str]], np.ndarray], cache_dir: Path | None) -> None:
        self.encode = encode
        self.cache_dir = cache_dir
        self.encoded = 0  # sentences actually encoded (not loaded from the cache)

    def __call__(self, task: str, sentences: list[str]) -> np.ndarray:
        path = None
        if self.cache_dir is not None:
            path = self.cache_dir / f"{task}-{sentences_key(sentences)}.npy"
            if path.is_file():
                cached = np.load(path, allow_pickle=False)
                if cached.shape[0] == len(sentences):
                    return cached
        emb = np.asarray(self.encode(sentences), dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != len(sentences):
            raise ValueError(f"encoder returned shape {emb.shape} for {len(sentences)} sentences")
        self.encoded += len(sentences)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}.npy")
            np.save(tmp, emb)
            os.replace(tmp, path)
        return emb


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/contrastkit/senteval`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contrastkit" / "senteval"


def encoder_embedder(
    model: str | os.PathLike[str],
    device: str = "auto",
    batch_size: int = 128,
    pooling: str | None = None,
    max_length: int | None = None,
    cache_dir: Path | None = None,
    precision: str = "fp32",
) -> tuple[CachedEmbedder, dict[str, object]]:
    """A :class:`CachedEmbedder` over :class:`SentenceEncoder` and a description of it.

    The encoder is loaded lazily, at the first sentence that is not cached. ``precision``
    ``bf16``/``fp16`` runs the forward pass under the engine's autocast (embeddings are
    returned in float32); it is part of the cache key, so a half-precision evaluation never
    reads float32 embeddings or the reverse.
    """
    from ..encoder import SentenceEncoder, declares_normalize, sentence_transformers_settings

    root = resolve_model(model)
    if batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {batch_size}")
    if precision not in PRECISIONS:
        raise ValueError(f"--precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    dev = select_device(device)
    normalize = declares_normalize(root)
    st_pooling, st_max = sentence_transformers_settings(root)
    settings: dict[str, object] = {
        "pooling": pooling or st_pooling or "cls",
        "max_length": max_length or st_max,
        "normalize": normalize,
    }
    if precision != "fp32":  # fp32 keys stay those of caches written before the option
        settings["precision"] = precision
    autocast = Engine(device=dev, precision=precision).autocast
    loaded: list[SentenceEncoder] = []

    def encode(sentences: list[str]) -> np.ndarray:
        if not loaded:
            enc = SentenceEncoder.from_pretrained(root, pooling=pooling, max_length=max_length)
            loaded.append(enc.to(dev))
        with autocast():
            emb = loaded[0].encode(sentences, batch_size=batch_size)
        if normalize:
            emb = torch.nn.functional.normalize(emb, dim=-1)
        return emb.numpy()

    folder = cache_dir / model_key(root, settings) if cache_dir is not None else None
    info = {"model": str(root), "device": str(dev), "batch_size": batch_size, **settings}
    info["precision"] = precision
    return CachedEmbedder(encode, folder), info
