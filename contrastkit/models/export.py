"""Encoders saved on their own, to be reused without contrastkit's training code.

An exported encoder is a directory with two files:

* ``encoder.safetensors``: the encoder's ``state_dict`` (weights and batch-norm buffers);
* ``encoder.json``: ``{"format": "contrastkit-encoder", "format_version": 1,
  "architecture": NAME, "args": {...}, ...}`` — the registered architecture and the keyword
  arguments of its constructor, plus where the weights came from.

Architectures are a registry ``name -> (class, describe)``: ``describe(module)`` returns
the constructor arguments that rebuild ``module``; the class is named by its import path
so that it is imported only when an encoder of that architecture is loaded. The backbones
of this package register here (ConvEncoder, ResNet, the image input layer); a modality
declares its own (:attr:`contrastkit.training.Modality.architectures`: the tabular MLP,
GIN and the Davis drug-target encoder), registered with :func:`register_architecture`
when the modality is.

Example:
    >>> import tempfile, torch
    >>> from contrastkit.models import ConvEncoder, load_encoder, save_encoder
    >>> enc = ConvEncoder("1d", (1, 40), feature_dim=16, width=4).eval()
    >>> out = save_encoder(enc, tempfile.mkdtemp() + "/enc")
    >>> x = torch.randn(3, 1, 40)
    >>> torch.equal(load_encoder(out)(x), enc(x))
    True
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._optional import require
from ..rundir import atomic_dir

WEIGHTS = "encoder.safetensors"
SPEC = "encoder.json"
FORMAT = "contrastkit-encoder"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Architecture:
    """One registered encoder architecture.

    Attributes:
        name: the name written into ``encoder.json``.
        target: ``"package.module:Class"`` (imported on first use) or the class itself;
            ``Class(**args)`` builds the encoder.
        describe: ``module -> args``, JSON-serialisable keyword arguments of ``Class``.
        build: ``args -> module`` for classes that are not built as ``Class(**args)``
            (a wrapper whose argument is another encoder); ``None`` = ``Class(**args)``.
    """

    name: str
    target: str | type[nn.Module]
    describe: Callable[[nn.Module], dict[str, Any]]
    build: Callable[[dict[str, Any]], nn.Module] | None = None

    @property
    def path(self) -> str:
        """``"package.module:Class"`` of the target."""
        if isinstance(self.target, str):
            return self.target
        return f"{self.target.__module__}:{self.target.__qualname__}"

    def load_class(self) -> type[nn.Module]:
        """The encoder class (imported here when given by path)."""
        if not isinstance(self.target, str):
            return self.target
        module, _, qualname = self.target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj

    def rebuild(self, args: dict[str, Any]) -> nn.Module:
        """A new, untrained module of this architecture from its ``args``."""
        return self.build(args) if self.build is not None else self.load_class()(**args)


_ARCHITECTURES: dict[str, Architecture] = {}


def register_architecture(
    name: str,
    target: str | type[nn.Module],
    describe: Callable[[nn.Module], dict[str, Any]],
    build: Callable[[dict[str, Any]], nn.Module] | None = None,
) -> None:
    """Register encoder class ``target`` under ``name`` (see :class:`Architecture`)."""
    if name in _ARCHITECTURES:
        raise ValueError(f"an architecture named {name!r} is registered already")
    _ARCHITECTURES[name] = Architecture(name, target, describe, build)


def architectures() -> list[str]:
    """Sorted names of the registered architectures."""
    return sorted(_ARCHITECTURES)


def architecture_of(module: nn.Module) -> Architecture:
    """The registered architecture whose class is exactly ``type(module)``."""
    path = f"{type(module).__module__}:{type(module).__qualname__}"
    for arch in _ARCHITECTURES.values():
        if arch.path == path:
            return arch
    raise ValueError(
        f"encoder class {path} has no registered architecture (registered: "
        f"{', '.join(architectures())}); add one with contrastkit.models.register_architecture"
    )


def _conv_args(module: nn.Module) -> dict[str, Any]:
    return {
        "kind": module.kind,
        "input_shape": list(module.input_shape),
        "feature_dim": module.feature_dim,
        "width": module.features[0].out_channels,
    }


def _resnet_args(module: nn.Module) -> dict[str, Any]:
    return {
        "depth": module.depth,
        "stem": module.stem,
        "width": module.net[0].out_channels,
        "in_channels": module.in_channels,
    }


def _image_args(module: nn.Module) -> dict[str, Any]:
    """An :class:`~.backbones.ImageEncoder`: its input statistics and its backbone's spec."""
    arch = architecture_of(module.backbone)
    return {
        "backbone": {"architecture": arch.name, "args": arch.describe(module.backbone)},
        "mean": module.input.mean.flatten().tolist(),
        "std": module.input.std.flatten().tolist(),
    }


def _build_image(args: dict[str, Any]) -> nn.Module:
    from .backbones import ImageEncoder

    inner = args["backbone"]
    if not isinstance(inner, dict) or inner.get("architecture") not in _ARCHITECTURES:
        raise ValueError(f"image encoder spec names no registered backbone: {inner!r}")
    backbone = _ARCHITECTURES[inner["architecture"]].rebuild(inner["args"])
    return ImageEncoder(backbone, args["mean"], args["std"])


register_architecture("conv", "contrastkit.models.encoders:ConvEncoder", _conv_args)
register_architecture("resnet", "contrastkit.models.resnet:ResNet", _resnet_args)
register_architecture(
    "image", "contrastkit.models.backbones:ImageEncoder", _image_args, build=_build_image
)


def save_encoder(
    encoder: nn.Module, out: str | Path, source: Mapping[str, Any] | None = None
) -> Path:
    """Write ``encoder`` to the new or empty directory ``out``; returns ``out``.

    The files are written into a temporary sibling directory that is renamed to ``out``
    at the end, so an interrupted export leaves nothing half-written. ``source`` (run
    directory, epoch, config, ...) is recorded in ``encoder.json``.
    """
    st = require("safetensors.torch", "train", "exporting an encoder")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {str(out)!r} exists and is not empty; choose a new directory")
    arch = architecture_of(encoder)
    spec = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "architecture": arch.name,
        "args": arch.describe(encoder),
        "source": dict(source or {}),
        "torch_version": torch.__version__.split("+")[0],
    }
    tensors = {k: v.detach().cpu().contiguous() for k, v in encoder.state_dict().items()}
    with atomic_dir(out) as tmp:
        st.save_file(tensors, str(tmp / WEIGHTS), metadata={"format": FORMAT})
        (tmp / SPEC).write_text(json.dumps(spec, indent=2) + "\n")
    return out


def read_spec(path: str | Path) -> dict[str, Any]:
    """The ``encoder.json`` of the exported encoder directory ``path``, checked."""
    root = Path(path)
    if not (root / SPEC).is_file() or not (root / WEIGHTS).is_file():
        raise FileNotFoundError(
            f"{str(root)!r} is not an exported encoder: expected {SPEC} and {WEIGHTS} in it "
            "(written by `contrastkit export`)"
        )
    try:
        spec = json.loads((root / SPEC).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{root / SPEC} is not valid JSON: {exc}") from None
    if not isinstance(spec, dict) or spec.get("format") != FORMAT:
        raise ValueError(f"{root / SPEC} is not a {FORMAT} description")
    if spec.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{root / SPEC} has format_version {spec.get('format_version')!r}; this "
            f"contrastkit reads version {FORMAT_VERSION}"
        )
    if spec.get("architecture") not in _ARCHITECTURES:
        raise ValueError(
            f"{root / SPEC} names the unknown architecture {spec.get('architecture')!r}; "
            f"registered: {', '.join(architectures())}"
        )
    if not isinstance(spec.get("args"), dict):
        raise ValueError(f"{root / SPEC} has no 'args' mapping")
    return spec


def load_encoder(path: str | Path, device: str | torch.device = "cpu") -> nn.Module:
    """The encoder exported to ``path``, rebuilt, loaded, on ``device`` and in eval mode.

    Only tensors are read (safetensors), never pickled objects; every weight of the
    architecture must be in the file and nothing else (``strict`` loading).
    """
    st = require("safetensors.torch", "train", "load_encoder")
    spec = read_spec(path)
    try:
        encoder = _ARCHITECTURES[spec["architecture"]].rebuild(spec["args"])
    except (TypeError, ValueError) as exc:  # args of another version, or hand-edited
        detail = " ".join(str(exc).split())
        raise ValueError(
            f"{Path(path) / SPEC}: its args do not build the encoder: {detail}"
        ) from None
    try:
        state = st.load_file(str(Path(path) / WEIGHTS), device="cpu")
    except Exception as exc:  # safetensors' own error type: a truncated or foreign file
        detail = " ".join(str(exc).split())
        raise ValueError(
            f"{Path(path) / WEIGHTS} is not a readable safetensors file: {detail}"
        ) from None
    try:
        encoder.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        detail = " ".join(str(exc).split())
        raise ValueError(
            f"{Path(path) / WEIGHTS} does not fit its architecture: {detail}"
        ) from None
    return encoder.to(device).eval()
