"""Frameworks: training reduces the loss, compatibility comes from the registry, and
MoCo's queue / momentum encoder follow MoCo's definitions."""

from __future__ import annotations

import copy

import pytest
import torch

from contrastkit import losses
from contrastkit.frameworks import FRAMEWORKS, MoCo, build_framework, compatible_losses
from contrastkit.images import Augment, load_digits
from contrastkit.losses.views import cross_view_similarities, normalize
from contrastkit.models import build_encoder


@pytest.fixture(scope="module")
def digits_batch() -> torch.Tensor:
    return load_digits().x_train[:128]


def encoder() -> torch.nn.Module:
    return build_encoder("2d", (1, 8, 8), feature_dim=32, width=8)


CASES = [
    ("simclr", "ntxent", {}),
    ("simclr", "macl", {}),
    ("simclr", "amcl", {"loss_kwargs": {"heads": 2, "out_dim": 16}}),
    ("moco", "infonce", {"queue_size": 64}),
    ("moco", "macl", {"queue_size": 64}),
    ("moco", "dcl", {"queue_size": 64}),
    ("moco", "cacr", {"queue_size": 64}),
    ("simsiam", "simsiam", {}),
    ("barlow_twins", "barlow_twins", {}),
    ("multiview", "cacr", {"num_views": 5}),
    ("multiview", "cmc", {"num_views": 3}),
    ("supervised", "supcon", {}),
    ("nnclr", "macl", {"queue_size": 64}),
    ("simcse", "infonce", {}),
]


@pytest.mark.parametrize(("framework", "loss", "options"), CASES)
def test_training_steps_give_finite_decreasing_loss(
    framework: str, loss: str, options: dict, digits_batch: torch.Tensor
) -> None:
    torch.manual_seed(0)
    opts = dict(options)
    model = build_framework(
        framework, encoder(), loss, opts.pop("loss_kwargs", None), proj_dim=16, **opts
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    aug, g = Augment("2d"), torch.Generator().manual_seed(0)
    labels = torch.arange(64) % 10
    values = []
    for step in range(24):
        batch = digits_batch[(step % 2) * 64 : (step % 2) * 64 + 64]
        loss_value = model([aug(batch, g) for _ in range(model.num_views)], labels)
        optimizer.zero_grad()
        loss_value.backward()
        optimizer.step()
        values.append(float(loss_value.detach()))
    assert all(torch.isfinite(torch.tensor(values)))
    # from step 2 on, MoCo's queue (64 = one batch) holds real keys instead of its random init
    assert sum(values[-6:]) / 6 < sum(values[2:8]) / 6, values


def test_simcse_encodes_the_repeated_batch_once_in_the_cross_view_layout(
    digits_batch: torch.Tensor,
) -> None:
    enc = encoder()
    rows: list[int] = []
    enc.register_forward_hook(lambda module, inputs, output: rows.append(len(inputs[0])))
    model = build_framework("simcse", enc, "infonce", {"temperature": 0.05})
    x = digits_batch[:16]
    value = model([x, x])
    assert rows == [32]  # one pass over [batch; batch]: the views differ by dropout only
    assert model.last_views is not None
    h1, h2 = model.last_views
    expected = losses.get("infonce", temperature=0.05).similarity_loss(
        *cross_view_similarities(h1, h2)
    )
    # two float32 paths whose logits (~1/τ = 20) cancel to a loss of ~1e-3: they agree to
    # float32 rounding of the logits, not to 1e-6 of the small result (an init that depends
    # on the tests run before it gave 1.6e-6)
    assert float(value) == pytest.approx(float(expected), rel=1e-6, abs=1e-6)
    assert not hasattr(model, "projector")


@pytest.mark.parametrize(
    ("framework", "loss", "options", "projects"),
    [
        ("simclr", "ntxent", {}, True),
        ("simclr", "amcl", {"loss_kwargs": {"heads": 2, "out_dim": 16}}, False),
        ("moco", "infonce", {"queue_size": 64}, True),
        ("simsiam", "simsiam", {}, True),
        ("nnclr", "macl", {"queue_size": 64}, True),
        ("simcse", "infonce", {}, False),
    ],
)
def test_head_is_what_the_loss_sees_of_the_features(
    framework: str, loss: str, options: dict, projects: bool
) -> None:
    opts = dict(options)
    model = build_framework(
        framework, encoder(), loss, opts.pop("loss_kwargs", None), proj_dim=16, **opts
    ).eval()
    h = torch.randn(8, 32)
    if projects:
        torch.testing.assert_close(model.head(h), model.projector(h))
    else:  # no projector: SimCSE, or a "features" loss that owns its heads
        assert model.head(h) is h


def test_compatibility_follows_input_kinds() -> None:
    for name, cls in FRAMEWORKS.items():
        accepted = compatible_losses(name)
        for loss in losses.available():
            info = losses.info(loss)
            expected = info.inputs in cls.input_kinds
            if name in ("moco", "nnclr") and info.inputs == "pair":
                expected = info.similarity_level  # needs similarity_loss(pos, neg)
            if name == "moco" and info.inputs == "views":
                expected = loss == "cacr"  # CACR's MoCo form; CMC has no query side
            if name == "moco" and info.inputs == "features":
                expected = loss == "amcl"  # the only features loss with a queue form
            assert (loss in accepted) == expected, (name, loss)
    assert {"infonce", "macl", "dcl", "cacr"} <= set(compatible_losses("moco"))
    assert "barlow_twins" not in compatible_losses("moco")
    assert compatible_losses("multiview") == sorted(losses.available(inputs="views"))


@pytest.mark.parametrize("framework", [f for f in FRAMEWORKS if compatible_losses(f)])
def test_every_trainable_parameter_gets_a_gradient(framework: str) -> None:
    """Under torchrun the trainer wraps the framework, loss included, in DDP, which fails
    at the next step when a parameter that requires grad got no gradient. Every
    compatible loss with its defaults, two steps of a small linear encoder."""

    class Linear(torch.nn.Linear):
        feature_dim = 8

    missing = {}
    for loss in compatible_losses(framework):
        torch.manual_seed(0)
        model = build_framework(framework, Linear(6, 8), loss, queue_size=16, num_views=3)
        views = [torch.randn(8, 6) for _ in range(model.num_views)]
        labels = torch.rand(8) if loss == "lascon" else torch.arange(8) % 3
        for _ in range(2):
            model.zero_grad()
            model(views, labels if model.needs_labels else None).backward()
        names = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
        if names:
            missing[loss] = names
    assert not missing


@pytest.mark.parametrize(
    ("framework", "loss"),
    [
        ("simsiam", "ntxent"),
        ("moco", "barlow_twins"),
        ("simclr", "cacr"),
        ("moco", "cmc"),
        ("multiview", "macl"),
    ],
)
def test_incompatible_loss_is_refused_with_the_compatible_list(framework: str, loss: str) -> None:
    with pytest.raises(ValueError) as err:
        build_framework(framework, encoder(), loss)
    message = str(err.value)
    assert f"framework {framework!r} cannot train with loss {loss!r}" in message
    assert message.endswith("compatible losses: " + ", ".join(compatible_losses(framework)))


def test_unknown_names_and_bad_loss_arguments() -> None:
    with pytest.raises(ValueError, match="unknown framework 'byol'"):
        build_framework("byol", encoder(), "ntxent")
    with pytest.raises(ValueError, match="unknown loss 'nope'"):
        build_framework("simclr", encoder(), "nope")
    with pytest.raises(ValueError, match=r"loss 'ntxent' has no argument 'alpha'"):
        build_framework("simclr", encoder(), "ntxent", {"alpha": 1.0})


def test_moco_loss_uses_queue_as_negatives_and_updates_state(digits_batch: torch.Tensor) -> None:
    torch.manual_seed(0)
    model = build_framework("moco", encoder(), "macl", proj_dim=16, queue_size=96, momentum=0.9)
    assert isinstance(model, MoCo)
    x1, x2 = digits_batch[:64], digits_batch[64:128]
    with torch.no_grad():  # make the key encoder differ from the query encoder
        for p in model.key_encoder.parameters():
            p.add_(0.05 * torch.randn_like(p))
    queue_before = model.queue.clone()
    query_before = copy.deepcopy(torch.nn.Sequential(model.encoder, model.projector))
    key_before = copy.deepcopy(model.key_encoder)

    # expected loss: keys from the momentum-updated key encoder, negatives = the queue
    expected_key_net = copy.deepcopy(key_before)
    for pk, pq in zip(expected_key_net.parameters(), query_before.parameters(), strict=True):
        pk.data = 0.9 * pk.data + 0.1 * pq.data
    reference = copy.deepcopy(model.loss)
    q = query_before(x1)
    k = normalize(expected_key_net(x2)).detach()
    expected = reference.similarity_loss(*cross_view_similarities(q, k, queue_before))

    loss_value = model([x1, x2])
    torch.testing.assert_close(loss_value, expected, rtol=1e-5, atol=1e-6)
    for pk, pe in zip(model.key_encoder.parameters(), expected_key_net.parameters(), strict=True):
        torch.testing.assert_close(pk, pe)
    # FIFO: the 64 keys fill rows 0..63, the pointer moves on, the rest is untouched
    torch.testing.assert_close(model.queue[:64], k)
    torch.testing.assert_close(model.queue[64:], queue_before[64:])
    assert int(model.queue_ptr) == 64
    model([x1, x2])  # 64 more keys wrap around: rows 64..95 then 0..31
    assert int(model.queue_ptr) == (128 % 96)
    assert not any(p.requires_grad for p in model.key_encoder.parameters())
    loss_value.backward()
    assert model.step_logs()["temperature"] == pytest.approx(model.loss.last_temperature)


def test_amcl_owns_its_heads_and_logs_temperatures(digits_batch: torch.Tensor) -> None:
    model = build_framework("simclr", encoder(), "amcl", {"heads": 3, "out_dim": 16})
    assert model.projector is None
    loss_ids = {id(p) for p in model.loss.parameters()}
    assert loss_ids and loss_ids <= {id(p) for p in model.parameters()}  # optimised too
    model([digits_batch[:32], digits_batch[32:64]])
    logs = model.step_logs()
    per_head = [v for k, v in logs.items() if k.startswith("tau_pos/")]
    assert len(per_head) == 3
    assert logs["tau_pos_mean"] == pytest.approx(sum(per_head) / 3)


def test_wrong_number_of_views_and_missing_labels(digits_batch: torch.Tensor) -> None:
    model = build_framework("multiview", encoder(), "cacr", num_views=4)
    with pytest.raises(ValueError, match="expects 4 views, got 2"):
        model([digits_batch[:8], digits_batch[8:16]])
    sup = build_framework("supervised", encoder(), "supcon")
    with pytest.raises(ValueError, match="needs labels"):
        sup([digits_batch[:8], digits_batch[8:16]])


def test_moco_cacr_is_algorithm_3_against_the_queue(digits_batch: torch.Tensor) -> None:
    torch.manual_seed(0)
    t_pos, t_neg = 1.0, 0.9
    model = build_framework(
        "moco", encoder(), "cacr", {"t_pos": t_pos, "t_neg": t_neg}, proj_dim=8, queue_size=32
    )
    model.eval()  # BN on running stats, so the reference below sees the same network
    x1, x2 = digits_batch[:16], digits_batch[16:32]
    queue = model.queue.clone().double()
    with torch.no_grad():
        q = normalize(model.projector(model.encoder(x1))).double()
        k = normalize(model.key_encoder(x2)).double()  # momentum 0.99 of identical copies
    attraction, repulsion = 0.0, 0.0
    for i in range(16):
        attraction += float((q[i] - k[i]).pow(2).sum()) / 16  # one positive: weight 1
        costs = [float((q[i] - queue[j]).pow(2).sum()) for j in range(32)]
        weights = torch.softmax(-t_neg * torch.tensor(costs, dtype=torch.float64), 0)
        repulsion -= sum(float(w) * c for w, c in zip(weights, costs, strict=True)) / 16
    loss = model([x1, x2])
    # float32 costs as 2 - 2·cos: absolute error ~1e-8 on an attraction of ~1e-4
    assert float(loss.detach()) == pytest.approx(attraction + repulsion, rel=1e-4, abs=1e-6)
    assert model.loss.last_parts == pytest.approx((attraction, repulsion), rel=1e-4, abs=1e-6)


def test_moco_moves_its_key_encoder_by_m_per_optimiser_step_under_accumulation() -> None:
    """With grad_accum A the framework runs A forwards per optimiser step; each moved the
    key encoder by the full momentum, so a step moved it by m^A (0.99 -> 0.961 at A = 4)."""
    torch.manual_seed(0)
    moco = build_framework("moco", encoder(), "infonce", queue_size=64, grad_accum=4)
    start = [p.detach().clone() for p in moco.key_encoder.parameters()]
    with torch.no_grad():  # the query weights differ from the keys', and stay fixed
        for p in moco.encoder.parameters():
            p.add_(1.0)
    target = [*moco.encoder.parameters(), *moco.projector.parameters()]
    views = [torch.rand(8, 1, 8, 8) for _ in range(2)]
    for _ in range(4):
        moco(views)
    for moved, before, query in zip(moco.key_encoder.parameters(), start, target, strict=True):
        torch.testing.assert_close(moved, before + (1 - 0.99) * (query - before))
