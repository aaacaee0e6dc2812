"""What the convolution layers share: :class:`ConvOptions`, checked once, and the value
checks behind it.

Every layer (``DepthwiseConv2d``, ``Conv2d``, ``TiledConv2d``, ``Conv2d1x1``,
``Conv2dInt8``) takes its options either as keywords (``stride=2, activation="relu6"``)
or as one ``options=ConvOptions(...)``; keywords given beside ``options`` replace its
fields. A layer refuses the options it has no use for (a 1x1 conv has no padding).

>>> from qcom_ext import ops
>>> options = ops.ConvOptions(stride=2, padding=(1, 0), activation="relu6")
>>> options.stride, options.padding, options.activation_code
((2, 2), (1, 0), 2)
>>> options.replace(dtype="float16").dtype              # a checked copy
dtype('float16')
>>> ops.ConvOptions(stride=0)
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: stride must be at least 1, not 0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._casting import storage_dtype

__all__ = ["ACTIVATIONS", "OPTION_NAMES", "ConvOptions", "Geometry", "settled"]

_FLOAT32 = np.dtype(np.float32)
#: Fused activations: name -> the kernels' ACTIVATION code.
ACTIVATIONS = {None: 0, "relu": 1, "relu6": 2, "leaky_relu": 3}


def is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def pair(value: Any, what: str, minimum: int) -> tuple[int, int]:
    """(height, width) from an int or a pair of ints, each at least ``minimum``."""
    if is_int(value):
        values: tuple[Any, ...] = (value, value)
    elif isinstance(value, (tuple, list, np.ndarray)):
        values = tuple(value)
    else:
        values = ()
    if len(values) != 2 or not all(is_int(v) for v in values):
        raise ConfigError(f"{what} must be an int or a pair of ints, not {value!r}")
    if min(values) < minimum:
        raise ConfigError(f"{what} must be at least {minimum}, not {value!r}")
    return int(values[0]), int(values[1])


def choice(value: Any, allowed: Sequence[int], what: str) -> int:
    """``value`` if it is an int (not a bool or a float that equals one) in ``allowed``."""
    if not is_int(value) or int(value) not in allowed:
        raise ConfigError(f"{what} must be one of {tuple(allowed)}, not {value!r}")
    return int(value)


def slope_value(slope: Any) -> np.float32:
    """``negative_slope`` as the float32 the kernels take: a finite real number."""
    if isinstance(slope, (bool, np.bool_)) or not isinstance(
        slope, (int, float, np.integer, np.floating)
    ):
        raise ConfigError(f"negative_slope must be a finite number, not {slope!r}")
    with np.errstate(over="ignore"):
        value = np.float32(slope)
    if not np.isfinite(value):
        raise ConfigError(f"negative_slope must be finite (as float32), not {slope!r}")
    return value


def activation_code(activation: Any) -> int:
    if not (activation is None or isinstance(activation, str)) or activation not in ACTIVATIONS:
        names = ", ".join(repr(a) for a in ACTIVATIONS)
        raise ConfigError(f"activation {activation!r} is not one of {names}")
    return ACTIVATIONS[activation]


@dataclass(frozen=True)
class Geometry:
    """Kernel size, stride, padding and dilation of a 2D convolution, as (h, w) pairs."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """(OH, OW) for an input of (height, width); a clear error when it is empty."""
        sizes = []
        for size, k, s, p, d in zip(
            (height, width), self.kernel, self.stride, self.padding, self.dilation, strict=True
        ):
            sizes.append((size + 2 * p - d * (k - 1) - 1) // s + 1)
        if min(sizes) < 1:
            raise ConfigError(
                f"a {height} x {width} input is smaller than the {self.kernel} kernel "
                f"(dilation {self.dilation}, padding {self.padding}): the output is empty"
            )
        return sizes[0], sizes[1]

    def defines(self) -> dict[str, int]:
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.stride, self.dilation
        return {"KH": kh, "KW": kw, "SH": sh, "SW": sw, "DH": dh, "DW": dw}


@dataclass(frozen=True, kw_only=True)
class ConvOptions:
    """The options every convolution layer shares (see the module), checked when made.

    ``stride``, ``padding``, ``dilation``: an int or an (h, w) pair (kept as pairs);
    ``activation``: None, "relu", "relu6" or "leaky_relu" (with ``negative_slope``);
    ``dtype``: the storage of weights and tensors, float32 or float16 (float64 becomes
    float32). Bad values raise :class:`~qcom_ext.ConfigError` naming them.
    """

    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    activation: str | None = None
    negative_slope: float = 0.01
    dtype: np.dtype = _FLOAT32

    def __post_init__(self) -> None:
        activation_code(self.activation)
        checked = {
            "stride": pair(self.stride, "stride", 1),
            "padding": pair(self.padding, "padding", 0),
            "dilation": pair(self.dilation, "dilation", 1),
            "negative_slope": float(slope_value(self.negative_slope)),
            "dtype": storage_dtype(self.dtype, "dtype"),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def activation_code(self) -> int:
        """The kernels' ACTIVATION code (:data:`ACTIVATIONS`)."""
        return ACTIVATIONS[self.activation]

    @property
    def slope(self) -> np.float32:
        """``negative_slope`` as the float32 kernel argument."""
        return np.float32(self.negative_slope)

    def replace(self, **changes: Any) -> ConvOptions:
        """A copy with ``changes``, checked like a new one."""
        return dataclasses.replace(self, **changes)

    def geometry(self, kernel: tuple[int, int]) -> Geometry:
        """The :class:`Geometry` of a ``kernel`` (KH, KW) with these options."""
        return Geometry(kernel, self.stride, self.padding, self.dilation)

    def defines(self) -> dict[str, Any]:
        """The ``-D`` defines every convolution kernel takes: activation and storage."""
        return {"ACTIVATION": self.activation_code, "STORAGE_HALF": self.dtype == np.float16}

    @classmethod
    def of(
        cls,
        options: ConvOptions | None,
        settings: Mapping[str, Any],
        where: str,
        takes: Sequence[str] | None = None,
    ) -> ConvOptions:
        """A layer's options: ``options`` with the keyword ``settings`` replacing fields.

        ``takes``: the fields the layer ``where`` uses (default: all); the others must
        keep their defaults.
        """
        merged = settled(cls, options, settings, where, takes)
        default = cls()
        for name in OPTION_NAMES:
            if name not in (takes or OPTION_NAMES) and getattr(merged, name) != getattr(
                default, name
            ):
                raise ConfigError(
                    f"{where} takes no {name} (the options have {name}={getattr(merged, name)!r})"
                )
        return merged


#: The fields of :class:`ConvOptions`, in order.
OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ConvOptions))

_Settings = TypeVar("_Settings")


def settled(
    cls: type[_Settings],
    given: _Settings | None,
    settings: Mapping[str, Any],
    where: str,
    takes: Sequence[str] | None = None,
) -> _Settings:
    """``given`` (an instance of the frozen dataclass ``cls``, or None for a new one) with
    the keyword ``settings`` replacing its fields; ``takes`` limits the names allowed."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    allowed = names if takes is None else list(takes)
    label = cls.__name__
    if given is not None and not isinstance(given, cls):
        raise ConfigError(f"{where}: expected a {label}, not {given!r}")
    unknown = [name for name in settings if name not in allowed]
    if unknown:
        raise ConfigError(
            f"{where} takes no {', '.join(map(repr, unknown))}; its {label} fields are "
            f"{', '.join(allowed)}"
        )
    if given is not None:
        return dataclasses.replace(given, **settings) if settings else given  # type: ignore[type-var]
    required = [
        f.name
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING and f.name not in settings
    ]
    if required:
        raise ConfigError(f"{where} needs {', '.join(required)} (or a {label})")
    return cls(**settings)
