"""The device layer: the extension registry and its path rule, a device's capabilities
(:class:`~qcom_ext.device.caps.DeviceCaps`), the probe and the cached verdicts."""
