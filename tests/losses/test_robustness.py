"""Every registered loss: finite value and gradient on hard inputs; clear errors on bad ones."""

from __future__ import annotations

import inspect

import pytest
import torch

from contrastkit import losses
from contrastkit.losses import functional as F

CASES = ["random", "identical", "n2"]


def build(name: str, dtype: torch.dtype, d: int, **kwargs: object) -> torch.nn.Module:
    if losses.info(name).inputs == "features":
        kwargs["in_dim"] = d
    return losses.get(name, **kwargs).to(dtype)


def make_inputs(kind: str, case: str, dtype: torch.dtype, d: int = 8) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    n = 2 if case == "n2" else 6
    z1 = torch.randn(n, d, generator=g)
    z2 = z1.clone() if case == "identical" else torch.randn(n, d, generator=g)
    if case == "identical":
        z1, z2 = z1[:1].expand(n, d).clone(), z1[:1].expand(n, d).clone()  # all embeddings equal
    tensors = {
        "pair": [z1, z2],
        "features": [z1, z2],
        "query_key": [z1, z2],
        "labeled": [z1, z2],
        "views": [torch.stack([z1, z2, z1 + 0.01])],
        "predictor": [z1, z2, z1.clone(), z2.clone()],
    }[kind]
    out = [t.to(dtype).requires_grad_(True) for t in tensors]
    if kind == "labeled":
        out.append(torch.arange(n, dtype=torch.float64) % 2)
    return out


def low_temperature_kwargs(name: str) -> dict[str, float]:
    params = inspect.signature(losses.info(name).cls).parameters
    return {"temperature": 0.01} if "temperature" in params else {}


@pytest.mark.parametrize("name", losses.available())
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("low_tau", [False, True])
def test_value_and_gradient_are_finite(
    name: str, case: str, dtype: torch.dtype, low_tau: bool
) -> None:
    kwargs = low_temperature_kwargs(name) if low_tau else {}
    if low_tau and not kwargs:
        pytest.skip("no temperature")
    kind = losses.info(name).inputs
    inputs = make_inputs(kind, case, dtype)
    loss = build(name, dtype, 8, **kwargs)(*inputs)
    assert loss.dim() == 0 and torch.isfinite(loss.float()), f"{name}: {loss}"
    grads = torch.autograd.grad(loss, [t for t in inputs if t.requires_grad], allow_unused=True)
    for grad in grads:
        assert grad is None or torch.isfinite(grad.float()).all(), name


@pytest.mark.parametrize("name", losses.available(inputs="pair"))
def test_pair_losses_reject_mismatched_views(name: str) -> None:
    with pytest.raises(ValueError, match=r"z2|hp|y"):
        losses.get(name)(torch.randn(4, 3), torch.randn(5, 3))


def test_functional_errors_name_the_argument() -> None:
    pos, neg = torch.rand(4), torch.rand(4, 3)
    with pytest.raises(ValueError, match="pos"):
        F.info_nce(pos[:, None], neg)
    with pytest.raises(ValueError, match="neg"):
        F.macl(pos, neg[:3])
    with pytest.raises(ValueError, match="neg"):
        F.dcl(pos, neg[:, :0])
    with pytest.raises(TypeError, match="pos"):
        F.info_nce(pos.long(), neg)
    with pytest.raises(TypeError, match="neg"):
        F.info_nce(pos, [[0.1]])
    with pytest.raises(ValueError, match="temperature"):
        F.info_nce(pos, neg, temperature=0.0)
    with pytest.raises(ValueError, match="reduction"):
        F.info_nce(pos, neg, reduction="avg")
    with pytest.raises(ValueError, match="pos_cost"):
        F.cacr(torch.rand(4), torch.rand(4, 2))
    with pytest.raises(ValueError, match="neg_cost"):
        F.cacr(torch.rand(4, 2), torch.rand(3, 2))
    with pytest.raises(ValueError, match="z1"):
        losses.NTXent()(torch.randn(1, 3), torch.randn(1, 3))
    with pytest.raises(ValueError, match="queue"):
        losses.NTXent()(torch.randn(4, 3), torch.randn(4, 3), queue=torch.randn(5, 2))


def test_reductions() -> None:
    pos, neg = torch.rand(5, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
    per_anchor = F.info_nce(pos, neg, reduction="none")
    assert per_anchor.shape == (5,)
    torch.testing.assert_close(F.info_nce(pos, neg, reduction="sum"), per_anchor.sum())
    torch.testing.assert_close(
        F.macl(pos, neg, reduction="sum"), F.macl(pos, neg, reduction="none").sum()
    )


def test_registry_lookup() -> None:
    assert {
        "ntxent",
        "infonce",
        "dcl",
        "dclw",
        "flatnce",
        "dual_temperature",
        "hcl",
        "macl",
    } <= set(losses.available())
    assert "supcon" in losses.available(inputs="labeled") and "cacr" in losses.available(
        inputs="views"
    )
    assert isinstance(losses.get("macl", temperature=0.2), losses.MACL)
    assert losses.info("macl").similarity_level and not losses.info("cacr").similarity_level
    with pytest.raises(ValueError, match=r"unknown loss 'nope'; available: .*ntxent"):
        losses.get("nope")
    with pytest.raises(ValueError, match="inputs"):
        losses.available(inputs="triplet")


@pytest.mark.parametrize("name", losses.available())
def test_integer_inputs_are_refused_naming_the_input(name: str) -> None:
    """Every loss checks its embeddings' dtype before reading them (align_uniform gave
    torch's own linalg.vector_norm error)."""
    loss = build(name, torch.float32, 8)
    inputs = make_inputs(losses.info(name).inputs, "random", torch.float32)
    inputs[0] = inputs[0].detach().round().long()
    with pytest.raises(TypeError, match="must be a floating-point tensor"):
        loss(*inputs)


def test_a_numpy_or_tensor_number_is_refused_with_what_to_pass() -> None:
    """Hyper-parameters are Python numbers; a numpy scalar or a 0-d tensor is refused with
    the hint, a value out of range without it."""
    import numpy as np

    for value in (np.float32(0.1), torch.tensor(0.1)):
        with pytest.raises(ValueError, match=r"temperature must be .*pass float\(x\) or int\(x\)"):
            losses.get("ntxent", temperature=value)
    with pytest.raises(ValueError, match=r"got -1.0$"):
        losses.get("ntxent", temperature=-1.0)
