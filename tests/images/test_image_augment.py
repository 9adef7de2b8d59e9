"""SimCLR image augmentations: each op against an independent reference on fixed inputs."""

from __future__ import annotations

import colorsys

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

from contrastkit.data import Split
from contrastkit.engine.kernels import BlockingTransfers, KernelCounter
from contrastkit.images import build_augment
from contrastkit.images.colour import gray, plan_jitter, solarize
from contrastkit.images.image_augment import ImageAugment, check_jitter, view_augments
from contrastkit.images.spatial import blur_kernels, crop_theta, gaussian_blur, resized_crop
from contrastkit.images.view_draw import crop_boxes
from contrastkit.training import TrainConfig


def _img(b: int = 3, side: int = 12, seed: int = 0) -> torch.Tensor:
    return torch.rand(b, 3, side, side, generator=torch.Generator().manual_seed(seed))


def test_resized_crop_matches_pillow_bilinear() -> None:
    x = _img(2, 16).double()
    boxes = torch.tensor([[0.25, 0.125, 0.5, 0.625], [0.0, 0.5, 0.75, 0.5]], dtype=torch.float64)
    out = resized_crop(x, boxes)
    for i in range(2):
        left, top, w, h = (boxes[i] * 16).tolist()
        for c in range(3):
            img = Image.fromarray(x[i, c].numpy().astype(np.float32), mode="F")
            ref = img.resize((16, 16), Image.BILINEAR, box=(left, top, left + w, top + h))
            assert np.allclose(out[i, c].numpy(), np.asarray(ref), atol=1e-5)


def test_full_box_with_flip_is_a_mirror() -> None:
    x = _img()
    full = torch.tensor([[0.0, 0.0, 1.0, 1.0]] * 3)
    out = resized_crop(x, full, torch.tensor([True, False, True]))
    assert torch.allclose(out[0], x[0].flip(-1), atol=1e-6)
    assert torch.allclose(out[1], x[1], atol=1e-6)


def test_grayscale_matches_pillow_L() -> None:
    x = torch.randint(0, 256, (1, 3, 6, 6), dtype=torch.uint8)
    ref = np.asarray(Image.fromarray(x[0].permute(1, 2, 0).numpy()).convert("L"), dtype=float)
    assert np.abs(gray(x.double())[0, 0].numpy() - ref).max() <= 1.0  # Pillow rounds


def test_blur_matches_a_loop_with_reflect_padding() -> None:
    x = _img(2, 9).double()
    sigma = torch.tensor([0.6, 1.7], dtype=torch.float64)
    out = gaussian_blur(x, sigma, 5)
    for i in range(2):
        t = np.arange(-2, 3)
        k1 = np.exp(-0.5 * (t / float(sigma[i])) ** 2)
        k2 = np.outer(k1, k1) / np.outer(k1, k1).sum()
        for c in range(3):
            p = np.pad(x[i, c].numpy(), 2, mode="reflect")
            ref = np.array(
                [[(p[r : r + 5, q : q + 5] * k2).sum() for q in range(9)] for r in range(9)]
            )
            assert np.allclose(out[i, c].numpy(), ref)


def test_pipeline_is_reproducible_per_sample_and_in_range() -> None:
    x = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    aug = ImageAugment(32)
    assert set(aug.types) == {"crop", "jitter", "flip", "grayscale"} and aug.crop_scale == 0.2
    a = aug(x, torch.Generator().manual_seed(1))
    b = aug(x, torch.Generator().manual_seed(1))
    c = aug(x, torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.dtype == torch.float32 and float(a.min()) >= 0.0 and float(a.max()) <= 1.0
    same = aug(x[:1].expand(8, -1, -1, -1), torch.Generator().manual_seed(3))
    assert not torch.allclose(same[0], same[1])  # per-sample parameters
    assert (
        "blur" in ImageAugment(96).types
        and "blur" not in aug.types
        and ImageAugment(96).crop_scale == 0.08
    )
    assert ImageAugment(32, n_types=3).types == ("crop", "blur", "grayscale")  # AMCL order


def test_solarize_and_errors() -> None:
    x = torch.tensor([0.2, 0.5, 0.9]).view(1, 1, 1, 3).expand(4, 3, 1, 3).contiguous()
    out = ImageAugment(32, types=["solarize"], solarize_p=1.0)(x, torch.Generator())
    assert torch.allclose(out[0, 0, 0], torch.tensor([0.2, 0.5, 0.1]))
    with pytest.raises(ValueError, match="n_types must be an int in"):
        ImageAugment(32, n_types=6)
    with pytest.raises(ValueError, match=r"x must have shape \[B, C, H, W\]"):
        ImageAugment(32)(torch.zeros(3, 4, 4), torch.Generator())


def test_build_augment_picks_by_kind() -> None:
    y = torch.zeros(4, dtype=torch.long)
    img = Split("s", "image", torch.zeros(4, 1, 28, 28, dtype=torch.uint8), y, torch.zeros(
        4, 1, 28, 28, dtype=torch.uint8), y)  # fmt: skip
    aug = build_augment(img, crop_scale=0.5)
    assert isinstance(aug, ImageAugment) and aug.crop_scale == 0.5
    out = aug(img.x_train, torch.Generator().manual_seed(0))  # one channel: colour ops skipped
    assert out.shape == (4, 1, 28, 28)


def test_solarize_matches_pillow_imageops() -> None:
    x = torch.randint(0, 256, (3, 3, 7, 7), dtype=torch.uint8, generator=torch.Generator())
    x[0, 0, 0, :4] = torch.tensor([127, 128, 0, 255], dtype=torch.uint8)  # the threshold
    out = solarize(x.double() / 255, torch.tensor([True, False, True]))
    for i, applied in enumerate((True, False, True)):
        img = Image.fromarray(x[i].permute(1, 2, 0).numpy())
        ref = np.asarray(ImageOps.solarize(img, threshold=128) if applied else img)
        assert np.allclose(out[i].permute(1, 2, 0).numpy() * 255, ref, atol=1e-9)


def test_byol_recipe_is_table_6s_asymmetric_pair() -> None:
    one, two = view_augments("byol", 96)
    for view in (one, two):
        assert view.jitter == (0.4, 0.4, 0.2, 0.1) and view.p_jitter == 0.8
        assert view.p_gray == 0.2 and view.crop_scale == 0.08 and "flip" in view.types
    assert (one.p_blur, two.p_blur) == (1.0, 0.1)
    assert "solarize" not in one.types and ("solarize" in two.types and two.solarize_p == 0.2)
    assert one.kernel_size == 9  # 10 % of 96 px, odd (BYOL: 23 px at 224)
    # the probabilities act: blur on every view-1 sample (σ ~ U(0.1, 2) px; below ≈ 0.3 px
    # the kernel is a delta, so ≈ 10 % look unchanged), on about 1 in 10 of view 2's,
    # solarisation on about 1 in 5 of view 2's
    x = torch.randint(0, 256, (200, 3, 16, 16), dtype=torch.uint8, generator=torch.Generator())
    for op, p, low, high in (("blur", one.p_blur, 160, 200), ("blur", two.p_blur, 1, 40),
                             ("solarize", two.solarize_p, 20, 60)):  # fmt: skip
        aug = ImageAugment(16, types=[op], p_blur=p, solarize_p=p)
        changed = (aug(x, torch.Generator().manual_seed(0)) - x / 255).abs().flatten(1).amax(1)
        assert low <= int((changed > 1e-6).sum()) <= high, (op, p)
    [simclr] = view_augments("simclr", 32)
    assert simclr.types == ImageAugment(32).types
    # below 64 px no blur on either view, as the simclr recipe (solo-learn's CIFAR pair)
    small = view_augments("byol", 32)
    assert all("blur" not in v.types for v in small) and "solarize" in small[1].types
    with pytest.raises(ValueError, match="leave it unset for byol"):
        view_augments("byol", 96, n_types=3)
    with pytest.raises(ValueError, match="aug_recipe must be one of simclr, byol"):
        view_augments("moco", 96)


@pytest.mark.parametrize("recipe", ["simclr", "byol"])
def test_every_view_is_per_sample_so_other_rows_do_not_matter(recipe: str) -> None:
    """Rows outside a rank's slice may be zeros (sources.iter_batches ``keep``): the views
    of the kept rows must not depend on them."""
    x = torch.randint(0, 256, (6, 3, 64, 64), dtype=torch.uint8, generator=torch.Generator())
    zeroed = x.clone()
    zeroed[:3] = 0
    for aug in view_augments(recipe, 64):
        full = aug(x, torch.Generator().manual_seed(5))
        part = aug(zeroed, torch.Generator().manual_seed(5))
        assert torch.equal(full[3:], part[3:])


@pytest.mark.parametrize("hue", [0.1, 0.4])
def test_hue_strength_bounds_the_hue_shift(hue: float) -> None:
    # saturated single-colour images: every pixel's hue moves by the sample's shift
    g = torch.Generator().manual_seed(0)
    base = torch.tensor([1.0, 0.2, 0.0])[None, :, None, None].expand(256, 3, 4, 4).contiguous()
    aug = ImageAugment(32, types=["jitter"], jitter=(0, 0, 0, hue), p_jitter=1.0)
    before = colorsys.rgb_to_hsv(1.0, 0.2, 0.0)[0]
    after = [colorsys.rgb_to_hsv(*p.tolist())[0] for p in aug(base, g)[:, :, 0, 0]]
    shift = torch.tensor([(h - before + 0.5) % 1.0 - 0.5 for h in after])  # signed, in turns
    assert shift.abs().max() <= hue + 1e-5
    assert shift.abs().max() > 0.9 * hue  # 256 draws of U(-hue, hue) reach near the bound


def test_jitter_strengths_are_checked_and_refused_on_small_data() -> None:
    assert check_jitter([0.4, 0.4, 0.4, 0.4]) == (0.4, 0.4, 0.4, 0.4)
    for bad in ([0.4, 0.4, 0.4], [0.4, 0.4, 0.4, 0.6], [1.5, 0, 0, 0], [-0.1, 0, 0, 0], 0.4):
        with pytest.raises(ValueError, match="jitter must be four numbers"):
            check_jitter(bad)
    with pytest.raises(ValueError, match="jitter must be four numbers"):
        TrainConfig(dataset="mnist1d", jitter=[0.4, 0.4, 0.4, 0.9])
    with pytest.raises(ValueError, match="p_jitter must be in"):
        TrainConfig(dataset="mnist1d", p_jitter=1.5)
    y = torch.zeros(4, dtype=torch.long)
    small = Split("s", "2d", torch.zeros(4, 1, 8, 8), y, torch.zeros(4, 1, 8, 8), y)
    with pytest.raises(ValueError, match="jitter applies to image datasets"):
        build_augment(small, jitter=(0.4, 0.4, 0.4, 0.4))
    with pytest.raises(ValueError, match="p_jitter applies to image datasets"):
        build_augment(small, p_jitter=1.0)
    assert view_augments("byol", 32, jitter=(0.1, 0.2, 0.3, 0.4))[1].jitter == (0.1, 0.2, 0.3, 0.4)


@pytest.mark.parametrize("recipe,side", [("simclr", 32), ("simclr", 96), ("byol", 64)])
def test_views_neither_read_the_device_nor_wait_for_it(recipe: str, side: int) -> None:
    """On a GPU a host read of a device value, or a blocking host-to-device copy, stalls
    the step until the queued work is done (issue #38). On the "meta" device every read
    raises, and :class:`BlockingTransfers` lists the blocking copies: after the first call
    (which makes the per-device constants) the recipe makes none (its random parameters
    are drawn on the CPU and copied over without blocking)."""
    batch = torch.empty(6, 3, side, side, dtype=torch.uint8, device="meta")
    augs = view_augments(recipe, side)
    ImageAugment.batched_views(augs, batch, torch.Generator().manual_seed(0), 2)
    with BlockingTransfers() as transfers:
        out = ImageAugment.batched_views(augs, batch, torch.Generator().manual_seed(1), 2)
    assert transfers.found == []
    assert all(v.device.type == "meta" and v.shape == (6, 3, side, side) for v in out)


# device kernels of the two views of a batch (issue #38): 316 (simclr) and 661 (byol)
# before the colour jitter became four batched steps and the views of BYOL one pass
VIEW_KERNELS = {("simclr", 32): 125, ("byol", 64): 136}


@pytest.mark.parametrize("recipe,side", sorted(VIEW_KERNELS))
def test_views_launch_at_most_the_pinned_kernels(recipe: str, side: int) -> None:
    """Views of small images on a GPU cost launches, not arithmetic: the kernels that act
    on the batch's device (here "meta"; the CPU-side drawing of parameters is not counted)
    stay under the ceiling, whatever the batch size."""
    augs = view_augments(recipe, side)
    for b in (8, 64):
        batch = torch.empty(b, 3, side, side, dtype=torch.uint8, device="meta")
        ImageAugment.batched_views(augs, batch, torch.Generator().manual_seed(0), 2)
        with KernelCounter("meta") as counter:
            ImageAugment.batched_views(augs, batch, torch.Generator().manual_seed(1), 2)
        assert counter.kernels <= VIEW_KERNELS[recipe, side], counter.counts


@pytest.mark.parametrize(
    "recipe,side,channels", [("simclr", 32, 3), ("byol", 64, 3), ("simclr", 28, 1)]
)
def test_views_in_one_pass_equal_one_call_per_view(recipe: str, side: int, channels: int) -> None:
    """``views(x, g, n)`` (the training loop's one pass over all views) gives bit for bit
    the ``n`` results of ``n`` calls, and leaves the generator where they leave it."""
    x = torch.randint(0, 256, (5, channels, side, side), dtype=torch.uint8)
    for aug in view_augments(recipe, side):
        g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
        calls = [aug(x, g1) for _ in range(3)]
        together = aug.views(x, g2, 3)
        assert all(torch.equal(a, b) for a, b in zip(calls, together, strict=True))
        assert torch.equal(g1.get_state(), g2.get_state())


@pytest.mark.parametrize("pair", ["byol", "crop_and_not"])
def test_batched_views_of_different_augments_equal_one_call_per_view(pair: str) -> None:
    """BYOL's two augments (solarisation on one only) share one pass; augments that cannot
    (one crops, the other not) get one pass per view. Either way the views are those of
    one call per view, alternating augments, and the generator ends where they leave it."""
    if pair == "byol":
        augs = view_augments("byol", 64)
    else:
        augs = [ImageAugment(64), ImageAugment(64, types=["flip", "jitter"])]
    x = torch.randint(0, 256, (5, 3, 64, 64), dtype=torch.uint8)
    g1, g2 = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
    calls = [augs[v % 2](x, g1) for v in range(4)]
    together = ImageAugment.batched_views(augs, x, g2, 4)
    assert all(torch.equal(a, b) for a, b in zip(calls, together, strict=True))
    assert torch.equal(g1.get_state(), g2.get_state())


def test_a_view_reads_its_uniform_numbers_in_the_documented_order() -> None:
    """The parameters of one view are those of drawing, in turn, the flip coin, the crop's
    22 numbers, the jitter's coin, four strengths and [B, 4] sort keys, the grayscale
    coin, the blur's σ and coin, the solarisation coin (here from separate ``torch.rand``
    calls): so runs replay the views they drew before all views came from one call."""
    b, aug = 6, view_augments("byol", 64)[1]  # every type, solarisation included
    drawn = aug._draw(b, torch.Generator().manual_seed(3), True)
    g = torch.Generator().manual_seed(3)
    flip = torch.rand(b, generator=g) < 0.5
    box = crop_boxes(
        torch.stack([torch.rand(b, generator=g) for _ in range(22)]), aug.crop_scale, 1
    )
    coin, *strength = (torch.rand(b, generator=g) for _ in range(5))
    keys = torch.rand(b, 4, generator=g)
    low = [1 - v for v in aug.jitter[:3]] + [-aug.jitter[3]]
    factors = torch.stack(
        [u * ((1 + v if i < 3 else v) - lo) + lo
         for i, (u, v, lo) in enumerate(zip(strength, aug.jitter, low, strict=True))], 1
    )  # fmt: skip
    plan = plan_jitter(coin < aug.p_jitter, factors, keys.argsort(1))
    gray_coin, sigma, blur_coin, sol = (torch.rand(b, generator=g) for _ in range(4))
    assert torch.equal(drawn.cols["theta"], crop_theta(box, flip))
    assert torch.equal(drawn.cols["coef"], plan.coef)
    assert torch.equal(drawn.cols["hue"], plan.hue.float())
    assert torch.equal(drawn.cols["gray"], (gray_coin < aug.p_gray).float())
    assert torch.equal(drawn.cols["kernel"], blur_kernels(sigma * 1.9 + 0.1, aug.kernel_size))
    assert torch.equal(drawn.cols["blur"], (blur_coin < aug.p_blur).float())
    assert torch.equal(drawn.cols["solarize"], (sol < aug.solarize_p).float())


@pytest.mark.parametrize("recipe,side", [("simclr", 16), ("byol", 16)])
def test_compiled_views_are_the_eager_views_in_one_graph(recipe: str, side: int) -> None:
    """Compiled augments (what a run with ``compile`` makes) give the eager views up to
    rounding and read the generator alike; successive steps' draws reuse one graph
    (nothing in it depends on the draw)."""
    eager, compiled = view_augments(recipe, side), view_augments(recipe, side)
    for aug in compiled:
        aug.compile()
    x = torch.randint(0, 256, (6, 3, side, side), dtype=torch.uint8)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    for step in range(3):
        g1, g2 = torch.Generator().manual_seed(step), torch.Generator().manual_seed(step)
        want = ImageAugment.batched_views(eager, x, g1, 2)
        got = ImageAugment.batched_views(compiled, x, g2, 2)
        assert all(torch.allclose(a, b, atol=1e-4, rtol=0) for a, b in zip(want, got, strict=True))
        assert torch.equal(g1.get_state(), g2.get_state())
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_aug_backend_setting_offers_exactly_the_kernel_backends() -> None:
    """The run setting ``aug_backend`` lists the backends the views take
    (``_optional.KERNEL_BACKENDS``, shared with the losses' ``backend``), no more, no fewer."""
    from contrastkit._optional import KERNEL_BACKENDS

    for name in KERNEL_BACKENDS:
        assert TrainConfig(aug_backend=name).aug_backend == name
        assert ImageAugment(32, backend=name).backend == name  # triton: the dev extra has it
    listed = ", ".join(KERNEL_BACKENDS)
    with pytest.raises(ValueError, match=f"aug_backend must be one of {listed}, got 'cuda'$"):
        TrainConfig(aug_backend="cuda")
    with pytest.raises(ValueError, match=f"backend must be one of {listed}, got 'cuda'$"):
        ImageAugment(32, backend="cuda")


def test_auto_backend_fuses_the_colour_ops_on_cuda_when_triton_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``backend="auto"`` (the default) takes the Triton kernel for CUDA images when triton
    is installed, the torch operators otherwise; ``"torch"`` and ``"triton"`` are fixed."""
    from contrastkit.engine import device as engine_device
    from contrastkit.images import image_augment

    have = {"triton": True}
    capability = {"cuda:0": (9, 0), "cuda:1": (6, 1)}  # an H100, a P100-class GPU
    monkeypatch.setattr(image_augment, "installed", lambda package: have[package])
    monkeypatch.setattr(engine_device, "_CAPABILITY", {})
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d: capability[str(d)])
    cuda, old, cpu = torch.device("cuda:0"), torch.device("cuda:1"), torch.device("cpu")
    auto = ImageAugment(32)
    assert auto.backend == "auto" and TrainConfig().aug_backend == "auto"
    assert auto.fuses_colour(cuda) and not auto.fuses_colour(cpu)
    assert not auto.fuses_colour(old)  # Triton does not compile for it
    assert not ImageAugment(32, backend="torch").fuses_colour(cuda)
    have["triton"] = False
    assert not auto.fuses_colour(cuda)
    triton = ImageAugment.__new__(ImageAugment)
    triton.backend = "triton"  # what the constructor keeps once triton imports
    assert triton.fuses_colour(cpu) and triton.fuses_colour(cuda)


def test_auto_backend_makes_the_torch_views_on_the_cpu() -> None:
    """On CPU images the default augments give the torch path's views bit for bit (the
    kernel, even in Triton's interpreter, rounds differently)."""
    x = torch.randint(0, 256, (6, 3, 16, 16), dtype=torch.uint8)
    got = ImageAugment.batched_views(
        view_augments("simclr", 16), x, torch.Generator().manual_seed(4), 2
    )
    want = ImageAugment.batched_views(
        view_augments("simclr", 16, backend="torch"), x, torch.Generator().manual_seed(4), 2
    )
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
