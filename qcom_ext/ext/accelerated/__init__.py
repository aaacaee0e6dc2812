"""``cl_qcom_accelerated_image_ops``, the texture-unit filters, on the host side.

* :mod:`.support`: the path the ops take on a context's devices and the limits there;
* :mod:`.filter_spec` and :mod:`.weights`: weight images (checked, then uploaded) and box
  sizes, the arguments of the builtins;
* :mod:`.plan` and :mod:`.whole_image`: the whole-image convolution, box filter and block
  match (``qcom_ext.image_ops``), with the RGBA image helpers of :mod:`.rgba`;
* :mod:`.points`: the builtins evaluated at arbitrary points (tests and selftest).
"""
