"""Layers whose kernel comes in compile-time variants (:class:`VariantLayer`): the
variant each input shape runs with, and the tuner's search over them.

A layer made with a variant (``pixels=8``, ``tile=(4, 8)``) always runs it. One made
without runs, for each input shape, the variant :meth:`VariantLayer.tune` found fastest
for that shape on that device (remembered in :mod:`qcom_ext.ext.variant_store`), else
its default variant. Tuning searches the layer's variant space through the one chooser
(:func:`qcom_ext.ops.variant_tuning.choose`); each variant's local size is tuned too, as
for any kernel.
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any

from qcom_ext.errors import ConfigError
from qcom_ext.ext.program.shared import kernels_digest
from qcom_ext.ext.variant import Variant as Candidate
from qcom_ext.ext.variant_store import VariantKey, cached_variant
from qcom_ext.ops._layer import Layer
from qcom_ext.ops._programs import Launcher
from qcom_ext.ops.tuning import TuningResult
from qcom_ext.ops.variant_tuning import choose

__all__ = ["Plan", "Variant", "VariantLayer"]

#: A layer's variant: the ints that select it (the layer's own meaning, e.g. (pixels, rows)).
Variant = tuple[int, ...]

#: (launcher, global size, kernel arguments, local size: "tuned" or a required tuple)
Plan = tuple[Launcher, Sequence[int], list[Any], Any]


class VariantLayer(Layer):
    """A :class:`Layer` with variants. Subclasses set ``fixed`` (the variant asked for,
    or None) and ``op_name``, build launchers in :meth:`build` and implement
    :meth:`space`, :meth:`default_variant`, :meth:`plan` and :meth:`key_options`."""

    op_name: str
    fixed: Variant | None
    files: tuple[str, ...]  # the kernel files of the variants (their hash keys the cache)

    @abstractmethod
    def space(self, shape: Sequence[int]) -> list[Variant]:
        """The variants :meth:`tune` tries for an input of ``shape`` on this device."""

    @abstractmethod
    def default_variant(self, shape: Sequence[int]) -> Variant:
        """The variant an untuned shape runs with."""

    @abstractmethod
    def allowed(self, variant: Variant) -> bool:
        """Whether ``variant`` is one this layer can build (a cache entry is checked)."""

    @abstractmethod
    def build(self, variant: Variant) -> Launcher:
        """The launcher of ``variant`` (built once, on the layer's queue)."""

    @abstractmethod
    def plan(self, variant: Variant, x: Any, out: Any) -> Plan:
        """How ``variant`` runs ``x`` -> ``out`` (both checked)."""

    @abstractmethod
    def key_options(self) -> str:
        """The layer's own fixed settings that a tuned variant depends on (the build
        options of every variant but the variant's own, the weight shape)."""

    @functools.cached_property
    def _key_fields(self) -> tuple[str, ...]:
        """Every field of :meth:`variant_key` but the shape (asked once: every launch
        of a layer made without a variant looks its key up)."""
        device = self.launcher.device
        return (
            device.platform.name.strip(),
            device.name.strip(),
            device.driver_version.strip(),
            self.op_name,
            "".join(kernels_digest(name) for name in self.files),
            self.key_options(),
        )

    def variant_key(self, shape: Sequence[int]) -> VariantKey:
        """The variant cache's key for an input of ``shape``."""
        return VariantKey(*self._key_fields, tuple(int(v) for v in shape))

    def variant_for(self, shape: Sequence[int]) -> Variant:
        """The variant an input of ``shape`` runs with: the one asked for, else the tuned
        one (a valid cache entry), else :meth:`default_variant`."""
        if self.fixed is not None:
            return self.fixed
        found = cached_variant(self.variant_key(shape), _Allowed(self))
        return found if found is not None else self.default_variant(shape)

    def launch_args(self, x: Any, out: Any) -> tuple[Sequence[int], list[Any]]:
        """(global size, kernel arguments) of the variant ``x`` runs with."""
        _, global_size, args, _ = self.plan(self.variant_for(x.shape), x, out)
        return global_size, args

    def __call__(self, queue: Any, x: Any, out: Any = None, *, local_size: Any = "tuned") -> Any:
        """Enqueue on ``queue`` with the variant for ``x`` (see the module); returns
        ``out`` (a new tensor when None). ``local_size`` as :meth:`Layer.__call__` takes
        it, for variants without a required one."""
        out = self._checked(queue, x, out)
        launcher, global_size, args, required = self.plan(self.variant_for(x.shape), x, out)
        local = local_size if required == "tuned" else required
        launcher(queue, global_size, *args, local_size=local)
        return out

    def _checked(self, queue: Any, x: Any, out: Any) -> Any:
        """``out`` (new when None) after :meth:`Layer._prepared`'s checks."""
        return self._prepared(queue, x, out)[2]

    def tune(
        self,
        queue: Any,
        x: Any,
        out: Any = None,
        *,
        variants: Iterable[Sequence[int]] | None = None,
        budget_s: float = 5.0,
        **options: Any,
    ) -> TuningResult:
        """Tune for this input shape and keep the result (see :func:`qcom_ext.tune`).

        A layer made with a variant tunes its local size. One made without times
        ``variants`` (default :meth:`space`), each with its local size tuned in
        ``budget_s`` seconds at most, and remembers the fastest for this shape (the
        tuning cache; not for one variant alone); later calls with this shape run it.
        Returns the winner's :class:`TuningResult`; :meth:`variant_for` names it. ``options`` go to
        :func:`~qcom_ext.ops.tuning.tune_report` (``repeats``, ``force``, ...).
        """
        out = self._checked(queue, x, out)
        options = dict(options)
        local = options.pop("candidates", None)
        if self.fixed is not None:  # built here: a BuildError is the caller's
            space: list[Any] = [self._candidate(self.fixed, x, out, local)]
        else:
            space = [
                functools.partial(self._candidate, v, x, out, local)
                for v in self._space(x.shape, variants)
            ]
        best, timed = choose(
            space, queue=queue, budget_s=math.inf, local_budget_s=budget_s, **options
        )
        if best is not None:
            return best.report
        if not timed:
            raise ConfigError(f"no variant of {self.op_name} builds on this device")
        return timed[0].report

    def _space(self, shape: Sequence[int], variants: Any) -> list[Variant]:
        """The variants :meth:`tune` times: ``variants`` (checked) or :meth:`space`."""
        space = self.space(shape) if variants is None else [tuple(v) for v in variants]
        for variant in space:
            if not self.allowed(variant):
                raise ConfigError(f"variant {variant} is not one {self.op_name} can build")
        if not space:
            raise ConfigError("no variant to tune")
        return space

    def _candidate(self, variant: Variant, x: Any, out: Any, local: Any) -> Candidate:
        """``variant`` as the chooser times it (built here: BuildError when it cannot
        be): its local size tuned among ``local`` (None: the defaults), or the one it
        requires (and the driver's choice)."""
        launcher, global_size, args, required = self.plan(variant, x, out)
        candidates = local if required == "tuned" else [required]
        return Candidate(
            {},
            launcher.kernel,
            tuple(args),
            tuple(global_size),
            "tuned",
            key=self.variant_key(x.shape),
            choice=tuple(variant),
            identity=launcher.identity,
            pad_global=True,
            candidates=candidates,
        )


class _Allowed:
    """``variant in _Allowed(layer)``: whether the layer can build it."""

    def __init__(self, layer: VariantLayer) -> None:
        self.layer = layer

    def __contains__(self, variant: object) -> bool:
        return isinstance(variant, tuple) and self.layer.allowed(variant)
