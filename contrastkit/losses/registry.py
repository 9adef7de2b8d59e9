"""Name → loss registry, with what each loss expects as input.

Every registered loss is an ``nn.Module`` class whose ``forward`` follows one of these
signatures (its ``inputs`` kind), so frameworks can check compatibility up front:

* ``"pair"``: ``loss(z1, z2)``, two views of the same ``N`` samples, ``[N, d]`` each;
* ``"labeled"``: ``loss(z1, z2, labels)``, two views plus ``[N]`` or ``[N, D]`` labels;
* ``"views"``: ``loss(views)``, ``[V, N, d]`` with ``V >= 2`` views;
* ``"query_key"``: ``loss(query, key, queue=None)``;
* ``"predictor"``: ``loss(p1, p2, z1, z2)``, SimSiam's predictor outputs and targets;
* ``"features"``: ``loss(h1, h2)`` on encoder features: the loss owns its projection heads
  (AMCL) and is built with ``in_dim=``; frameworks skip their own projector for it.

Each entry also declares what the loss can do, so frameworks ask the registry instead of
importing classes or probing attributes:

* ``queue_form``: the module has ``queue_loss(query, key, queue)`` (MoCo's form of a
  "views" or "features" loss: CACR, AMCL);
* ``diagnostics``: the module has ``diagnostics() -> dict[str, float]``, the per-step
  values frameworks log (MACL's τ_a and A, CACR's parts, AMCL's temperatures);
* input checks: every registered module's ``forward`` (and ``similarity_loss`` /
  ``queue_loss``) refuses, with one line naming the argument, a non-tensor input
  (``TypeError``), a ``d = 0`` embedding, an empty ``queue`` and non-finite ``labels``;
  and, after the call, a non-finite loss raises ``ValueError`` naming the input that
  holds NaN/inf (``FloatingPointError`` if all inputs are finite). That check reads the
  already-reduced loss, one scalar test per call: by default on CPU tensors only, since
  on a GPU the read would stop the host until the device catches up, every call
  (:func:`~contrastkit.losses.functional._common.reads_values`); :func:`set_check_finite`
  or ``CONTRASTKIT_CHECK_FINITE=1`` / ``0`` turn it on / off on every device.
* precision: the outermost call of ``forward`` / ``similarity_loss`` / ``queue_loss`` runs
  with ``torch.autocast`` off on the inputs' device and its float16/bfloat16 inputs
  (tensors and :class:`~contrastkit.losses.functional.Negatives`) cast to float32, so every
  registered loss, inside an autocast region or on half-precision embeddings, computes in
  float32 (its parameters too: AMCL's heads and temperature network) and returns a
  float32 loss; float64 inputs stay float64 (the rule of
  :mod:`contrastkit.losses.functional._common`).
* ``fused_backends``: the module takes ``backend="auto" | "torch" | "triton"``, the
  implementation of its fused Gram statistics (:mod:`.functional._backend`: the InfoNCE
  family, SupCon, LASCon, CACR). :func:`get` and :func:`check_args` also accept
  ``backend="auto"`` or ``"torch"`` for every other loss (plain torch; the argument is
  dropped), so a framework can pass one setting to any loss; ``"triton"`` there is refused.
* ``params``: the declared range of every constructor argument
  (:class:`~contrastkit.losses.hparams.Param`, from the class's ``param_ranges``). Every
  construction is checked against them, and :func:`check_args` checks a ``loss_args``
  mapping without building anything (the command line does so when reading a config).

Example:
    >>> from contrastkit import losses
    >>> loss = losses.get("macl", temperature=0.2)
    >>> "ntxent" in losses.available(inputs="pair")
    True
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from torch import Tensor, nn

from .functional._common import call_in_float32, reads_values, set_value_checks
from .hparams import Param, declared_ranges

INPUT_KINDS = ("pair", "labeled", "views", "query_key", "predictor", "features")


@dataclass(frozen=True)
class LossInfo:
    """What the registry knows of one loss."""

    name: str
    cls: type[nn.Module]
    inputs: str
    reference: str
    similarity_level: bool  # True when ``loss.similarity_loss(pos, neg)`` is available
    queue_form: bool = False  # ``loss.queue_loss(query, key, queue)`` (CACR, AMCL)
    diagnostics: bool = False  # ``loss.diagnostics() -> dict[str, float]``
    params: Mapping[str, Param] = field(default_factory=dict)
    fused_backends: bool = False  # ``backend="auto" | "torch" | "triton"`` constructor argument


_REGISTRY: dict[str, LossInfo] = {}
CHECKED_METHODS = ("forward", "similarity_loss", "queue_loss")


def set_check_finite(enabled: bool | None) -> bool | None:
    """Turn the non-finite loss/label check of every registered loss on (``True``, every
    device) or off (``False``), or back to the default (``None``: CPU tensors only); returns
    the previous setting in the same terms."""
    modes = {True: "on", False: "off", None: "auto"}
    previous = set_value_checks(modes[None if enabled is None else bool(enabled)])
    return {"on": True, "off": False, "auto": None}[previous]


T = TypeVar("T", bound=type[nn.Module])


def register(
    name: str,
    inputs: str,
    reference: str,
    *,
    queue_form: bool = False,
    diagnostics: bool = False,
    fused_backends: bool = False,
) -> Callable[[T], T]:
    """Class decorator adding a loss under ``name``.

    Registration fails (a programming error) unless every constructor argument has a
    declared range in ``param_ranges`` and the declared capabilities exist; the class's
    ``__init__`` is wrapped to validate its arguments against those ranges."""
    if inputs not in INPUT_KINDS:
        raise ValueError(f"inputs must be one of {INPUT_KINDS}, got {inputs!r}")

    def decorate(cls: T) -> T:
        if name in _REGISTRY:
            raise ValueError(f"a loss named {name!r} is registered already")
        for flag, method in ((queue_form, "queue_loss"), (diagnostics, "diagnostics")):
            if flag and not callable(getattr(cls, method, None)):
                raise TypeError(f"loss {name!r} declares {method} but {cls.__name__} lacks it")
        declared, arguments = declared_ranges(cls), _arguments(cls)
        if fused_backends != ("backend" in arguments):
            raise TypeError(
                f"loss {name!r}: a backend argument needs fused_backends=True and vice versa"
            )
        params = {p: declared[p] for p in arguments if p in declared}
        missing = [p for p in arguments if p not in declared]
        if missing:
            raise TypeError(f"loss {name!r}: no declared range for {', '.join(missing)}")
        cls.__init__ = _checked_init(name, cls.__init__, params)  # type: ignore[method-assign]
        for method in CHECKED_METHODS:
            if callable(getattr(cls, method, None)):
                checked = _checked_call(name, getattr(cls, method), method, params)
                setattr(cls, method, checked)
        similarity = hasattr(cls, "similarity_loss")
        capabilities = (queue_form, diagnostics, params, fused_backends)
        _REGISTRY[name] = LossInfo(name, cls, inputs, reference, similarity, *capabilities)
        return cls

    return decorate


def _arguments(cls: type) -> list[str]:
    """Named constructor arguments of ``cls`` (not ``self``, ``*args``, ``**kwargs``)."""
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [p.name for p in parameters if p.kind not in kinds]


def _checked_init(
    name: str, init: Callable[..., None], params: Mapping[str, Param]
) -> Callable[..., None]:
    signature = inspect.signature(init)

    @functools.wraps(init)
    def checked(self: nn.Module, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for key, value in bound.arguments.items():
            if key in params:
                params[key].check(key, value, name)
        init(self, *args, **kwargs)

    return checked


class _Depth(threading.local):
    """Whether a checked call is running in this thread (forward -> similarity_loss). The
    value exists from the start, so ``torch.compile``'s guards see the same state on every
    call (a first call that created it recompiled the second)."""

    def __init__(self) -> None:  # run in each thread that reads it
        self.value = 0


_depth = _Depth()


def _checked_call(
    name: str, method: Callable[..., Any], what: str, params: Mapping[str, Param]
) -> Callable[..., Any]:
    names = [p for p in inspect.signature(method).parameters][1:]
    strict = what == "forward"  # similarity_loss takes Negatives objects too

    @functools.wraps(method)
    def checked(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        if _depth.value:  # inside another checked call: only the outermost
            return method(self, *args, **kwargs)  # one checks and sets the precision
        given = [*zip(names, args, strict=False), *kwargs.items()]
        for arg, value in given:
            if value is not None:
                _check_input(name, arg, value, strict)
        _depth.value = 1
        try:  # autocast off, half inputs in float32 (see the module docstring)
            out = call_in_float32(method, self, *args, **kwargs)
        except ValueError:  # raised inside on what a NaN input made (AMCL's temperatures)
            _refuse_non_finite_input(name, given)
            raise
        finally:
            _depth.value = 0
        if isinstance(out, Tensor) and reads_values(out) and not _finite(out):
            _refuse_non_finite_input(name, given)
            values = {k: getattr(self, k) for k in params if hasattr(self, k)}
            raise FloatingPointError(
                f"loss {name!r} is not finite for finite inputs (hyper-parameters {values})"
            )
        return out

    return checked


def _refuse_non_finite_input(name: str, given: list[tuple[str, Any]]) -> None:
    """``ValueError`` naming the first input of loss ``name`` that is a floating tensor
    whose values the checks read (:func:`~.functional._common.reads_values`) and that
    holds a NaN or an inf; nothing if there is none."""
    for arg, value in given:
        if isinstance(value, Tensor) and reads_values(value) and not _finite(value):
            raise ValueError(f"loss {name!r}: input {arg} holds NaN or inf values") from None


def _finite(value: Tensor) -> bool:
    return not value.is_floating_point() or bool(value.detach().isfinite().all())


def _check_input(name: str, arg: str, value: object, strict: bool) -> None:
    if value is None or not isinstance(value, Tensor):
        if strict and value is not None:
            raise TypeError(
                f"loss {name!r}: {arg} must be a torch.Tensor, got {type(value).__name__}"
            )
        return
    if arg == "labels":
        if reads_values(value) and not _finite(value):
            raise ValueError(f"loss {name!r}: labels hold NaN or inf values")
        return
    if value.dim() >= 2 and value.shape[-1] == 0:
        raise ValueError(f"loss {name!r}: {arg} has d = 0 features, shape {tuple(value.shape)}")
    if arg == "queue" and value.numel() == 0:
        raise ValueError(f"loss {name!r}: queue is empty (shape {tuple(value.shape)}); pass None")


def check_args(name: str, kwargs: Mapping[str, object], provided: tuple[str, ...] = ()) -> None:
    """Validate ``kwargs`` for loss ``name`` without building it: unknown names and values
    outside the declared ranges raise one-line ``ValueError``s. ``provided`` names the
    arguments a framework fills in itself (AMCL's ``in_dim``)."""
    entry = info(name)
    known = _arguments(entry.cls)
    for key, value in kwargs.items():
        if key == "backend" and not entry.fused_backends:
            _check_plain_backend(name, value)
            continue
        if key not in known:
            raise ValueError(
                f"loss {name!r} has no argument {key!r}; its arguments: "
                f"{', '.join(k for k in known if k not in provided) or 'none'}"
            )
        entry.params[key].check(key, value, name)


def _check_plain_backend(name: str, value: object) -> None:
    """``backend`` given to a loss without fused statistics: only plain torch exists."""
    if value not in ("auto", "torch"):
        fused = ", ".join(n for n, i in sorted(_REGISTRY.items()) if i.fused_backends)
        raise ValueError(
            f"loss {name!r} has no fused backend, so backend must be 'auto' or 'torch', "
            f"got {value!r} (losses with one: {fused})"
        )


def info(name: str) -> LossInfo:
    """The :class:`LossInfo` of ``name``; unknown names raise ``ValueError`` listing all."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; available: {', '.join(available())}") from None


def info_of(loss: nn.Module) -> LossInfo | None:
    """The :class:`LossInfo` of ``loss``'s class or, for a subclass, of its nearest
    registered base class; ``None`` for a module the registry does not know."""
    by_class = {i.cls: i for i in _REGISTRY.values()}
    return next((by_class[c] for c in type(loss).__mro__ if c in by_class), None)


def get(name: str, **kwargs: object) -> nn.Module:
    """A new instance of the loss ``name`` built with ``kwargs`` (unknown or out-of-range
    arguments raise a one-line ``ValueError``, see :func:`check_args`; ``backend`` is
    dropped for a loss without ``fused_backends``)."""
    check_args(name, kwargs)
    entry = info(name)
    if not entry.fused_backends:
        kwargs = {k: v for k, v in kwargs.items() if k != "backend"}
    return entry.cls(**kwargs)


def available(inputs: str | None = None) -> list[str]:
    """Sorted names of the registered losses, optionally only those of one input kind."""
    if inputs is not None and inputs not in INPUT_KINDS:
        raise ValueError(f"inputs must be one of {INPUT_KINDS}, got {inputs!r}")
    return sorted(n for n, i in _REGISTRY.items() if inputs is None or i.inputs == inputs)
