"""The dataset every loader returns: :class:`Split`, a labelled train/test partition."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


@dataclass(frozen=True)
class Split:
    """A labelled dataset with a fixed train/test partition.

    ``x_train [N, C, *spatial]`` (or ``[N, F]`` for tabular data), ``y_train [N]`` (int64
    classes or float32 regression targets), likewise for test. ``kind`` names the data
    kind (``"2d"`` float images, ``"1d"`` signals, ``"image"`` uint8 images ``[N, C, H, W]``
    that stay uint8 until the augmentation or the encoder's input layer converts them,
    ``"tabular"``). Image datasets also carry the training split's per-channel ``mean`` and
    ``std`` (of pixel values scaled to [0, 1]) and may carry ``x_unlabeled`` (STL-10's
    100,000 unlabelled images, memory-mapped, an extra pre-training set). Image sets too
    large to hold (streamed image folders) are :class:`~contrastkit.data.sources.LazyImages`
    instead of tensors: same ``len``, ``shape``, ``x[idx]`` and ``x[a:b]``.
    """

    name: str
    kind: str
    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    x_unlabeled: Tensor | None = None

    @property
    def num_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])
