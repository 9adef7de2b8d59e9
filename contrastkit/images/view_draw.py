"""The random parameters of a training step's image views, drawn on the CPU in one call.

View ``v`` of a step is made by ``views[v]`` (an :class:`~.image_augment.ImageAugment`):
SimCLR's recipe uses one augment for every view, BYOL's two different ones. Each view reads
its uniform numbers in a fixed order (:func:`draw_views`), and all views take them from one
``torch.rand`` call, which reads the generator as one call per view would: the values are
those of separate per-view draws, bit for bit. The arithmetic that turns them into
parameters then runs once on the ``n·B`` rows of all views, with each view's probabilities
as per-row thresholds where the views differ. Views that do not share that arithmetic (one
crops and another does not, different crop scales, jitter strengths or blur kernels) get
``None``, and the caller draws them one by one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from .colour import plan_jitter
from .spatial import blur_kernels, crop_theta
from .view_batch import Drawn, filler

# candidate crops per sample, as torchvision's RandomResizedCrop.get_params tries
CROP_TRIES = 10
# a view's uniform numbers per type, in the order it reads them (crop: the candidates'
# areas, their log aspect ratios, then left and top; jitter: a coin, the four strengths,
# then four sort keys per sample that give its random order)
ROWS = {
    "flip": 1, "crop": 2 * CROP_TRIES + 2, "jitter": 9, "grayscale": 1, "blur": 2, "solarize": 1
}  # fmt: skip
RATIO = (3 / 4, 4 / 3)  # the crop's aspect ratio range (width / height, in pixels)
COLOUR = ("jitter", "grayscale")  # skipped for one-channel images
SHARED = {"crop": ("crop_scale",), "jitter": ("jitter",), "blur": ("kernel_size",)}
OPTIONAL = {"gray": "grayscale", "kernel": "blur", "blur": "blur", "solarize": "solarize"}


def _scale(u: Tensor, low: float, high: float) -> Tensor:
    """Uniform numbers ``u`` in [0, 1) mapped to [low, high)."""
    return u * (high - low) + low


def crop_boxes(u: Tensor, scale_min: float, aspect: float) -> Tensor:
    """Random resized crops ``[B, 4]`` = (left, top, width, height), fractions of an image of
    ``aspect`` = height / width, from uniform numbers ``u [2·T + 2, B]``
    (:data:`CROP_TRIES` = T candidate areas, T log aspect ratios, then left and top).

    torchvision's ``RandomResizedCrop.get_params`` in continuous coordinates: candidate
    ``t`` has area ``s_t ~ U(scale_min, 1)`` of the image and pixel aspect ratio
    ``r_t = exp(U(log 3/4, log 4/3))``, so its sides are ``sqrt(s_t·r_t·H/W)`` of the width
    and ``sqrt(s_t·W/(r_t·H))`` of the height; the first candidate inside the image is
    kept; if none is, the centre crop of the image's own aspect ratio clamped to [3/4, 4/3]
    (all of a square image). torchvision rounds sides and offsets to whole pixels; here
    they stay fractions, resampled bilinearly."""
    tries = (u.shape[0] - 2) // 2
    area = _scale(u[:tries], scale_min, 1.0)
    ratio = torch.exp(_scale(u[tries : 2 * tries], math.log(RATIO[0]), math.log(RATIO[1])))
    w, h = (area * ratio * aspect).sqrt(), (area / (ratio * aspect)).sqrt()
    inside = (w <= 1) & (h <= 1)
    first = inside.to(torch.uint8).argmax(0, keepdim=True)  # the first inside, else 0
    w, h = w.gather(0, first)[0], h.gather(0, first)[0]
    ratio_in = 1 / aspect  # the image's width / height
    fw = min(1.0, RATIO[1] / ratio_in)  # the fallback centre crop's sides
    fh = min(1.0, ratio_in / RATIO[0])
    found = inside.any(0)
    w, h = torch.where(found, w, fw), torch.where(found, h, fh)
    left, top = u[2 * tries], u[2 * tries + 1]
    left = torch.where(found, left * (1 - w), (1 - w) / 2)
    top = torch.where(found, top * (1 - h), (1 - h) / 2)
    return torch.stack([left, top, w, h], 1)


def _rows(aug: Any, color: bool) -> dict[str, int]:
    """The types ``aug`` draws numbers for, with how many rows of ``B`` each."""
    return {t: k for t, k in ROWS.items() if t in aug.types and (color or t not in COLOUR)}


def _joinable(views: Sequence[Any], layouts: Sequence[dict[str, int]]) -> bool:
    """Whether one pass of arithmetic serves all ``views``: crop, flip and jitter in all
    or none of them, and the settings their arithmetic reads (:data:`SHARED`) equal
    among the views that have the type. Grayscale, blur and solarize may be missing from
    some (their columns have a neutral value)."""
    for name in ("flip", "crop", "jitter"):
        if len({name in rows for rows in layouts}) > 1:
            return False
    for name, settings in SHARED.items():
        have = [v for v, rows in zip(views, layouts, strict=True) if name in rows]
        if len({tuple(getattr(v, s) for s in settings) for v in have}) > 1:
            return False
    return True


def draw_views(
    views: Sequence[Any], b: int, g: torch.Generator, color: bool, aspect: float = 1.0
) -> Drawn | None:
    """The parameters of ``len(views)`` views of ``b`` samples (``n·B`` rows, view after
    view) of images of ``aspect`` = height / width, view ``v`` by ``views[v]``, drawn from
    ``g``; ``None`` if the views cannot share one pass (:func:`_joinable`). A view reads its
    uniform numbers in this order: flip; crop (:func:`crop_boxes`: the candidates' areas,
    their log aspect ratios, left, top); jitter (coin, the four strengths, four sort
    keys per sample for its order), grayscale (nothing for these two unless ``color``);
    blur (σ, coin); solarize. The jitter's plan is made here, where its random order lies,
    so its row sets are known without reading the device."""
    n, layouts = len(views), [_rows(v, color) for v in views]
    if not _joinable(views, layouts):
        return None
    sizes = [sum(rows.values()) for rows in layouts]
    u = torch.rand(b * sum(sizes), generator=g).split([k * b for k in sizes])
    blocks: list[dict[str, Tensor]] = []  # per view: type -> its [rows, B] numbers
    for v, rows in enumerate(layouts):
        block, at = u[v].view(-1, b), 0
        blocks.append({})
        for name, k in rows.items():
            blocks[v][name], at = block[at : at + k], at + k
    part: dict[str, tuple[Tensor, ...]] = {}  # type -> its rows over the views that have it
    have: dict[str, list[int]] = {}
    keys = None
    for name in ROWS:
        have[name] = [v for v in range(n) if name in blocks[v]]
        if name == "jitter" and have[name]:  # the four sort keys: [B, 4] per view
            keys = torch.cat([blocks[v][name][5:].reshape(b, 4) for v in have[name]])
        rows = [blocks[v][name][:5] if name == "jitter" else blocks[v][name] for v in have[name]]
        part[name] = torch.cat(rows, 1).unbind(0) if rows else ()
    first = {name: views[vs[0]] for name, vs in have.items() if vs}

    def per_row(name: str, attr: str) -> float | Tensor:
        """``attr`` of the views with type ``name``: one number, or one per row."""
        values = [getattr(views[v], attr) for v in have[name]]
        if len(set(values)) == 1:
            return values[0]
        return torch.tensor(values, dtype=torch.float32).repeat_interleave(b)

    cols: dict[str, Tensor] = {}
    flip = part["flip"][0] < 0.5 if part["flip"] else None
    if part["crop"]:
        box = crop_boxes(torch.stack(part["crop"]), first["crop"].crop_scale, aspect)
        cols["theta"] = crop_theta(box, flip)
    elif flip is not None:
        cols["flip"] = flip.float()
    plan = None
    if part["jitter"]:
        coin, u_bri, u_con, u_sat, u_hue = part["jitter"]
        bri, con, sat, hue = first["jitter"].jitter
        factors = torch.stack(
            [_scale(u_bri, 1 - bri, 1 + bri), _scale(u_con, 1 - con, 1 + con),
             _scale(u_sat, 1 - sat, 1 + sat), _scale(u_hue, -hue, hue)], 1
        )  # fmt: skip
        plan = plan_jitter(coin < per_row("jitter", "p_jitter"), factors, keys.argsort(1))
        cols["coef"], cols["hue"] = plan.coef, plan.hue.float()
    if part["grayscale"]:
        cols["gray"] = (part["grayscale"][0] < per_row("grayscale", "p_gray")).float()
    if part["blur"]:
        sigma = _scale(part["blur"][0], 0.1, 2.0)
        cols["kernel"] = blur_kernels(sigma, first["blur"].kernel_size)
        cols["blur"] = (part["blur"][1] < per_row("blur", "p_blur")).float()
    if part["solarize"]:
        cols["solarize"] = (part["solarize"][0] < per_row("solarize", "solarize_p")).float()
    for name, kind in OPTIONAL.items():  # views without grayscale, blur or solarize
        if name in cols and len(have[kind]) < n:
            cols[name] = _spread(cols[name], name, have[kind], n, b)
    return Drawn(cols) if plan is None else Drawn(cols, plan.hue_rows, plan.blends)


def _spread(col: Tensor, name: str, have: list[int], n: int, b: int) -> Tensor:
    """Column ``name`` of the views ``have`` (``B`` rows each, in order) over all ``n``
    views, the others given its neutral value (:func:`~.view_batch.filler`)."""
    pieces = dict(zip(have, col.split(b), strict=True))
    neutral = filler(name, col, b)
    return torch.cat([pieces.get(v, neutral) for v in range(n)])
