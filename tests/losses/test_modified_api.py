"""Li, Zhang & Nie (ACL 2024), the modified and unmodified objectives of
:mod:`contrastkit.losses.functional`: the symmetric reduction, edge cases, errors, the
registry modules and their defaults (values and gradients: ``test_modified.py``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest
import torch
from test_modified import views
from torch import Tensor

from contrastkit import losses
from contrastkit.losses import functional as F

FUNCS = {
    "mmhe": F.mmhe,
    "mmhs": F.mmhs,
    "mbarlow": F.mbarlow,
    "mvicreg": F.mvicreg,
    "mhe": F.mhe,
    "mhs": F.mhs,
    "barlow_l2": F.barlow_l2,
    "vicreg_l2": F.vicreg_l2,
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_symmetric_adds_the_swapped_direction(name: str) -> None:
    h, hp = views(seed=6)
    fn = FUNCS[name]
    assert fn(h, hp).item() == pytest.approx(
        fn(h, hp, symmetric=False).item() + fn(hp, h, symmetric=False).item(), rel=1e-12
    )


@pytest.mark.parametrize("name", ["mmhe", "mmhs", "mbarlow", "mvicreg"])
def test_no_selected_anchor_gives_no_gradient_and_no_nan(name: str) -> None:
    h, hp = views(seed=7)
    x = h.clone().requires_grad_(True)
    loss = FUNCS[name](x, hp, margin=-10.0, symmetric=False)
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.equal(x.grad, torch.zeros_like(h))


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_identical_and_duplicate_embeddings_stay_finite(name: str, dtype: torch.dtype) -> None:
    h, _ = views(seed=8)
    h = torch.cat([h[:4], h[:4]]).to(dtype)  # every anchor has an exact duplicate
    x = h.clone().requires_grad_(True)
    loss = FUNCS[name](x, h.clone())
    loss.backward()
    assert loss.dtype == torch.float32  # half inputs give a float32 loss (the precision rule)
    assert torch.isfinite(loss) and torch.isfinite(x.grad).all()


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_bad_inputs_raise_clear_errors(name: str) -> None:
    h, hp = views(n=4, d=3)
    with pytest.raises(ValueError, match=r"h must have shape \[N, d\]"):
        FUNCS[name](h[0], hp)
    with pytest.raises(ValueError, match="hp must have the shape of h"):
        FUNCS[name](h, hp[:, :2])
    with pytest.raises(TypeError, match=r"must be a torch\.Tensor"):
        FUNCS[name](h.tolist(), hp)


def test_bad_hyper_parameters_raise() -> None:
    h, hp = views(n=4, d=3)
    with pytest.raises(ValueError, match="ratio must be a finite number > 0"):
        F.mmhe(h, hp, ratio=-1.0)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        F.mbarlow(h, hp, temperature=0.0)
    with pytest.raises(ValueError, match="margin must be a finite number"):
        F.mmhs(h, hp, margin=float("nan"))


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_registry_modules_match_functional(name: str) -> None:
    h, hp = views(seed=9)
    assert losses.info(name).inputs == "pair"
    assert losses.get(name)(h, hp).item() == pytest.approx(FUNCS[name](h, hp).item(), rel=1e-12)


def test_defaults_are_table_4_bert() -> None:
    def defaults(fn: Callable[..., Tensor]) -> dict[str, object]:
        return {
            k: p.default
            for k, p in inspect.signature(fn).parameters.items()
            if p.default is not inspect.Parameter.empty
        }

    assert defaults(F.mmhe) == {
        "margin": 0.3,
        "ratio": 1.75,
        "temperature": 0.05,
        "symmetric": True,
    }
    assert defaults(F.mmhs) == {"margin": 0.3, "ratio": 1.75, "symmetric": True}
    for fn in (F.mbarlow, F.mvicreg):
        assert defaults(fn) == {"margin": 0.3, "ratio": 1.5, "temperature": 0.05, "symmetric": True}
    assert defaults(F.barlow_l2)["nu"] == 5e-3


def test_module_hyper_parameters_are_live_attributes() -> None:
    h, hp = views(seed=10)
    loss = losses.get("mmhe")
    assert (loss.margin, loss.ratio, loss.temperature) == (0.3, 1.75, 0.05)
    loss.ratio = 0.6
    assert loss(h, hp).item() == pytest.approx(F.mmhe(h, hp, ratio=0.6).item(), rel=1e-12)
