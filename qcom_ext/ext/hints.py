"""Hint levels and their tokens: Qualcomm context hints and Khronos queue hints.

A hint is given as ``"high" | "normal" | "low"`` (any case) or as the token of its
own kind; everything else is a :class:`ConfigError` naming what is accepted.

>>> parse("perf_hint", "HIGH"), parse("priority_hint", 0x40CC), parse("priority", None)
('high', 'low', None)
>>> hex(token("perf_hint", "normal")), token("throttle", "normal")
('0x40c4', 2)
>>> token_name("priority", "normal")
'CL_QUEUE_PRIORITY_MED_KHR'
"""

from __future__ import annotations

from typing import Any

from qcom_ext.binding.lib import C
from qcom_ext.errors import ConfigError

LEVELS = ("high", "normal", "low")

# kind -> token names for (high, normal, low). "perf_hint"/"priority_hint" are the
# context properties (qcom-extensions.md §1, §2); "throttle"/"priority" the Khronos
# queue properties (portable-interop.md §2.2: MED is the Khronos "normal").
_TOKENS = {
    "perf_hint": ("CL_PERF_HINT_HIGH_QCOM", "CL_PERF_HINT_NORMAL_QCOM", "CL_PERF_HINT_LOW_QCOM"),
    "priority_hint": (
        "CL_PRIORITY_HINT_HIGH_QCOM",
        "CL_PRIORITY_HINT_NORMAL_QCOM",
        "CL_PRIORITY_HINT_LOW_QCOM",
    ),
    "priority": (
        "CL_QUEUE_PRIORITY_HIGH_KHR",
        "CL_QUEUE_PRIORITY_MED_KHR",
        "CL_QUEUE_PRIORITY_LOW_KHR",
    ),
    "throttle": (
        "CL_QUEUE_THROTTLE_HIGH_KHR",
        "CL_QUEUE_THROTTLE_MED_KHR",
        "CL_QUEUE_THROTTLE_LOW_KHR",
    ),
}

# Khronos queue property key of each queue-hint kind.
QUEUE_KEYS = {"priority": "CL_QUEUE_PRIORITY_KHR", "throttle": "CL_QUEUE_THROTTLE_KHR"}


def token_name(kind: str, level: str) -> str:
    """The ``CL_*`` name of ``level`` for hint ``kind``."""
    return _TOKENS[kind][LEVELS.index(level)]


def token(kind: str, level: str) -> int:
    """The value of ``level`` for hint ``kind``."""
    return int(getattr(C, token_name(kind, level)))


def parse(kind: str, value: Any) -> str | None:
    """``"high"``, ``"normal"``, ``"low"`` or None (no hint); ConfigError otherwise."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in LEVELS:
        return value.strip().lower()
    if isinstance(value, int) and not isinstance(value, bool):
        for level in LEVELS:
            if value == token(kind, level):
                return level
    accepted = ", ".join(f"{token_name(kind, lv)} ({token(kind, lv):#x})" for lv in LEVELS)
    raise ConfigError(
        f"{kind}={value!r} is not accepted; expected 'high', 'normal' or 'low' "
        f"(any case), or one of {accepted}"
    )
