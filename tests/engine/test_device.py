"""select_device: the auto order, explicit devices, and clear errors when one is missing."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit.engine import Engine, cat_rows, host_floats, select_device, to_device


def fake_hardware(monkeypatch: pytest.MonkeyPatch, cuda: int = 0, mps: bool = False) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)


@pytest.mark.parametrize(
    ("cuda", "mps", "expected"),
    [(2, True, "cuda:0"), (0, True, "mps"), (0, False, "cpu"), (1, False, "cuda:0")],
)
def test_auto_prefers_cuda_then_mps_then_cpu(
    monkeypatch: pytest.MonkeyPatch, cuda: int, mps: bool, expected: str
) -> None:
    fake_hardware(monkeypatch, cuda, mps)
    assert select_device("auto") == torch.device(expected)


def test_explicit_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hardware(monkeypatch, cuda=2, mps=True)
    assert select_device("cpu") == torch.device("cpu")
    assert select_device("cuda") == torch.device("cuda", 0)
    assert select_device("cuda:1") == torch.device("cuda", 1)
    assert select_device("MPS") == torch.device("mps")


def test_torchrun_local_rank_picks_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hardware(monkeypatch, cuda=4)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert select_device("cuda") == torch.device("cuda", 3)
    assert select_device("auto") == torch.device("cuda", 3)
    assert select_device("cuda:1") == torch.device("cuda", 1)  # explicit index wins


def test_unavailable_or_malformed_devices_are_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hardware(monkeypatch, cuda=0, mps=False)
    with pytest.raises(ValueError, match=r"'cuda' requested but torch.cuda.is_available\(\)"):
        select_device("cuda")
    with pytest.raises(ValueError, match="'mps' requested"):
        select_device("mps")
    fake_hardware(monkeypatch, cuda=2)
    with pytest.raises(ValueError, match="asks for GPU 5 but only 2"):
        select_device("cuda:5")
    for bad in ("gpu", "tpu", "cuda:x", ""):
        with pytest.raises(ValueError, match="device must be one of auto, cpu, cuda"):
            select_device(bad)


def test_to_device_moves_nested_containers_and_objects_with_to() -> None:
    class Box:
        def __init__(self) -> None:
            self.where: torch.device | None = None

        def to(self, device: torch.device) -> Box:
            self.where = device
            return self

    box = Box()
    t = torch.ones(2, dtype=torch.float64)
    moved = to_device({"a": [t, (t, 3)], "b": box, "c": "text"}, torch.device("meta"))
    assert moved["a"][0].device.type == "meta" and moved["a"][1][0].device.type == "meta"
    assert moved["a"][1][1] == 3 and isinstance(moved["a"][1], tuple)
    assert moved["b"] is box and box.where == torch.device("meta")
    assert moved["c"] == "text"
    assert Engine("cpu").to_device(t) is t  # already there: no copy


def test_engine_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16, fp16"):
        Engine("cpu", precision="fp8")
    with pytest.raises(ValueError, match="grad_accum must be a positive integer"):
        Engine("cpu", grad_accum=0)
    with pytest.raises(ValueError, match="clip_grad must be a finite number > 0"):
        Engine("cpu", clip_grad=float("nan"))


def test_host_floats_reads_the_tensors_among_floats_in_their_places() -> None:
    values = [1.5, torch.tensor(2.25), 3, torch.tensor(float("nan"))]
    out = host_floats(values)
    assert out[:3] == [1.5, 2.25, 3.0] and math.isnan(out[3])
    assert all(type(v) is float for v in out) and host_floats([]) == []


def test_cat_rows_copies_each_output_before_the_next_is_made() -> None:
    """``cat_rows`` is ``torch.cat`` of the chunks; it also holds when a producer reuses
    its output buffer at its next call, as a module compiled with CUDA graphs does
    (``torch.cat`` of the kept list would give the last chunk three times)."""
    chunks = [torch.full((2, 3), float(i)) for i in range(3)]
    buffer = torch.empty(2, 3)

    def replayed():  # one static output, overwritten at every call
        for chunk in chunks:
            buffer.copy_(chunk)
            yield buffer

    assert torch.equal(cat_rows(iter(chunks), 6), torch.cat(chunks))
    assert torch.equal(cat_rows(replayed(), 6), torch.cat(chunks))
    assert not torch.equal(torch.cat(list(replayed())), torch.cat(chunks))
    with pytest.raises(ValueError, match="the outputs hold 6 rows, expected 7"):
        cat_rows(iter(chunks), 7)
