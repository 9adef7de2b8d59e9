"""The engine every training loop of contrastkit runs on (images, signals, graphs, text).

It owns what depends on the hardware and the numerics, never the method:

* the device (:func:`~contrastkit.engine.device.select_device`) and moving objects to it;
* precision: ``fp32``; ``bf16`` = ``torch.autocast`` with bfloat16; ``fp16`` = autocast with
  float16 plus a ``torch.amp.GradScaler`` (dynamic loss scaling). A training step runs the
  whole framework forward (network and loss) under :meth:`Engine.autocast`; the registered
  losses switch autocast off and compute in float32 themselves (the rule of
  :mod:`contrastkit.losses.functional._common`), queues and memory banks stay float32;
* ``torch.compile`` of the modules a loop hands it (in place, so state-dict keys do not
  change), ``channels_last`` for 4-D image inputs (by default on CUDA for a model with 2-D
  convolutions: cuDNN's NHWC convolutions and batch norm; in NCHW, bf16 batch norm falls
  back to PyTorch's native kernels, 48 % of a bf16 ResNet-18 step's GPU time on an H200,
  issue #38);
* one optimiser step per ``grad_accum`` backward passes (the loss of each is divided by
  ``grad_accum``, so the gradient is the mean over the accumulated batches; a window that
  a loop ends early with ``force_step``, at an epoch's end, is the mean over its passes,
  and the next window starts afresh), gradient-norm
  clipping, and a guard that raises *before* the optimiser step when the loss or the
  gradient is not finite (under fp16 a non-finite gradient is the scaler's business: the
  step is skipped and the scale lowered, as ``GradScaler`` intends). With a fused
  optimiser (what :func:`~contrastkit.engine.build_optimizer` builds on CUDA) or LARS the
  guard reads nothing on the host during the step: the optimiser skips a non-finite
  update on the device, and the error is raised at the next step, the parameters as
  before the skipped one (:meth:`Engine.check_pending`). Otherwise it is one host read
  per step.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from torch import Tensor, nn

from .cpu_precision import warn_if_emulated
from .device import channels_last_default, grad_scaler, select_device, to_device
from .optim import skips_on_device

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
# torch.compile's modes: "reduce-overhead" replays CUDA graphs (fewer launches, more memory),
# "max-autotune" also benchmarks kernel choices at compile time
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class NonFiniteError(FloatingPointError):
    """A non-finite loss or gradient stopped training before the optimiser step."""


class Engine:
    """Device, precision, compilation and the optimiser step of a training loop.

    Args:
        device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
        precision: ``"fp32"``, ``"bf16"`` or ``"fp16"`` (see the module docstring).
        compile: ``torch.compile`` the modules given to :meth:`compile_modules`.
        compile_mode: its mode, one of :data:`COMPILE_MODES` (torch's default: ``"default"``).
        channels_last: 4-D inputs (and models) in ``torch.channels_last`` memory format;
            ``None``: decided by :meth:`prepare` (on for CUDA and a model with ``Conv2d``).
        grad_accum: backward passes per optimiser step (≥ 1).
        clip_grad: maximum global L2 norm of the gradients (``None``: no clipping).
    """

    def __init__(
        self,
        device: str | torch.device = "auto",
        precision: str = "fp32",
        compile: bool = False,
        channels_last: bool | None = None,
        grad_accum: int = 1,
        clip_grad: float | None = None,
        compile_mode: str = "default",
    ) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if compile_mode not in COMPILE_MODES:
            raise ValueError(
                f"compile_mode must be one of {', '.join(COMPILE_MODES)}, got {compile_mode!r}"
            )
        if not isinstance(grad_accum, int) or grad_accum < 1:
            raise ValueError(f"grad_accum must be a positive integer, got {grad_accum!r}")
        if clip_grad is not None and not (math.isfinite(clip_grad) and clip_grad > 0):
            raise ValueError(f"clip_grad must be a finite number > 0 or None, got {clip_grad!r}")
        self.device = select_device(device)
        self.precision = precision
        self.dtype = PRECISIONS[precision]
        if self.device.type == "cpu" and self.dtype is not None:
            warn_if_emulated(precision)  # bf16/fp16 without the CPU units: far slower
        self.compile = compile
        self.compile_mode = compile_mode
        self.channels_last = channels_last
        self.grad_accum = grad_accum
        self.clip_grad = clip_grad
        self.scaler = grad_scaler(self.device) if precision == "fp16" else None
        self.micro_steps = 0  # backward passes so far
        self.window_passes = 0  # backward passes in the open accumulation window
        self.optimizer_steps = 0
        self._window_finite: Tensor | None = None  # deferred check: the window's passes
        self._flag: Tensor | None = None  # deferred check: host copy of "not finite"
        self._pending: tuple | None = None
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)

    # ------------------------------------------------------------------ placement
    def to_device(self, obj: Any, non_blocking: bool | None = None) -> Any:
        """``obj`` on :attr:`device` (:func:`~contrastkit.engine.device.to_device`); pinned
        CPU tensors are copied with ``non_blocking=True`` by default."""
        if non_blocking is None:
            non_blocking = self.device.type == "cuda"
        return to_device(obj, self.device, non_blocking)

    def place(self, tensors: list[Any], fraction: float = 0.25) -> list[Any]:
        """A dataset's tensors on the device once, if they fit (always on the CPU; on a GPU,
        up to ``fraction`` of its memory; objects with ``.to`` of unknown size are moved),
        else CPU tensors in pinned memory, from which :meth:`to_device` copies each batch
        asynchronously."""
        if self.device.type == "cpu":
            return tensors
        size = sum(t.numel() * t.element_size() for t in tensors if isinstance(t, Tensor))
        limit = (
            torch.cuda.get_device_properties(self.device).total_memory * fraction
            if self.device.type == "cuda"
            else float("inf")
        )
        if size <= limit:
            return [self.to_device(t, non_blocking=False) for t in tensors]
        return [t.pin_memory() if isinstance(t, Tensor) else t for t in tensors]

    def format_input(self, x: Any) -> Any:
        """``x`` in channels_last format if that is on and ``x`` is a 4-D tensor, else ``x``
        (also before :meth:`prepare` has decided a ``None``)."""
        if self.channels_last and isinstance(x, Tensor) and x.dim() == 4:
            return x.contiguous(memory_format=torch.channels_last)
        return x

    def prepare(self, model: nn.Module) -> nn.Module:
        """``model`` moved to the device (and to channels_last when on); returned. A
        ``channels_last`` of ``None`` is decided here, once: on for a CUDA device and a
        model with a ``Conv2d``."""
        if self.channels_last is None:
            self.channels_last = channels_last_default(self.device, model)
        model = model.to(self.device)
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        return model

    def compile_modules(self, *modules: nn.Module | None) -> None:
        """``torch.compile`` each given module in place (``nn.Module.compile``) when
        ``compile`` is on. The trainer gives the network parts (encoder, heads), not the
        loss. Every registered loss, and every framework's whole forward, compiles into one
        graph, compiled once (``tests/losses/test_compile.py``,
        ``tests/frameworks/test_compile.py``). On the CPU a compiled loss call took
        0.46-1.05x its eager host time (docs/results/performance-log.md); whether compiling the
        loss too pays on a GPU is not measured yet
        (``benchmarks/gpu_loss_bench.py --backends torch,compiled``)."""
        if not self.compile:
            return
        for module in modules:
            if module is not None:
                module.compile(mode=self.compile_mode)

    def prepare_views(self, *augments: object) -> None:
        """Ready the view generators for this engine, through what each offers:
        ``check_device(device)`` (a ``ValueError`` before training where it cannot run)
        and, when ``compile`` is on, ``compile()``
        (:meth:`contrastkit.images.ImageAugment.compile`: the views through
        ``torch.compile`` in the default mode; CUDA graphs stay with the network)."""
        for augment in augments:
            if callable(getattr(augment, "check_device", None)):
                augment.check_device(self.device)
            if self.compile and callable(getattr(augment, "compile", None)):
                augment.compile()

    def begin_step(self) -> None:
        """Mark the start of a training step. Under a compile mode that replays CUDA
        graphs (``reduce-overhead``, ``max-autotune``) this tells torch the previous step's
        graph outputs are no longer read, so the next replay may reuse their memory
        (``torch.compiler.cudagraph_mark_step_begin``); otherwise nothing."""
        if self.compile and self.compile_mode in ("reduce-overhead", "max-autotune"):
            torch.compiler.cudagraph_mark_step_begin()

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """The forward pass's autocast context (a no-op under fp32): wrap the framework's
        whole forward (network and loss) in it; the losses leave it themselves."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)

    # --------------------------------------------------------------------- steps
    @property
    def will_step(self) -> bool:
        """Whether the next :meth:`backward_step` ends an accumulation window."""
        return self.window_passes + 1 >= self.grad_accum

    def no_sync(
        self, ddp: nn.Module | None, force_step: bool = False
    ) -> contextlib.AbstractContextManager[Any]:
        """DDP's ``no_sync`` for backward passes that will not step (gradient accumulation);
        ``force_step`` as given to the coming :meth:`backward_step`."""
        if ddp is None or force_step or self.will_step or not hasattr(ddp, "no_sync"):
            return contextlib.nullcontext()
        return ddp.no_sync()

    def backward_step(
        self,
        loss: Tensor,
        optimizer: torch.optim.Optimizer,
        params: Iterable[Tensor] | None = None,
        describe: Callable[[], str] | None = None,
        force_step: bool = False,
        scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    ) -> bool:
        """Backward ``loss`` (the gradients are cleared first at the start of each
        accumulation window); every ``grad_accum``-th call (or with ``force_step``), clip,
        check and take the optimiser step. Returns whether the
        optimiser stepped. ``describe()`` adds context (the loss's diagnostics) to the
        error raised for a non-finite loss or gradient. ``scheduler`` is stepped after each
        optimiser step (also when fp16's scaler skipped one, so the schedule follows the
        step count)."""
        self.check_pending()
        if self.window_passes == 0:  # the first of a window
            optimizer.zero_grad(set_to_none=True)
            self._window_finite = None
        self.micro_steps += 1
        self.window_passes += 1
        scaled = loss / self.grad_accum if self.grad_accum > 1 else loss
        if self.scaler is not None:
            scaled = self.scaler.scale(scaled)
        scaled.backward()
        finite = torch.isfinite(loss.detach())
        deferred = self.scaler is None and skips_on_device(optimizer)
        if not (force_step or self.window_passes == self.grad_accum):
            if deferred:  # checked with the window's step
                window = self._window_finite
                self._window_finite = finite if window is None else window & finite
            elif not bool(finite):  # the only host read of a window's earlier passes
                self._fail(f"non-finite loss {float(loss.detach())}", describe, optimizer)
            return False
        if self._window_finite is not None:
            finite = finite & self._window_finite
        grads = [p for p in self._params(optimizer, params) if p.grad is not None]
        passes, self.window_passes = self.window_passes, 0
        if passes < self.grad_accum and grads:  # a window ended early: the mean of its passes
            torch._foreach_mul_([p.grad for p in grads], self.grad_accum / passes)
        if self.scaler is not None:
            self.scaler.unscale_(optimizer)
        if self.clip_grad is not None or self.scaler is None:
            norms = torch._foreach_norm([p.grad for p in grads]) if grads else []
            norm = _total_norm(norms)
        if self.clip_grad is not None and grads:  # as clip_grad_norm_, the norms kept
            coef = torch.clamp(self.clip_grad / (norm + 1e-6), max=1.0)
            torch._foreach_mul_([p.grad for p in grads], coef)
        if self.scaler is None:  # loss and gradient in one host read (fp16: the scaler's)
            finite = finite & torch.isfinite(norm).to(finite.device)
        if deferred:
            self._step_unless_non_finite(optimizer, finite, loss.detach(), norm)
        elif not bool(finite):
            if not bool(torch.isfinite(loss.detach())):
                self._fail(f"non-finite loss {float(loss.detach())}", describe, optimizer)
            bad = [n for n in norms if not math.isfinite(float(n))]  # counted before clipping
            self._fail(
                f"non-finite gradient (norm {float(norm)}; {len(bad)} of {len(grads)} "
                f"parameter tensors affected) after a finite loss {float(loss.detach())}",
                describe,
                optimizer,
            )
        elif self.scaler is not None:
            self.scaler.step(optimizer)
            self.scaler.update()
        else:
            optimizer.step()
        self.optimizer_steps += 1
        if scheduler is not None:
            with warnings.catch_warnings():  # a step skipped by the scaler is not a misuse
                warnings.filterwarnings(
                    "ignore", "Detected call of `lr_scheduler.step", UserWarning
                )
                scheduler.step()
        return True

    def _step_unless_non_finite(
        self, optimizer: torch.optim.Optimizer, finite: Tensor, loss: Tensor, norm: Tensor
    ) -> None:
        """The optimiser step without a host read: the optimiser skips the whole update
        on the device where ``finite`` is false (``found_inf``, as ``GradScaler`` drives
        it), and the flag goes to host memory in a non-blocking copy that
        :meth:`check_pending` reads at the next call, by which time the device is past it."""
        optimizer.found_inf = (~finite).to(torch.float32)  # type: ignore[attr-defined]
        optimizer.grad_scale = None  # type: ignore[attr-defined]
        try:
            optimizer.step()
        finally:
            del optimizer.found_inf, optimizer.grad_scale  # type: ignore[attr-defined]
        if self._flag is None:
            self._flag = torch.empty((), dtype=torch.bool, pin_memory=self.device.type == "cuda")
        self._flag.copy_(~finite, non_blocking=True)
        event = None
        if self._flag.is_pinned() and finite.device.type == "cuda":
            event = torch.cuda.Event()
            event.record()
        self._pending = (event, loss, norm, optimizer, self.micro_steps, self.optimizer_steps)

    def check_pending(self) -> None:
        """Raise :class:`NonFiniteError` if the last deferred step (see
        :meth:`_step_unless_non_finite`) had a non-finite loss or gradient. Its update was
        skipped, so the parameters are those before it. :meth:`backward_step` calls it
        first; a loop calls it once more after its last step (before a checkpoint)."""
        if self._pending is None:
            return
        event, loss, norm, optimizer, micro, step = self._pending
        self._pending = None
        if event is not None:
            event.synchronize()  # the device is past that step already: no stall
        if not bool(self._flag):  # host memory
            return
        optimizer.zero_grad(set_to_none=True)
        raise NonFiniteError(
            f"non-finite loss or gradient (loss {float(loss)}, gradient norm {float(norm)}) "
            f"at backward pass {micro} (optimiser step {step + 1}); the optimiser "
            "skipped that update, so the parameters are those before it. Lower the learning "
            "rate, clip gradients (--clip-grad) or use fp32/bf16 instead of fp16"
        )

    @staticmethod
    def _params(optimizer: torch.optim.Optimizer, params: Iterable[Tensor] | None) -> list[Tensor]:
        if params is not None:
            return list(params)
        return [p for group in optimizer.param_groups for p in group["params"]]

    def _fail(
        self,
        what: str,
        describe: Callable[[], str] | None,
        optimizer: torch.optim.Optimizer,
    ) -> None:
        """Raise :class:`NonFiniteError`; the gradients are cleared first (the checks run
        after ``backward``, so that one host read covers loss and gradient), leaving the
        parameters and gradients as before the failed pass's window."""
        optimizer.zero_grad(set_to_none=True)
        self.window_passes = 0  # the window's gradients are gone
        where = f"backward pass {self.micro_steps} (optimiser step {self.optimizer_steps + 1})"
        extra = f"; {describe()}" if describe is not None else ""
        raise NonFiniteError(
            f"{what} at {where}, before the optimiser step{extra}. Lower the learning "
            "rate, clip gradients (--clip-grad) or use fp32/bf16 instead of fp16"
        )

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Step counters and the loss scaler's state, for checkpoints."""
        state: dict[str, Any] = {
            "micro_steps": self.micro_steps,
            "optimizer_steps": self.optimizer_steps,
        }
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.micro_steps = int(state.get("micro_steps", 0))
        self.optimizer_steps = int(state.get("optimizer_steps", 0))
        if self.scaler is not None and "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])

    def describe(self) -> dict[str, Any]:
        """The settings ``final.json`` records."""
        return {
            "precision": self.precision,
            "compile": self.compile,
            "compile_mode": self.compile_mode,
            "channels_last": self.channels_last,
            "grad_accum": self.grad_accum,
            "clip_grad": self.clip_grad,
        }


def _total_norm(norms: list[Tensor]) -> Tensor:
    """Global L2 norm of tensors whose L2 norms are ``norms`` (``_foreach_norm``'s), as
    ``torch.nn.utils.get_total_norm`` of torch ≥ 2.6."""
    if not norms:
        return torch.zeros(())
    return torch.linalg.vector_norm(torch.stack([n.to(norms[0].device) for n in norms]))


@contextlib.contextmanager
def eval_mode(module: nn.Module) -> Iterator[nn.Module]:
    """``module`` in eval mode without gradient for the block; the mode is restored after."""
    was = module.training
    module.eval()
    try:
        with torch.no_grad():
            yield module
    finally:
        module.train(was)
