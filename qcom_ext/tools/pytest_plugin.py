"""pytest plugin: OpenCL device fixtures and qcom_ext markers, for any project.

Installed with qcom_ext (entry point ``pytest11``), so a project's tests just use:

``device_caps``
    the :class:`~qcom_ext.DeviceCaps` of each OpenCL device: tests that use it, or
    ``cl_device`` / ``cl_context`` / ``cl_queue`` / ``kernel_context``, run once per device,
    with ids such as ``pocl-3.1-cpu``. ``QCOM_EXT_TEST_DEVICES=pocl-3.1,nvidia`` keeps the
    devices whose label contains one of the strings.
``kernel_context``
    a context whose device can compile kernels (others are skipped, naming the error).
``@pytest.mark.requires_ext("cl_qcom_...")``
    run only on devices that advertise the extension; a clear skip elsewhere.
``@pytest.mark.fallback_and_native("cl_qcom_...")`` with the ``qcom_path`` fixture
    run the test once per path: ``native`` (the device's own native or Khronos path,
    skipped where the device has neither) and ``fallback`` (forced with
    ``probe(disabled=...)`` and a ``disabling()`` block around the test, never through the
    environment); ``qcom_path`` is the DeviceCaps probed under that setting.

Installed is not enabled: in a run that does not ask for it the plugin is inert and
cheap (it registers its fixtures and markers, and probes nothing, imports no pyopencl).
It wakes up when a collected test uses one of its device fixtures (the devices are
probed then, for that test's parameters), or for the whole run with the ini option
``qcom_ext = true`` (``[tool.pytest.ini_options]``) or ``-p qcom_ext``: then the report
header lists each device's probe summary too, and a ``QCOM_EXT_TEST_DEVICES`` that keeps
no device is a usage error up front. Example test module::

    import pytest

    @pytest.mark.fallback_and_native("cl_qcom_bitreverse")
    def test_reverse(qcom_path, kernel_context):
        assert qcom_path.path("cl_qcom_bitreverse") in ("native", "fallback")
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

DEVICES_ENV = "QCOM_EXT_TEST_DEVICES"
_EXTENSION_NAME = re.compile(r"cl_[A-Za-z0-9]+_\w+\Z", re.ASCII)  # cl_khr_fp16, cl_ARM_printf
_devices: list[Any] | None = None


def selected_devices() -> list[Any]:
    """Every device's DeviceCaps, filtered by ``QCOM_EXT_TEST_DEVICES`` (probed once)."""
    global _devices
    if _devices is None:
        import qcom_ext
        from qcom_ext.errors import OpenCLUnavailable

        try:
            found = qcom_ext.probe_all()
        except OpenCLUnavailable:
            found = []
        _devices = filter_devices(found, os.environ.get(DEVICES_ENV, ""))
    return _devices


def filter_devices(found: list[Any], spec: str) -> list[Any]:
    """The devices whose label contains one of the comma-separated strings of ``spec``
    (all of them for an empty ``spec``). A selector is never ignored: one that keeps no
    device at all is a ConfigError naming the labels there are (the suite would
    otherwise skip every device test and pass), and a string that matches no device
    next to ones that do is reported with a QcomExtWarning.

    >>> from qcom_ext import DeviceCaps
    >>> pocl = DeviceCaps.from_info(extensions="", platform_name="pocl", device_type="cpu")
    >>> [c.label for c in filter_devices([pocl], " pocl ,")]
    ['pocl-cpu']
    >>> filter_devices([pocl], "nvdia")
    Traceback (most recent call last):
    ...
    qcom_ext.errors.ConfigError: QCOM_EXT_TEST_DEVICES='nvdia' matches no device; ...
    """
    import warnings

    from qcom_ext.device.choice import label_matches
    from qcom_ext.device.shared import labels as device_labels
    from qcom_ext.errors import ConfigError, QcomExtWarning

    wanted = [w.strip() for w in spec.split(",") if w.strip()]
    if not wanted:
        return list(found)
    kept = [c for c in found if any(label_matches(c.label, w) for w in wanted)]
    unmatched = [w for w in wanted if not any(label_matches(c.label, w) for c in found)]
    labels = device_labels(found, names=False) or "none"
    if found and not kept:
        raise ConfigError(
            f"{DEVICES_ENV}={spec!r} matches no device; the device labels here are: {labels}"
        )
    if found and unmatched:
        warnings.warn(
            f"{DEVICES_ENV}: {', '.join(map(repr, unmatched))} match(es) no device "
            f"(labels here: {labels})",
            QcomExtWarning,
            stacklevel=2,
        )
    return kept


def device_ids(devices: list[Any]) -> list[str]:
    """Test ids from device labels, numbered when two devices share a label.

    >>> from qcom_ext import DeviceCaps
    >>> caps = DeviceCaps.from_info(extensions="", device_name="cpu", platform_name="pocl")
    >>> device_ids([caps, caps])[1].endswith("-2")
    True
    """
    ids, seen = [], {}
    for caps in devices:
        seen[caps.label] = seen.get(caps.label, 0) + 1
        ids.append(caps.label if seen[caps.label] == 1 else f"{caps.label}-{seen[caps.label]}")
    return ids


#: The ini option that enables the plugin for the whole run (``qcom_ext = true``).
INI_OPTION = "qcom_ext"
_PLUGIN_NAMES = ("qcom_ext", __name__)  # what ``-p`` may name it by


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_OPTION,
        type="bool",
        default=False,
        help="qcom_ext: probe the OpenCL devices for the whole run (report header); without "
        "it only tests that use qcom_ext's device fixtures probe them",
    )


def enabled(config: pytest.Config) -> bool:
    """Whether the run asked for the plugin up front: the ini option ``qcom_ext = true``
    or ``-p qcom_ext`` (or ``-p qcom_ext.tools.pytest_plugin``)."""
    asked = getattr(config.option, "plugins", None) or []
    return bool(config.getini(INI_OPTION)) or any(name in _PLUGIN_NAMES for name in asked)


def _devices_or_usage_error() -> list[Any]:
    """:func:`selected_devices`, a bad ``QCOM_EXT_TEST_DEVICES`` as pytest's usage error
    (a clear message, not an INTERNALERROR)."""
    from qcom_ext.errors import ConfigError

    try:
        return selected_devices()
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def _uses_device_fixtures(metafunc: pytest.Metafunc) -> bool:
    """Whether the test asks for this plugin's ``device_caps`` (directly or through
    ``cl_device`` / ``cl_context`` / ``cl_queue`` / ``kernel_context``), not for a
    project's own fixture of the same name."""
    if "device_caps" not in metafunc.fixturenames:
        return False
    definitions = getattr(metafunc, "_arg2fixturedefs", {}).get("device_caps") or ()
    return any(getattr(d.func, "__module__", None) == __name__ for d in definitions[-1:])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires_ext(name, ...): run only on devices whose CL_DEVICE_EXTENSIONS lists them",
    )
    config.addinivalue_line(
        "markers",
        "fallback_and_native(name): run once on the device's own path and once with the "
        "extension forced to its fallback (fixture qcom_path)",
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not enabled(config):
        return []  # inert: nothing probed before a test asks for a device
    devices = _devices_or_usage_error()
    if not devices:
        return ["qcom_ext: no OpenCL device found"]
    return [f"qcom_ext device: {caps.summary()}" for caps in devices]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if _uses_device_fixtures(metafunc):
        devices = _devices_or_usage_error()
        if devices:
            metafunc.parametrize("device_caps", devices, ids=device_ids(devices), indirect=True)
        else:
            skip = pytest.mark.skip(reason="no OpenCL device found")
            metafunc.parametrize("device_caps", [pytest.param(None, marks=skip)], indirect=True)
    for required in metafunc.definition.iter_markers("requires_ext"):
        bad = [n for n in required.args if not (isinstance(n, str) and _EXTENSION_NAME.match(n))]
        if not required.args or bad:
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid}: requires_ext takes extension names "
                f"(cl_<vendor>_<name>), got {required.args!r}"
            )
    marker = metafunc.definition.get_closest_marker("fallback_and_native")
    if marker is not None:
        from qcom_ext.device.extensions import REGISTRY

        if (
            len(marker.args) != 1
            or not isinstance(marker.args[0], str)
            or (marker.args[0] not in REGISTRY)
        ):
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid}: fallback_and_native takes one extension "
                f"name, a cl_qcom_* one qcom_ext knows ({', '.join(sorted(REGISTRY))}); "
                f"got {marker.args!r}"
            )
        if "qcom_path" not in metafunc.fixturenames:
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid}: fallback_and_native needs the qcom_path fixture"
            )
        metafunc.parametrize("qcom_path", ["native", "fallback"], indirect=True)


@pytest.fixture
def device_caps(request: pytest.FixtureRequest) -> Any:
    """The DeviceCaps of the device this test instance runs on."""
    caps = request.param
    for marker in request.node.iter_markers("requires_ext"):
        for name in marker.args:
            if not caps.has(name):
                pytest.skip(f"{caps.label} ({caps.device_name}) does not advertise {name}")
    return caps


@pytest.fixture
def cl_device(device_caps: Any) -> Any:
    """The ``pyopencl.Device`` of this test instance."""
    return device_caps.device()


@pytest.fixture
def cl_context(cl_device: Any) -> Any:
    """A ``pyopencl.Context`` on this test instance's device."""
    import pyopencl as cl

    return cl.Context([cl_device])


@pytest.fixture
def kernel_context(device_caps: Any, cl_context: Any) -> Any:
    """A context whose device can build kernels; others skip, naming the build log's first
    line (``DeviceCaps.build_problem``, one trivial build per device, the one rule).

    (The PyPI pocl 3.0 uses LLVM 14, which cannot target some newer host CPUs:
    "unknown target CPU 'generic'".)
    """
    skip_unless_building(device_caps)
    return cl_context


def skip_unless_building(caps: Any) -> None:
    """Skip the test when the device of ``caps`` builds no program (the device rule of
    every test that builds kernels: ``kernel_context`` goes through it)."""
    problem = caps.build_problem
    if problem:
        pytest.skip(f"{caps.label} cannot build programs on this host: {problem}")


@pytest.fixture
def cl_queue(cl_context: Any) -> Any:
    """A ``pyopencl.CommandQueue`` on this test instance's context."""
    import pyopencl as cl

    return cl.CommandQueue(cl_context)


@pytest.fixture
def qcom_path(request: pytest.FixtureRequest, device_caps: Any) -> Iterator[Any]:
    """DeviceCaps under the path this instance runs (``fallback_and_native`` marker).

    The fallback instance runs inside ``disabling(name)``
    (:func:`qcom_ext.device.probe.disabling`): every ``probe()`` of the test's thread, the
    library's own included, takes the fallback; the environment, other threads and child
    processes are left alone, and the block ends with the test.
    """
    from qcom_ext.device.probe import disabling, probe

    (name,) = request.node.get_closest_marker("fallback_and_native").args
    if request.param == "native":
        if device_caps.path(name) in ("fallback", "unavailable"):
            pytest.skip(f"{device_caps.label} has no native or Khronos path for {name}")
        yield device_caps
        return
    caps = probe(device_caps.device_id, disabled=[name])
    if caps.path(name) != "fallback":
        pytest.skip(f"{name} has no portable fallback on {device_caps.label}: {caps.path(name)}")
    with disabling([name]):
        yield caps
