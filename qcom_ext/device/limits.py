"""Device limits: the :class:`Limits` record, derived from the registry's limit queries.

Each :class:`~qcom_ext.device.registry.Extension` declares the limits its paths depend
on (:class:`~qcom_ext.device.registry.LimitQuery`); :data:`CORE_LIMITS` adds the core
ones no single extension owns. :data:`LIMIT_QUERIES` is the probe's query table and
:class:`Limits` has one field per query (None where the query was not made), so a new
extension's limit is declared once, in its registry entry.

>>> Limits(onchip_global_mem_size=3 << 20).onchip_global_mem_size
3145728
>>> [q.field for q in LIMIT_QUERIES][:3]
['max_mem_alloc_size', 'image2d_max_size', 'max_num_sub_groups']
"""

from __future__ import annotations

import dataclasses
from typing import Any

from qcom_ext.device.registry import REGISTRY, LimitQuery

__all__ = ["CORE_LIMITS", "LIMIT_QUERIES", "Limits"]

#: Core (and Khronos) limits every path may read, asked before the extensions' own.
CORE_LIMITS: tuple[LimitQuery, ...] = (
    LimitQuery("max_mem_alloc_size", ("CL_DEVICE_MAX_MEM_ALLOC_SIZE",), needs=None),
    LimitQuery(
        "image2d_max_size",
        ("CL_DEVICE_IMAGE2D_MAX_WIDTH", "CL_DEVICE_IMAGE2D_MAX_HEIGHT"),
        needs="images",
    ),
    # cl_khr_subgroups / OpenCL 2.1+: whether the driver can report sub-group sizes
    LimitQuery("max_num_sub_groups", ("CL_DEVICE_MAX_NUM_SUB_GROUPS",), needs="cl_khr_subgroups"),
    # NVIDIA: (major, minor); the portable dot8 builtins use PTX dp4a from 6.1 on
    LimitQuery(
        "nv_compute_capability",
        ("CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV", "CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV"),
        needs="cl_nv_device_attribute_query",
    ),
)

#: Every query the probe makes, in order: the core ones, then each extension's.
LIMIT_QUERIES: tuple[LimitQuery, ...] = CORE_LIMITS + tuple(
    query for extension in REGISTRY.values() for query in extension.limits
)


def _annotation(query: LimitQuery) -> str:
    if query.reader == "clml":
        return "tuple[tuple[int, int], ...] | None"
    if query.reader == "sizes" or len(query.tokens) > 1:
        return "tuple[int, ...] | None"
    return "int | None"


def _items(self: Any) -> list[tuple[str, Any]]:
    """``(field, value)`` for every limit, in query order."""
    return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)]


def _to_dict(self: Any) -> dict[str, Any]:
    """A JSON-ready dict (tuples as lists)."""
    return {name: _listed(value) for name, value in self.items()}


def _listed(value: Any) -> Any:
    return [_listed(v) for v in value] if isinstance(value, tuple) else value


def _broken(self: Any) -> tuple[tuple[str, str], ...] | None:
    """Compatibility, read-only: the broken list of the report these limits belong to
    (:attr:`DeviceCaps.broken <qcom_ext.device.caps.DeviceCaps.broken>`, where it lives
    now: it is not a limit); None for limits that belong to no report."""
    return self.__dict__.get("_broken")


def _make_limits() -> type:
    names = [query.field for query in LIMIT_QUERIES]
    if len(set(names)) != len(names):
        raise ValueError(f"two limit queries fill the same field: {sorted(names)}")
    return dataclasses.make_dataclass(
        "Limits",
        [(q.field, _annotation(q), dataclasses.field(default=None)) for q in LIMIT_QUERIES],
        frozen=True,
        namespace={
            "__doc__": "Device limits read where the extension that defines them is present "
            "(else None); one field per query of the registry (LIMIT_QUERIES).",
            "__module__": __name__,
            "items": _items,
            "to_dict": _to_dict,
            "broken": property(_broken),
        },
    )


Limits: Any = _make_limits()
