"""One root for system files (qcom_ext/device/sysroot.py) and the DRM driver's Adreno
node (qcom_ext/device/drm.py, kernel_gpu.py) in prepared trees."""

from __future__ import annotations

import os

import pytest

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.drm import DrmGpu, read_drm
from qcom_ext.device.kernel_gpu import read_kernel_gpu
from qcom_ext.device.sysroot import ENV_SYSROOT, Sysroot

QCS8550_NAME = "QUALCOMM "  # a QCS8550 Linux board names no model (adreno-extension-strings)


def write(root, path, data):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data if isinstance(data, bytes) else data.encode())
    return target


# ---- the sysroot --------------------------------------------------------------------------


def test_links_stay_inside_the_root(tmp_path):
    write(tmp_path, "/etc/secret", "inside")
    (tmp_path / "abs").symlink_to("/etc/secret")
    (tmp_path / "up").symlink_to("../../../../etc/secret")
    root = Sysroot(tmp_path)
    assert root.read_text("/abs") == "inside"
    assert root.resolve("/up") == "/etc/secret"  # '..' stops at the root
    assert root.read_text("/../../abs") == "inside"


def test_link_loops_and_missing_files_are_misses(tmp_path):
    (tmp_path / "a").symlink_to("/b")
    (tmp_path / "b").symlink_to("/a")
    root = Sysroot(tmp_path)
    assert root.resolve("/a") is None and root.read_text("/a") is None
    assert root.read_text("/nothing") is None and root.listdir("/nothing") == []


def test_fifos_oversized_and_binary_files_are_misses(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    write(tmp_path, "/big", "x" * 5000)
    write(tmp_path, "/bin", b"\x00\xff")
    root = Sysroot(tmp_path)
    assert root.read_text("/fifo") is None  # would block if opened for reading
    assert root.read_text("/big") is None
    assert root.read_text("/bin") is None


def test_glob_and_from_env(tmp_path, monkeypatch):
    write(tmp_path, "/usr/lib/aarch64-linux-gnu/libOpenCL.so.1", "x")
    write(tmp_path, "/usr/lib/libOpenCL_adreno.so", "x")
    root = Sysroot(tmp_path)
    assert root.glob("/usr/lib/*/libOpenCL*.so*") == ["/usr/lib/aarch64-linux-gnu/libOpenCL.so.1"]
    monkeypatch.setenv(ENV_SYSROOT, str(tmp_path))
    assert Sysroot.from_env().root == tmp_path
    monkeypatch.setenv(ENV_SYSROOT, "relative/dir")  # never resolved against the cwd
    assert Sysroot.from_env().is_host


# ---- DRM ----------------------------------------------------------------------------------


def drm_board(tmp_path, compatible=b"qcom,adreno-43050a01\0qcom,adreno\0", via="of_node"):
    """A Qualcomm Linux board on DRM: card0 is the GPU's (msm), no /sys/class/kgsl."""
    device = tmp_path / "sys/devices/platform/soc@0/3d00000.gpu"
    if via == "of_node":
        write(tmp_path, "/sys/devices/platform/soc@0/3d00000.gpu/of_node/compatible", compatible)
    else:
        lines = [
            f"OF_COMPATIBLE_{i}={c}" for i, c in enumerate(compatible.decode().split("\0")) if c
        ]
        write(
            tmp_path,
            "/sys/devices/platform/soc@0/3d00000.gpu/uevent",
            "\n".join(["DRIVER=msm", *lines]),
        )
    (tmp_path / "sys/bus/platform/drivers/msm").mkdir(parents=True)
    (device / "driver").symlink_to("/sys/bus/platform/drivers/msm")
    card = tmp_path / "sys/class/drm/card0"
    card.mkdir(parents=True)
    (card / "device").symlink_to("/sys/devices/platform/soc@0/3d00000.gpu")
    (tmp_path / "sys/class/drm/card0-DSI-1").mkdir()  # a connector, not a card
    write(tmp_path, "/dev/dri/renderD128", "")
    return tmp_path


@pytest.mark.parametrize("via", ["of_node", "uevent"])
def test_drm_board_names_its_adreno(tmp_path, via):
    facts = read_drm(Sysroot(drm_board(tmp_path, via=via)))
    gpu = facts.adreno()
    assert gpu.node == "/sys/class/drm/card0/device" and gpu.driver == "msm"
    assert gpu.chip == "43050a01"
    assert facts.model() == ("740", "drm:compatible")
    assert facts.render_nodes == ("/dev/dri/renderD128",)


@pytest.mark.parametrize(
    ("compatible", "model"),
    [
        (("qcom,adreno-630.2", "qcom,adreno"), "630"),
        (("qcom,adreno-06030001", "qcom,adreno"), "630"),  # the legacy chip id layout
        (("qcom,adreno-43050a01",), "740"),
        (("qcom,adreno-44070041", "qcom,adreno"), None),  # an id no table maps
        (("qcom,adreno",), None),
        (("qcom,adreno-xyz",), None),
    ],
)
def test_drm_compatible_forms(compatible, model):
    found = DrmGpu("/n", "msm", compatible).model()
    assert (found[0] if found else None) == model


def test_adreno_driver_directory_when_the_card_is_the_display(tmp_path):
    """On a board whose card0 is the display (msm_dpu), the GPU is the device bound to
    the 'adreno' platform driver."""
    write(
        tmp_path,
        "/sys/devices/platform/soc@0/ae00000.display/of_node/compatible",
        b"qcom,sm8550-mdss\0",
    )
    write(
        tmp_path,
        "/sys/devices/platform/soc@0/3d00000.gpu/of_node/compatible",
        b"qcom,adreno-635.0\0qcom,adreno\0",
    )
    (tmp_path / "sys/class/drm/card0").mkdir(parents=True)
    (tmp_path / "sys/class/drm/card0/device").symlink_to(
        "/sys/devices/platform/soc@0/ae00000.display"
    )
    drivers = tmp_path / "sys/bus/platform/drivers/adreno"
    drivers.mkdir(parents=True)
    (drivers / "3d00000.gpu").symlink_to("/sys/devices/platform/soc@0/3d00000.gpu")
    (drivers / "bind").write_text("")
    facts = read_drm(Sysroot(tmp_path))
    assert [g.adreno for g in facts.gpus] == [False, True]
    assert facts.model() == ("635", "drm:compatible")


def test_malformed_drm_files_are_misses(tmp_path):
    drm_board(tmp_path, compatible=b"\xff\xfe garbage")
    facts = read_drm(Sysroot(tmp_path))
    assert facts.adreno() is None and facts.model() is None


# ---- the probe's model fallback on a DRM board ---------------------------------------------


def test_a_drm_board_gets_its_model_from_the_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_SYSROOT, str(drm_board(tmp_path)))
    kernel = read_kernel_gpu()
    assert kernel.adreno_seen and not kernel.kgsl_sysfs
    caps = DeviceCaps.from_info(
        extensions="",
        device_name=QCS8550_NAME,
        device_version="OpenCL 3.0 ",
        driver_version="OpenCL 3.0 QUALCOMM build: commit unknown Compiler E031.42.20.00",
        vendor_id=0x5143,
        platform_name="QUALCOMM Snapdragon(TM)",
        disabled=(),
        kgsl=kernel,
    )
    assert (caps.adreno_model, caps.model_source) == ("740", "drm:compatible")


def test_kgsl_comes_before_drm(tmp_path, monkeypatch):
    drm_board(tmp_path)
    write(tmp_path, "/sys/class/kgsl/kgsl-3d0/gpu_model", "Adreno730v2")
    write(tmp_path, "/dev/kgsl-3d0", "")
    monkeypatch.setenv(ENV_SYSROOT, str(tmp_path))
    kernel = read_kernel_gpu()
    assert kernel.kgsl_device and kernel.model() == ("730", "kgsl:gpu_model")
    assert "KGSL: /dev/kgsl-3d0, gpu_model Adreno730v2" in kernel.describe()
    assert "DRM: /sys/class/drm/card0/device" in kernel.describe()
