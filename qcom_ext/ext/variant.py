"""One candidate of variant tuning (:class:`Variant`), the one type the chooser
(:func:`qcom_ext.ops.variant_tuning.choose`) times: the kernel, arguments and sizes a
variant launches, what the op is given back to run it, and where the choice is remembered.

Its producers: the whole-image ops of :mod:`qcom_ext.ext.accelerated.whole_image` and
:mod:`qcom_ext.ext.images.upscale` list theirs (``filter_variants``,
``upscale2x_variants``: each a method, block and work-group, ``options`` their keyword
arguments), and the layers of :mod:`qcom_ext.ops._variants` make one per variant of their
space (``choice`` its ints, the local size tuned). The chosen one is remembered under its
``key`` in :mod:`qcom_ext.ext.variant_store`; a whole-image op called with ``tuned=True``
runs it (:func:`tuned_options`).

>>> positive_pair("block", (2, 8))
(2, 8)
>>> positive_pair("local_size", (0, 8))
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: local_size must be a pair of positive integers, got (0, 8)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from qcom_ext.errors import ConfigError
from qcom_ext.ext.variant_store import Choice, VariantKey, cached_variant

__all__ = ["CHOSEN", "Variant", "describe", "launch_tuned", "positive_pair", "tuned_options"]

log = logging.getLogger(__name__)

#: The keyword options of a whole-image op that a remembered choice sets.
CHOSEN = ("method", "block", "local_size")


@dataclass(frozen=True)
class Variant:
    """``options``: the op's keyword arguments that select this variant; ``kernel`` with
    ``args`` over ``global_size`` is exactly what the op enqueues with them, at
    ``local_size``: a tuple (``global_size`` a multiple of it), None (the driver chooses)
    or ``"tuned"`` (the op launches the local size :func:`qcom_ext.tune` finds among
    ``candidates``, the driver's choice included: a layer's variant).

    ``key``: where the chooser remembers the choice (None: it is returned only);
    ``choice``: what is remembered and given back to the op (default: ``options``);
    ``identity`` and ``pad_global``: the tuning cache's identity of the kernel (None:
    read from it) and whether its global size may be padded, as the op launches it.
    """

    options: dict[str, Any]
    kernel: Any
    args: tuple[Any, ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | str | None
    key: VariantKey | None = None
    choice: Choice | None = None
    identity: Any = field(default=None, compare=False)
    pad_global: bool = False
    candidates: Any = None

    def remembered(self) -> Choice:
        """What the store keeps for this variant: ``choice``, else ``options``."""
        return self.options if self.choice is None else self.choice

    def describe(self) -> str:
        """``method block BXxBY local LXxLY`` (what is set; a layer's: its ints)."""
        if self.choice is not None and not self.options:
            return "variant " + ",".join(str(v) for v in self.choice)
        return describe(self.options)


def describe(options: dict[str, Any]) -> str:
    """``method block BXxBY local LXxLY`` of a whole-image op's options (what is set).

    >>> describe({"method": "strips", "block": (1, 8), "local_size": (16, 8)})
    'strips block 1x8 local 16x8'
    """
    parts = [str(options.get("method"))]
    for key, word in (("block", "block"), ("local_size", "local")):
        value = options.get(key)
        if value is not None:
            parts.append(f"{word} {'x'.join(str(v) for v in value)}")
    return " ".join(parts)


class _Options:
    """``choice in _Options()``: a dict of the whole-image options (:data:`CHOSEN`) only
    (whether the op can run it is known when it launches)."""

    def __contains__(self, choice: object) -> bool:
        return isinstance(choice, dict) and set(choice) <= set(CHOSEN) and "method" in choice


def tuned_options(key: Callable[[], VariantKey], given: dict[str, Any]) -> list[dict[str, Any]]:
    """The keyword options to try, in order, for a whole-image op called with
    ``tuned=True``: the choice remembered for ``key()`` (if any), then ``given`` (the
    op's defaults). ``given`` must leave :data:`CHOSEN` unset (None): the choice sets them.
    The op launches the first that it can (a remembered choice it refuses is a miss)."""
    named = [name for name in CHOSEN if given.get(name) is not None]
    if named:
        raise ConfigError(
            f"tuned=True takes method, block and local_size from the tuning cache; "
            f"do not pass {', '.join(named)} as well"
        )
    found = cached_variant(key(), _Options())
    return [given] if found is None else [{**given, **found}, given]


def launch_tuned(launch: Callable[..., Any], tries: list[dict[str, Any]]) -> Any:
    """``launch(**options)`` for the first of ``tries`` (from :func:`tuned_options`) that
    it accepts; the last one's ConfigError when none is accepted."""
    for options in tries[:-1]:
        try:
            return launch(**options)
        except ConfigError as exc:  # a remembered choice this device or image cannot run
            log.info("remembered variant %s not used: %s", options, exc)
    return launch(**tries[-1])


def positive_pair(name: str, value: Any) -> tuple[int, int]:
    """``value`` as a pair of positive ints, or ConfigError naming ``name``."""
    try:
        a, b = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a pair of positive integers, got {value!r}") from None
    if a < 1 or b < 1 or (a, b) != tuple(value):
        raise ConfigError(f"{name} must be a pair of positive integers, got {value!r}")
    return a, b
