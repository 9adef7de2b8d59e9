"""One training engine for every modality: device, precision, compilation, optimisers,
schedules and the optimiser step (:class:`Engine`)."""

from .core import COMPILE_MODES, PRECISIONS, Engine, NonFiniteError, eval_mode
from .cpu_precision import EmulatedPrecisionWarning
from .device import (
    DEVICES,
    cat_rows,
    device_info,
    host_floats,
    rng_state,
    select_device,
    set_rng_state,
    to_device,
)
from .kernels import BlockingTransfers, KernelCounter
from .lars import LARS
from .optim import OPTIMIZERS, build_optimizer, param_groups, trainable
from .schedules import (
    LENGTH_DEPENDENT,
    LR_SCALINGS,
    SCHEDULES,
    build_schedule,
    multiplier,
    scale_lr,
)

__all__ = [
    "COMPILE_MODES",
    "DEVICES",
    "LARS",
    "LENGTH_DEPENDENT",
    "LR_SCALINGS",
    "OPTIMIZERS",
    "PRECISIONS",
    "SCHEDULES",
    "BlockingTransfers",
    "EmulatedPrecisionWarning",
    "Engine",
    "KernelCounter",
    "NonFiniteError",
    "build_optimizer",
    "build_schedule",
    "cat_rows",
    "device_info",
    "eval_mode",
    "host_floats",
    "multiplier",
    "param_groups",
    "rng_state",
    "scale_lr",
    "select_device",
    "set_rng_state",
    "to_device",
    "trainable",
]
