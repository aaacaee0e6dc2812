"""Bad-input fuzzing (the rule and the settings: tests/fuzzing.py): image formats
and shapes, weight images, box sizes and the accelerated image ops.
"""

from __future__ import annotations

import math
import warnings

import fuzz_oracles as oracle
import fuzzing
import numpy as np
from fuzzing import FUZZ, counted, either, typed_error
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import qcom_ext
from qcom_ext import ConfigError, DeviceCaps, WeightImage
from qcom_ext.binding.lib import C
from qcom_ext.reference import accelerated as accelerated_reference

# pytest finds fixtures among a module's names: the shared ones, from tests/fuzzing.py
ctx, queue, report_counts = fuzzing.ctx, fuzzing.queue, fuzzing.report_counts


# ---- image formats and shapes ------------------------------------------------------------


def _spelt(name: str):
    """Spellings the parser accepts: CL_ or not, any case, surrounding blanks."""
    return st.tuples(st.sampled_from(["", "CL_", "cl_", " "]), st.booleans()).map(
        lambda p: p[0] + (name.upper() if p[1] else name)
    )


def _tokens() -> set[int]:
    return {int(getattr(C, f"CL_{n}")) for n in (*oracle.ORDERS, *oracle.TYPES)}


@FUZZ
@given(
    order=either(st.sampled_from(oracle.ORDERS), st.text(alphabet="RGBAx_", min_size=1)),
    data_type=either(st.sampled_from(oracle.TYPES), st.text(alphabet="UNORMINT_8", max_size=6)),
    form=st.sampled_from(["string", "names", "tokens", "pyopencl", "junk"]),
    junk=st.one_of(
        st.none(),
        st.floats(),
        st.text(max_size=6),
        st.integers(-5, 2**70),
        st.lists(st.integers(), max_size=3),
    ),
    data=st.data(),
)
def test_image_format_parsing(order, data_type, form, junk, data):
    counted("image formats")
    from qcom_ext import parse_image_format

    o_name = {o.upper(): o for o in oracle.ORDERS}.get(order.upper())
    t_name = {t.upper(): t for t in oracle.TYPES}.get(data_type.upper())
    if form == "junk":
        value = junk
        if isinstance(junk, int):  # a pair of unknown tokens (outside the Qualcomm ranges)
            assume(not 0x4130 <= junk <= 0x415F and junk not in _tokens())
            value = (junk, junk)
        typed_error(lambda: parse_image_format(value), kinds=(ConfigError,))
        return
    if form in ("string", "names"):
        spelt = data.draw(_spelt(order)), data.draw(_spelt(data_type))
        value = "/".join(spelt) if form == "string" else spelt
        if o_name is None or t_name is None:
            bad = spelt[0] if o_name is None else spelt[1]
            typed_error(lambda: parse_image_format(value), bad.strip(), kinds=(ConfigError,))
            return
    elif o_name is None or t_name is None:
        return  # tokens exist only for known names
    elif form == "tokens":
        value = (getattr(C, f"CL_{o_name}"), np.int64(getattr(C, f"CL_{t_name}")))
    else:
        import pyopencl as cl

        value = cl.ImageFormat(getattr(C, f"CL_{o_name}"), getattr(C, f"CL_{t_name}"))
    layout = oracle.format_layout(o_name, t_name)
    if layout is None:
        typed_error(
            lambda: parse_image_format(value), f"CL_{o_name}/CL_{t_name}", kinds=(ConfigError,)
        )
        return
    fmt = parse_image_format(value)
    tokens = (getattr(C, f"CL_{o_name}"), getattr(C, f"CL_{t_name}"))
    assert (fmt.channel_order, fmt.channel_data_type) == tokens
    assert (fmt.channels, fmt.element_size, fmt.vendor) == (*layout, False)


_SIZE = st.one_of(
    st.integers(-2, 0),
    st.sampled_from([8193, 2**40, 2**64, 2**70]),
    st.floats(1, 4),
    st.booleans(),
    st.just("8"),
    st.none(),
)
_GOOD = st.one_of(st.integers(1, 24), st.integers(1, 8).map(np.int32))
_SHAPE = either(
    st.one_of(st.tuples(_GOOD, _GOOD), st.lists(_GOOD, min_size=2, max_size=2)),
    st.one_of(st.tuples(_GOOD | _SIZE, _SIZE), st.lists(_GOOD, max_size=3), _SIZE),
)
_FLAGS = either(
    st.sampled_from(["read_write", "READ-ONLY", " write_only"]),
    st.sampled_from(["rw", "", 7, -1, 2**70, None]),
)


@FUZZ
@given(
    shape=_SHAPE,
    flags=_FLAGS,
    seed=st.integers(0, 2**32 - 1),
    fmt=st.sampled_from(
        ["RGBA/UNORM_INT8", "R/FLOAT", "RG/UNSIGNED_INT16", "RGBA/HALF_FLOAT", "BGRA/SIGNED_INT8"]
    ),
)
def test_image_creation(ctx, queue, shape, fmt, seed, flags):
    counted("image shapes and dtypes")
    import pyopencl as cl

    limit = qcom_ext.probe().limits.image2d_max_size or (2**64, 2**64)
    sizes = list(shape) if isinstance(shape, (tuple, list)) else None
    if not isinstance(flags, str) or flags.strip().lower().replace("-", "_") not in (
        "read_write",
        "read_only",
        "write_only",
    ):
        named = repr(flags) if isinstance(flags, str) else "flags"
        typed_error(
            lambda: qcom_ext.create_image(ctx, (4, 4), fmt, flags=flags),
            named,
            kinds=(ConfigError,),
        )
        return
    if not (sizes and len(sizes) == 2 and all(oracle.is_int(s) and s >= 1 for s in sizes)):
        typed_error(lambda: qcom_ext.create_image(ctx, shape, fmt), kinds=(ConfigError,))
        return
    width, height = (int(s) for s in sizes)
    if width > limit[0] or height > limit[1]:
        too_big = str(width if width > limit[0] else height)
        typed_error(lambda: qcom_ext.create_image(ctx, shape, fmt), too_big, kinds=(ConfigError,))
        return
    listed = cl.get_supported_image_formats(
        ctx, cl.mem_flags.READ_WRITE, cl.mem_object_type.IMAGE2D
    )
    wanted = qcom_ext.parse_image_format(fmt)
    if not any((f.channel_order, f.channel_data_type) == wanted for f in listed):
        typed_error(
            lambda: qcom_ext.create_image(ctx, shape, fmt), str(wanted), kinds=(ConfigError,)
        )
        return
    image = qcom_ext.create_image(ctx, shape, fmt, flags=flags)
    element = image.format.element_size
    pixels = np.random.default_rng(seed).integers(0, 256, height * width * element, np.uint8)
    image.write(
        queue, pixels.view(image.format.dtype).reshape(height, width, *image.format.pixel_shape)
    )
    assert image.shape == (width, height) and not image.compressed
    assert image.read(queue).view(np.uint8).tobytes() == pixels.tobytes()  # bit for bit


# ---- weight images, box sizes, the accelerated image ops ---------------------------------


@st.composite
def weight_inputs(draw):
    """Consistent weight-image arguments, then (half the time) one of them spoilt."""
    separable = draw(st.booleans())
    phases = draw(st.sampled_from([1, 2, 4] if separable else [1, 4, 16]))
    n, m = draw(st.integers(1, 16)), draw(st.integers(1, 16))
    shape = (phases, 2, n) if separable else (phases, m, n)
    dtype = np.dtype(draw(st.sampled_from([np.float64, np.float32, np.int16])))
    if dtype.kind == "f":
        weights = draw(hnp.arrays(dtype, shape, elements=st.floats(-100, 100, width=32)))
    else:
        weights = draw(hnp.arrays(dtype, shape, elements=st.integers(-100, 100)))
    filter_size = None
    if separable and draw(st.booleans()):
        short = draw(st.integers(1, n))
        filter_size = draw(st.sampled_from([(n, short), (short, n)]))
        weights[:, 0, filter_size[0] :] = 0
        weights[:, 1, filter_size[1] :] = 0
    if phases == 1 and draw(st.booleans()):
        weights = weights[0]  # one phase, given without its axis
    fx, fy = filter_size or ((n, n) if separable else (n, m))
    center = (draw(st.integers(0, fx - 1)), draw(st.integers(0, fy - 1)))
    storage = draw(st.sampled_from([np.float16, np.float32]))
    args = {
        "weights": weights,
        "separable": separable,
        "filter_size": filter_size,
        "center": center,
        "storage": storage,
    }
    if draw(st.booleans()):
        spoil = draw(st.sampled_from(sorted(_SPOILERS)))
        args[spoil] = draw(_SPOILERS[spoil])
    return args


_SPOILERS = {
    "separable": st.sampled_from([1, "yes", None]),
    "storage": st.sampled_from([np.float64, np.int8, "junk", None]),
    "center": st.sampled_from([(-1, 0), (0, 17), (0.5, 0), (True, 0), None, (1,), "0,0"]),
    "filter_size": st.sampled_from([(0, 1), (17, 17), (1.0, 2), (True, 2), "3x3", 4, (40, 1)]),
    "weights": st.one_of(
        hnp.arrays(
            np.float64,
            st.sampled_from(
                [(3,), (0, 3), (3, 0, 3), (3, 3, 3), (2, 2, 2, 2), (1, 17, 3), (256, 1, 1)]
            ),
        ),
        st.sampled_from(
            [
                np.full((3, 3), np.nan),
                np.full((3, 3), np.inf),
                np.full((3, 3), 7e4),
                np.full((3, 3), 1e39),
                np.ones((3, 3), bool),
                np.ones((3, 3), complex),
                np.array([[1, "a"]], object),
                "weights",
                None,
            ]
        ),
    ),
}


@FUZZ
@given(args=weight_inputs(), phase=st.sampled_from([0, 1, 0.5, True, -1, 99, "0", None]))
def test_weight_images(ctx, queue, args, phase):
    counted("weight images")
    import pyopencl as cl

    expected = oracle.weight_oracle(**args)
    weights, storage = args.pop("weights"), args.pop("storage")

    def make():
        return WeightImage(ctx, weights, dtype=storage, **args)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy cast warning is no answer either
        if expected is None:
            typed_error(make, kinds=(ConfigError,))
            return
        image = make()
    array, (fx, fy) = expected
    stored = array.astype(storage)
    assert image.weights.dtype == np.dtype(storage) and np.array_equal(image.weights, stored)
    assert (image.filter_size, image.center, image.num_phases) == (
        (fx, fy),
        args["center"],
        len(array),
    )
    for p in range(len(array)):
        slice_ = stored[p].astype(np.float64)
        want = np.outer(slice_[1, :fy], slice_[0, :fx]) if args["separable"] else slice_
        assert np.array_equal(image.kernel_2d(p), want)
    if not (oracle.is_int(phase) and 0 <= phase < len(array)):
        typed_error(lambda: image.kernel_2d(phase), repr(phase), kinds=(ConfigError,), main=False)
    # what the portable qcom_convolve_imagef reads: a header texel pair, then the weights
    width, height = image.image.width, image.image.height
    texels = np.empty((height, width, 4), np.float32)
    cl.enqueue_copy(queue, texels, image.image, origin=(0, 0), region=(width, height))
    flat = texels.reshape(height, width * 4)
    per_axis = len(array) if args["separable"] else math.isqrt(len(array))
    header = [fx, fy, *args["center"], len(array), float(args["separable"]), per_axis, 1.0]
    assert flat[0, :8].tolist() == header and height == 1 + len(array) * array.shape[1]
    rows = stored.astype(np.float32).reshape(-1, array.shape[2])
    assert np.array_equal(flat[1:, : array.shape[2]], rows)
    image.release()


_NUMBER = either(
    st.one_of(
        st.floats(0.01, 8),
        st.integers(1, 8),
        st.integers(1, 8).map(np.int64),
        st.floats(0.5, 8).map(np.float16),
    ),
    st.sampled_from(
        [
            0,
            -2,
            0.0,
            -0.5,
            1e-50,
            16.000001,
            17,
            1e39,
            10**400,
            math.nan,
            math.inf,
            True,
            "2",
            None,
            [2],
            2j,
        ]
    ),
)


@FUZZ
@given(width=_NUMBER, height=_NUMBER, native=st.booleans())
def test_box_sizes(width, height, native):
    counted("box sizes")
    from qcom_ext.device.caps import Limits

    if native:
        limits = (16, 8)
        device = DeviceCaps.from_info(
            extensions="cl_qcom_accelerated_image_ops",
            disabled=(),
            limits=Limits(hof_max_filter_size=limits),
        )
    else:
        limits = oracle.FALLBACK_MAX_FILTER
        device = DeviceCaps.from_info(extensions="", disabled=())
    w, h = oracle.float32_of(width), oracle.float32_of(height)
    if not all(
        v is not None and math.isfinite(v) and 0 < v <= top
        for v, top in zip((w, h), limits, strict=True)
    ):
        typed_error(
            lambda: qcom_ext.box_size(width, height, device=device), "box", kinds=(ConfigError,)
        )
        return
    size = qcom_ext.box_size(width, height, device=device)
    assert (float(size["x"]), float(size["y"]), size.nbytes) == (w, h, 8)


_PIXELS = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 9), st.integers(1, 9), st.just(4)),
    elements=st.floats(-4, 4, width=32),
)


@FUZZ
@given(
    size=st.sampled_from([(2, 2), (3, 1.5)]),
    pixels=_PIXELS,
    method=st.sampled_from(["tiled", "blocked"]),
)
def test_box_filter_image(ctx, queue, size, pixels, method):
    counted("box filter image")
    from qcom_ext.ext.accelerated import whole_image as image_ops

    src = image_ops.rgba_image(ctx, pixels)
    dst = image_ops.empty_rgba_image(ctx, pixels.shape[1], pixels.shape[0])
    image_ops.box_filter_image(queue, src, size, dst, method=method).wait()
    want = accelerated_reference.box_filter_image(pixels, size)
    np.testing.assert_allclose(image_ops.read_rgba_image(queue, dst), want, rtol=1e-5, atol=1e-5)


@FUZZ
@given(
    weights=hnp.arrays(np.float64, (3, 3), elements=st.floats(-2, 2)),
    pixels=_PIXELS,
    method=st.sampled_from(["tiled", "blocked", "per_pixel"]),
)
def test_convolve_image(ctx, queue, weights, pixels, method):
    counted("convolve image")
    from qcom_ext.ext.accelerated import whole_image as image_ops

    image = WeightImage(ctx, weights, center=(1, 1), dtype=np.float32)
    src = image_ops.rgba_image(ctx, pixels)
    dst = image_ops.empty_rgba_image(ctx, pixels.shape[1], pixels.shape[0])
    image_ops.convolve_image(queue, src, image, dst, method=method).wait()
    want = accelerated_reference.convolve_image(pixels, image.kernel_2d(0), (1, 1))
    np.testing.assert_allclose(image_ops.read_rgba_image(queue, dst), want, rtol=1e-5, atol=1e-5)
