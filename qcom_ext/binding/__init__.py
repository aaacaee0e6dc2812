"""The binding layer: one cffi FFI over ``cdefs/``, the OpenCL library loader, the entry
points (core and ``cl_qcom_*``) and the ``clGet*Info`` queries. Imports nothing above it."""
