"""One launch configuration of a whole-image op, as a tuner times it: the keyword options
that select it, and the kernel, arguments and sizes they launch.

The ops of :mod:`qcom_ext.ext.accelerated.whole_image` and :mod:`qcom_ext.ext.images.upscale`
list theirs (``filter_variants``, ``upscale2x_variants``);
:func:`qcom_ext.ops.variant_tuning.choose_variant` times them through
:func:`qcom_ext.tune`'s cache and returns the fastest, whose :attr:`Variant.options` go back
to the op (``method=``, ``block=``, ``local_size=``).

>>> positive_pair("block", (2, 8))
(2, 8)
>>> positive_pair("local_size", (0, 8))
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: local_size must be a pair of positive integers, got (0, 8)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qcom_ext.errors import ConfigError

__all__ = ["Variant", "positive_pair"]


@dataclass(frozen=True)
class Variant:
    """``options``: the op's keyword arguments that select this variant; ``kernel`` with
    ``args`` over ``global_size`` (a multiple of ``local_size``; ``local_size`` None: the
    driver chooses) is exactly what the op enqueues with them."""

    options: dict[str, Any]
    kernel: Any
    args: tuple[Any, ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None

    def describe(self) -> str:
        """``method block BXxBY local LXxLY`` (what is set)."""
        parts = [str(self.options.get("method"))]
        for key, word in (("block", "block"), ("local_size", "local")):
            value = self.options.get(key)
            if value is not None:
                parts.append(f"{word} {'x'.join(str(v) for v in value)}")
        return " ".join(parts)


def positive_pair(name: str, value: Any) -> tuple[int, int]:
    """``value`` as a pair of positive ints, or ConfigError naming ``name``."""
    try:
        a, b = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a pair of positive integers, got {value!r}") from None
    if a < 1 or b < 1 or (a, b) != tuple(value):
        raise ConfigError(f"{name} must be a pair of positive integers, got {value!r}")
    return a, b
