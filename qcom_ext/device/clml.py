"""The CLML (cl_qcom_ml_ops) interface versions a driver offers.

Only the bootstrap query is used (qcom-extensions.md section 17): qcom_ext does not
drive CLML operators; its own convolution kernels (:mod:`qcom_ext.ops`) are the portable
fallback for ML convolutions. The call pattern is the one TVM uses: ask for the count
with NULL arrays, then fill arrays of that size.

>>> from qcom_ext.binding.lib import driver
>>> def fake(majors, minors, capacity, count):
...     if count != ffi.NULL:
...         count[0] = 2
...     if capacity >= 2:
...         majors[0], minors[0], majors[1], minors[1] = 2, 0, 3, 1
...     return 0
>>> with driver.substitute(clQueryMLInterfaceVersionsQCOM=fake):
...     ml_interface_versions(0)
((2, 0), (3, 1))
"""

from __future__ import annotations

from typing import Any

from qcom_ext.binding.lib import check, driver, ffi
from qcom_ext.errors import EntryPointMissing

__all__ = ["ml_interface_versions"]

ENTRY_POINT = "clQueryMLInterfaceVersionsQCOM"


def ml_interface_versions(platform: Any) -> tuple[tuple[int, int], ...]:
    """(major, minor) of every CLML interface the driver of ``platform`` offers, in the
    driver's order (TVM uses the last). Raises CLError or EntryPointMissing."""
    query = driver.extension_function(platform, ENTRY_POINT)
    if query is None:
        raise EntryPointMissing(f"the driver does not provide {ENTRY_POINT}")
    count = ffi.new("cl_uint *")
    check(query(ffi.NULL, ffi.NULL, 0, count), ENTRY_POINT)
    if count[0] == 0:
        return ()
    majors = ffi.new("cl_int[]", count[0])
    minors = ffi.new("cl_int[]", count[0])
    check(query(majors, minors, count[0], ffi.NULL), ENTRY_POINT)
    return tuple((int(majors[i]), int(minors[i])) for i in range(count[0]))
