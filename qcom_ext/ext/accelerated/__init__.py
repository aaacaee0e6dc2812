"""``cl_qcom_accelerated_image_ops``: weight images and box sizes (:mod:`.weights`),
and the whole-image convolution, box filter and block match (:mod:`.whole_image`)."""
