"""Diagnostics kept as device tensors: what a loss reports about its last call (MACL's τ_a,
CACR's parts, AMCL's temperatures, ...) without making the host wait for the device."""

from __future__ import annotations

from torch import Tensor

from ..engine import host_floats


class DeviceDiagnostics:
    """Mixin of a loss whose last call's diagnostics are 0-d device tensors in ``_last``, a
    plain dict (storing tensors as module attributes goes through ``nn.Module.__setattr__``
    at every call) whose keys, the diagnostics' names, exist from construction
    (``torch.compile`` guards on them: a dict that gained keys at the first call was
    compiled twice). A loss whose diagnostics are derived overrides
    :meth:`diagnostic_tensors` instead (AMCL)."""

    _last: dict[str, Tensor | None]

    def diagnostic_tensors(self) -> dict[str, Tensor]:
        """The last call's diagnostics as 0-d device tensors, reading nothing (what the
        trainer keeps per step); empty before the first call."""
        if any(value is None for value in self._last.values()):
            return {}
        return dict(self._last)  # type: ignore[arg-type]

    def last_float(self, name: str) -> float | None:
        """Diagnostic ``name`` of the last call as a float (one read; ``None`` before it)."""
        value = self._last[name]
        return None if value is None else float(value)

    def diagnostics(self) -> dict[str, float]:
        """:meth:`diagnostic_tensors` as floats, read in one copy (empty before a call)."""
        values = self.diagnostic_tensors()
        return dict(zip(values, host_floats(list(values.values())), strict=True))
