"""The arguments of the accelerated image ops' builtins (``cl_qcom_accelerated_image_ops``).

* :class:`WeightImage` holds a convolution filter for ``qcom_convolve_imagef``: natively a
  ``CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM`` image made from a ``cl_weight_image_desc_qcom``
  through cffi; elsewhere an RGBA float image that the compat header's portable
  ``qcom_convolve_imagef`` reads (a header texel pair with filter size, centre, flags and
  phases, then the weights). Either way pass ``weight_image.image`` as the kernel argument
  declared ``__read_only qcom_weight_image_t``.
* :func:`box_size` is the ``qcom_box_size_t`` kernel argument (``cl_box_filter_size_qcom``:
  two floats, width then height).
* Both are checked against :func:`~qcom_ext.ext.accelerated.support.accelerated_limits`:
  the device's filter, phase and block-matching limits natively, the portable code's
  ``FALLBACK_LIMITS`` elsewhere (:mod:`.filter_spec` checks a filter before anything is
  allocated).

Conventions (the spec's worked examples hold on every path; docs/accelerated_image_ops.md
has the details and where hardware may differ):

* Weights are ``(fy, fx)`` or ``(phases, fy, fx)``; separable ones ``(2, n)`` or
  ``(phases, 2, n)`` with row 0 horizontal, row 1 vertical, ``n = max(fx, fy)``.
  Tap ``(i, j)`` (column ``i``, row ``j``) multiplies pixel ``b - center + (i, j)``,
  ``b = floor(coord + 0.5)`` the pixel the coordinate lies in: a correlation, the spec's
  4x3 filter with centre (1, 1) at (4, 2) covers source x 3..6, y 1..3.
* A 2-D weight image with ``P * P`` slices has ``P`` phases per axis; the phase of an axis
  is ``min(floor(frac(coord) * P), P - 1)`` (the offset from pixel ``b``'s centre in
  ``1 / P`` steps, modulo ``P``) and 2-D slice ``py * P + px`` is used. A
  separable one has ``P`` slices; the horizontal row of slice ``px`` and the vertical row
  of slice ``py`` are used.
* Weights are rounded to ``dtype`` (half by default, as the spec's samples store them)
  on every path, so the fallback computes with the same weight values a native
  ``CL_HALF_FLOAT`` weight image holds.
* Pixels are read through the kernel's sampler at their centres, ``(i + 0.5, j + 0.5)``,
  so its addressing mode (clamp, clamp-to-edge, none) applies as in ``read_imagef``.
  The box filter weighs pixel ``(i, j)``, spanning ``[i - 0.5, i + 0.5]`` on each axis, by
  the area a box centred on ``coord`` covers, divided by ``w * h``; block matching starts
  the target block at ``floor(target_coord + 0.5)``. One pixel convention: pixel ``i``
  spans ``[i - 0.5, i + 0.5)`` for all three builtins (docs/accelerated_image_ops.md).

Where real hardware could differ (the spec settles only integer coordinates, which all its
examples use): ``floor(coord)`` instead of the pixel a fractional coordinate lies in,
another phase mapping or the ``px * P + py`` slice order, reduced-precision accumulation
in the texture unit.
``qcom-ext selftest`` runs the same checks natively and with the portable code forced and
prints where the two differ.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> sobel = qcom_ext.WeightImage(ctx, [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], center=(1, 1))
>>> sobel.filter_size, sobel.center, sobel.num_phases, sobel.path in ("native", "fallback")
((3, 3), (1, 1), 1, True)
>>> separable = qcom_ext.WeightImage(ctx, [[-1, 0, 1], [1, 2, 1]], center=(1, 1),
...                                  separable=True)
>>> separable.separable, separable.filter_size
(True, (3, 3))
>>> qcom_ext.WeightImage(ctx, np.ones((3, 3)), center=(3, 1))
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: center (3, 1) is outside the 3x3 filter: ...
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from qcom_ext.binding.lib import C, check_handle, driver, ffi, handle_int
from qcom_ext.errors import ConfigError
from qcom_ext.ext.accelerated.filter_spec import DTYPES, FilterSpec, is_int, validate_filter
from qcom_ext.ext.accelerated.support import accelerated_limits, context_path
from qcom_ext.ext.images.image import supported_image_formats
from qcom_ext.ext.memory.formats import ImageFormat

if TYPE_CHECKING:
    import pyopencl

__all__ = ["WeightImage", "box_size", "fallback_layout"]

_HEADER_VERSION = 1.0


def _positive_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"box {name} must be a number, got {value!r}")
    try:
        with np.errstate(over="ignore"):  # beyond float32: inf, refused below
            number = float(np.float32(value))
    except OverflowError:  # an int beyond any float
        number = math.inf
    if not math.isfinite(number) or number <= 0:
        raise ConfigError(f"box {name} must be a finite number above 0, got {value!r}")
    return number


def box_size(width: float, height: float, *, device: Any = None) -> np.ndarray:
    """The ``qcom_box_size_t`` kernel argument: ``cl_box_filter_size_qcom`` as a numpy
    scalar of pyopencl's ``float2`` (8 bytes, width then height), passable to kernels.

    ``device`` (a Device, Context or DeviceCaps; default: the default device) sets the
    limit: sizes over its ``CL_DEVICE_HOF_MAX_FILTER_SIZE_X/Y_QCOM`` (or the fallback's
    16) raise ConfigError.

    >>> from qcom_ext.device.caps import DeviceCaps
    >>> size = box_size(2, 1.5, device=DeviceCaps.from_info(extensions="", disabled=()))
    >>> float(size["x"]), float(size["y"]), size.nbytes
    (2.0, 1.5, 8)
    """
    import pyopencl.cltypes as cltypes

    w, h = _positive_float("width", width), _positive_float("height", height)
    limits = accelerated_limits(device)
    if limits.max_filter_size is not None:
        max_x, max_y = limits.max_filter_size
        if w > max_x or h > max_y:
            where = (
                "the device's CL_DEVICE_HOF_MAX_FILTER_SIZE_X/Y_QCOM"
                if limits.native
                else "the portable implementation's limit"
            )
            raise ConfigError(f"box size {w:g}x{h:g} is larger than {max_x}x{max_y}, {where}")
    return cltypes.make_float2(w, h)


def _braced(fmt: ImageFormat) -> str:
    """``{CL_R, CL_HALF_FLOAT}``: a format as the spec writes it."""
    return f"{{{fmt.order_name}, {fmt.type_name}}}"


def _wrap_image(handle: int) -> Any:
    import pyopencl

    return pyopencl.Image.from_int_ptr(handle, retain=False)  # our reference is handed over


def _create_native(context: Any, spec: FilterSpec) -> tuple[Any, ImageFormat]:
    wanted = ImageFormat(C.CL_R, getattr(C, DTYPES[spec.weights.dtype]))
    kind = C.CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM
    formats = supported_image_formats(context, flags="read_only", image_type=kind)
    if wanted not in formats:
        listed = ", ".join(_braced(f) for f in formats) or "none"
        raise ConfigError(
            f"the driver lists no {_braced(wanted)} weight-image format "
            f"(CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM formats: {listed}); "
            "pass the other dtype (numpy.float16 or numpy.float32)"
        )
    desc = ffi.new("cl_weight_image_desc_qcom *")  # zero-filled, as the spec's memset
    desc.image_desc.image_type = C.CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM
    desc.image_desc.image_width, desc.image_desc.image_height = spec.filter_size
    desc.image_desc.image_array_size = spec.num_phases
    desc.weight_desc.center_coord_x, desc.weight_desc.center_coord_y = spec.center
    desc.weight_desc.flags = C.CL_WEIGHT_IMAGE_SEPARABLE_QCOM if spec.separable else 0
    image_format = ffi.new("cl_image_format *", wanted)
    host = np.ascontiguousarray(spec.weights)
    err = ffi.new("cl_int *")
    handle = driver.clCreateImage(
        ffi.cast("cl_context", handle_int(context)),
        C.CL_MEM_READ_ONLY | C.CL_MEM_COPY_HOST_PTR,
        image_format,
        ffi.cast("cl_image_desc *", desc),
        ffi.from_buffer(host),
        err,
    )
    fx, fy = spec.filter_size
    detail = (
        f"weight image {fx}x{fy}, {spec.num_phases} phase(s), centre {spec.center}, "
        f"{'separable' if spec.separable else '2-D'}, format {_braced(wanted)}"
    )
    value = check_handle(handle, err, "clCreateImage", detail, driver.clReleaseMemObject)
    try:
        return _wrap_image(value), wanted
    except BaseException:
        driver.clReleaseMemObject(handle)
        raise


def fallback_layout(spec: FilterSpec) -> np.ndarray:
    """The RGBA float texels of the portable weight image (height, width, 4)."""
    fx, fy = spec.filter_size
    phases, rows, cols = spec.weights.shape
    width = max(2, -(-cols // 4))
    texels = np.zeros((1 + phases * rows, width * 4), np.float32)
    texels[0, :8] = (
        fx,
        fy,
        *spec.center,
        phases,
        float(spec.separable),
        spec.phases_per_axis,
        _HEADER_VERSION,
    )
    texels[1:, :cols] = spec.weights.astype(np.float32).reshape(phases * rows, cols)
    return texels.reshape(1 + phases * rows, width, 4)


def _create_fallback(context: Any, spec: FilterSpec) -> tuple[Any, ImageFormat]:
    import pyopencl as cl

    texels = fallback_layout(spec)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    mf = cl.mem_flags
    image = getattr(cl, "create_image", cl.Image)(  # create_image: pyopencl 2024.3+
        context,
        mf.READ_ONLY | mf.COPY_HOST_PTR,
        fmt,
        shape=(texels.shape[1], texels.shape[0]),
        hostbuf=texels,
    )
    return image, ImageFormat(C.CL_RGBA, C.CL_FLOAT)


class WeightImage:
    """A convolution filter for ``qcom_convolve_imagef`` (see the module docstring).

    ``WeightImage(context, weights, *, center, separable=False, dtype=numpy.float16,
    filter_size=None)``: ``weights`` as described above; ``center`` = (cx, cy) in filter
    taps; ``filter_size`` = (fx, fy) only for separable filters whose two directions
    differ in length (default: both ``n``). Bad input raises ConfigError naming it;
    driver failures raise CLError and leave nothing allocated.

    Attributes: ``image`` (the ``pyopencl.Image`` to pass as the kernel argument),
    ``path`` ("native" or "fallback"), ``filter_size``, ``center``, ``separable``,
    ``num_phases``, ``phases_per_axis``, ``dtype``, ``weights`` (the stored values,
    shape (phases, rows, cols), read-only), ``image_format`` and ``limits``.
    """

    def __init__(
        self,
        context: pyopencl.Context,
        weights: Any,
        *,
        center: tuple[int, int],
        separable: bool = False,
        dtype: Any = np.float16,
        filter_size: tuple[int, int] | None = None,
    ) -> None:
        self.limits = accelerated_limits(context)
        spec = validate_filter(weights, center, separable, dtype, filter_size, self.limits)
        self.path = context_path(context)
        create = _create_native if self.path == "native" else _create_fallback
        self.image, self.image_format = create(context, spec)
        stored = spec.weights.copy()
        stored.flags.writeable = False
        self.weights: np.ndarray = stored
        self.filter_size: tuple[int, int] = spec.filter_size
        self.center: tuple[int, int] = spec.center
        self.separable: bool = spec.separable
        self.num_phases: int = spec.num_phases
        self.phases_per_axis: int = spec.phases_per_axis
        self.dtype: np.dtype = spec.weights.dtype
        self.context = context

    def kernel_2d(self, phase: int = 0) -> np.ndarray:
        """The 2-D filter of one slice as float64 (fy, fx): the outer product for a
        separable slice (vertical x horizontal).

        >>> import pyopencl as cl
        >>> from qcom_ext import probe
        >>> ctx = cl.Context([probe().device()])
        >>> WeightImage(ctx, [[1, 2], [3, 4]], center=(0, 0), separable=True).kernel_2d()
        array([[3., 6.],
               [4., 8.]])
        """
        if not is_int(phase) or not 0 <= phase < self.num_phases:
            raise ConfigError(f"phase {phase!r} is not an int in 0..{self.num_phases - 1}")
        fx, fy = self.filter_size
        slice_ = self.weights[phase].astype(np.float64)
        if self.separable:
            return np.outer(slice_[1, :fy], slice_[0, :fx])
        return slice_

    def release(self) -> None:
        """Release the image now (idempotent, as ``Recording.release`` is; garbage
        collection does it otherwise)."""
        if getattr(self, "_released", False):
            return
        self._released = True
        self.image.release()

    def __repr__(self) -> str:
        fx, fy = self.filter_size
        kind = "separable" if self.separable else "2-D"
        return (
            f"<WeightImage {kind} {fx}x{fy} centre {self.center} "
            f"{self.num_phases} phase(s) {self.dtype.name} ({self.path})>"
        )
