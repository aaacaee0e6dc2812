"""Neural-network ops for mobile GPUs: convolutions, matmul, quantized weights, tuning.

* **Convolutions** (the fallback for cl_qcom_ml_ops's convolutions): layout conversion
  (:func:`to_image`, :func:`from_image`) between NCHW/NHWC tensors and the RGBA image
  layout; depthwise, 1x1, KxK and int8 convolutions in fp32 and fp16 storage with fused
  bias and activation. Prepared layers (:class:`DepthwiseConv2d`, :class:`Conv2d1x1`,
  ...) upload their weights once and can be tuned (``layer.tune``); their shared options
  (stride, padding, dilation, activation, storage) come as keywords or as one
  :class:`ConvOptions`.
* **Matmul** (:func:`matmul`, :class:`Linear`, :class:`BufferMatrix`): ``y = x @ W.T +
  bias``, GEMV and GEMM on f32, f16, q8_0 and q4_0 weights.
* **Quantized weights** in ggml's q8_0 and q4_0 (:func:`quantize`, :func:`dequantize`,
  :class:`QuantizedWeights`), loaded from and saved to GGUF files (:func:`load_weight`,
  :func:`save_weights`, :func:`weight_names`; the optional ``gguf`` package).
* **Tuning**: ``qcom_ext.tune`` (:mod:`qcom_ext.ops.tuning`, any kernel's local size) and
  its cache, and the one variant chooser (:mod:`qcom_ext.ops.variant_tuning`).

Every op takes numpy arrays (and returns numpy arrays) or device tensors (and returns
device tensors), and uses a tuned local size where ``qcom_ext.tune`` cached one (the
driver's choice otherwise).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext import ops
>>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
>>> x = ops.to_image(queue, np.ones((1, 8, 6, 6), np.float32))   # NCHW -> RGBA image
>>> dw = ops.DepthwiseConv2d(queue, np.ones((8, 1, 3, 3), np.float32), padding=1,
...                          activation="relu6")
>>> y = dw(queue, x)                                   # stays on the device
>>> y.shape, float(ops.from_image(queue, y).max())     # 9 taps, clipped at 6
((1, 8, 6, 6), 6.0)
"""

from qcom_ext.ops._tensor import BufferTensor, ImageTensor
from qcom_ext.ops.conv_1x1 import Conv2d1x1, conv2d_1x1
from qcom_ext.ops.conv_int8 import Conv2dInt8, Quantisation, conv2d_int8
from qcom_ext.ops.depthwise import DepthwiseConv2d, depthwise_conv2d
from qcom_ext.ops.gguf_weights import load_weight, save_weights, weight_names
from qcom_ext.ops.kxk import Conv2d, TiledConv2d, conv2d
from qcom_ext.ops.layout import from_image, to_image

# matmul (issue 17): y = x @ W.T + bias, GEMV and GEMM on f32/f16/q8_0/q4_0 weights
from qcom_ext.ops.matmul import (
    ACTIVATION_FORMATS,
    MATMUL_PATHS,
    WEIGHT_FORMATS,
    BufferMatrix,
    Linear,
    matmul,
)
from qcom_ext.ops.options import ACTIVATIONS, ConvOptions
from qcom_ext.ops.quant import (
    QuantizedWeights,
    dequantize,
    quantize,
    quantize_q4_0,
    quantize_q8_0,
)

__all__ = [
    "ACTIVATIONS",
    "BufferTensor",
    "Conv2d",
    "Conv2d1x1",
    "Conv2dInt8",
    "ConvOptions",
    "DepthwiseConv2d",
    "ImageTensor",
    "Quantisation",
    "QuantizedWeights",
    "TiledConv2d",
    "conv2d",
    "conv2d_1x1",
    "conv2d_int8",
    "depthwise_conv2d",
    "dequantize",
    "from_image",
    "load_weight",
    "quantize",
    "quantize_q4_0",
    "quantize_q8_0",
    "save_weights",
    "to_image",
    "weight_names",
]
__all__ += [  # matmul
    "ACTIVATION_FORMATS",
    "MATMUL_PATHS",
    "WEIGHT_FORMATS",
    "BufferMatrix",
    "Linear",
    "matmul",
]
