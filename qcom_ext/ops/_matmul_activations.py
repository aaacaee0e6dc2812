"""How a :class:`~qcom_ext.ops.Linear` call takes x: in float, or quantized to q8_0 with
integer dot products (``activation_format``), and ``activation_format="auto"``'s choice
between the two by measurement.

The GEMV kernel a call of ``rows`` rows runs (:data:`~qcom_ext.ops._matmul_programs.
GEMV_KINDS`): "float" for float activations; with q8_0 activations "fused" (one launch
quantizes x in local memory and takes the integer products) up to ``fused_rows`` rows,
"launches" (the quantizer, then the integer GEMV) above.

"auto" (any weights; the integer path needs q8_0 or q4_0 ones): a call of up to
:data:`~qcom_ext.ops._matmul_programs.GEMV_MAX_ROWS` rows runs the integer path where
:meth:`Linear.tune <qcom_ext.ops.Linear.tune>` measured it faster than the float one for
this device, layer and row count, and the float path otherwise (untuned, so results do
not change with timing); above, the float GEMM, which reads each weight once a tile of
rows. The choice is remembered in the variant store (:mod:`qcom_ext.ext.variant_store`,
beside the tuning cache) through the one chooser, :func:`~qcom_ext.ops.variant_tuning.
choose`; each kernel's local size is tuned on the way, as for any kernel.

>>> check_format("auto", "f32"), check_format(None, "q4_0")
('auto', None)
>>> check_format("q8", "q4_0")
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: activation_format 'q8': expected None or one of ('q8_0', 'auto')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from qcom_ext.errors import ConfigError
from qcom_ext.ext.program.shared import kernels_digest
from qcom_ext.ext.variant import Variant
from qcom_ext.ext.variant_store import VariantKey, cached_variant
from qcom_ext.ops._matmul_programs import GEMV_MAX_ROWS
from qcom_ext.ops.quant import FORMATS as QUANT_FORMATS
from qcom_ext.ops.tuning import TuningResult
from qcom_ext.ops.variant_tuning import choose

__all__ = ["ACTIVATION_FORMATS", "AutoChoice", "check_format", "gemv_kind"]

#: ``activation_format`` values besides None (x kept in float).
ACTIVATION_FORMATS = ("q8_0", "auto")
#: The remembered choices of "auto": float activations, q8_0 activations.
FLOAT, INTEGER = (0,), (1,)
_CHOICES = frozenset({FLOAT, INTEGER})
#: The variant store's name of the choice.
OP = "linear_activations"


def check_format(activation_format: Any, weight_format: str) -> str | None:
    """``activation_format`` checked against the weights' format (a ConfigError naming
    the value: "q8_0" takes q8_0 or q4_0 weights only)."""
    if activation_format is not None and activation_format not in ACTIVATION_FORMATS:
        raise ConfigError(
            f"activation_format {activation_format!r}: expected None or one of "
            f"{ACTIVATION_FORMATS}"
        )
    if activation_format == "q8_0" and weight_format not in QUANT_FORMATS:
        raise ConfigError(
            f"activation_format {activation_format!r} takes q8_0 or q4_0 weights, not "
            f"{weight_format}"
        )
    return activation_format


def gemv_kind(integer: bool, rows: int, fused_rows: int) -> str:
    """The GEMV kernel of a call of ``rows`` rows (see the module)."""
    if not integer:
        return "float"
    return "fused" if rows <= fused_rows else "launches"


class AutoChoice:
    """ "auto" of one layer: the key of its choice per row count and x dtype, the lookup
    and the measurement."""

    def __init__(self, device: Any, weight_format: str, path: str, shape: Sequence[int]) -> None:
        self.integer_possible = weight_format in QUANT_FORMATS
        n, k = shape
        self._fields = (
            device.platform.name.strip(),
            device.name.strip(),
            device.driver_version.strip(),
            OP,
            kernels_digest("matmul_gemv.cl", "matmul_gemv_q8.cl"),
            f"weight_format={weight_format} path={path} N={n} K={k}",
        )
        self._keys: dict[tuple[int, bool], VariantKey] = {}

    def key(self, rows: int, x_half: bool) -> VariantKey:
        """The variant store's key for ``rows`` rows of x (half or float)."""
        found = self._keys.get((rows, x_half))
        if found is None:
            found = VariantKey(*self._fields, (int(rows), 2 if x_half else 4))
            self._keys[(rows, x_half)] = found
        return found

    def tunable(self, rows: int) -> bool:
        """Whether "auto" has a choice to make for ``rows`` rows."""
        return self.integer_possible and rows <= GEMV_MAX_ROWS

    def integer(self, rows: int, x_half: bool) -> bool:
        """Whether a call of ``rows`` rows runs the integer path: a remembered choice says
        so (a miss, or an entry naming anything else, is the float path)."""
        if not self.tunable(rows):
            return False
        return cached_variant(self.key(rows, x_half), _CHOICES) == INTEGER

    def tune(
        self,
        queue: Any,
        plans: dict[tuple[int, ...], tuple[Any, Sequence[int], Sequence[Any]]],
        candidates: dict[tuple[int, ...], Any],
        key: VariantKey,
        budget_s: float,
        options: dict[str, Any],
    ) -> TuningResult:
        """Time each plan (choice -> (Gemv, global size, arguments)) at its best local
        size among ``candidates[choice]`` (``budget_s`` seconds each) and remember the
        faster under ``key``; the winner's TuningResult."""
        variants = [
            Variant(
                {},
                gemv.launcher.kernel,
                tuple(args),
                tuple(global_size),
                "tuned",
                key=key,
                choice=choice,
                identity=gemv.launcher.identity,
                pad_global=True,
                candidates=candidates[choice],
            )
            for choice, (gemv, global_size, args) in plans.items()
        ]
        best, _ = choose(
            variants, queue=queue, budget_s=math.inf, local_budget_s=budget_s, **options
        )
        if best is None:
            raise ConfigError("neither the float nor the integer GEMV ran on this device")
        return best.report
