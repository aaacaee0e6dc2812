"""What every sample shares: the ``--device`` option and the probe line it prints."""

from __future__ import annotations

import argparse
import os
from typing import Any

import qcom_ext


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser described by the sample's first docstring line, with ``--device``."""
    result = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    result.add_argument("--device", help="as PYOPENCL_CTX: '0:0', 'nvidia', ...")
    return result


def probe_device(args: argparse.Namespace) -> qcom_ext.DeviceCaps:
    """The report of the device ``--device`` names (default: the one pyopencl picks)."""
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    return qcom_ext.probe()


def report(caps: qcom_ext.DeviceCaps, extension: str) -> qcom_ext.ExtensionStatus:
    """Print, and return, the path ``extension`` takes on the device."""
    status = caps.status(extension)
    print(f"{caps.label}: {extension} -> {status.path} ({status.reason})")
    return status


def write_png(path: str, pixels: Any, mode: str) -> None:
    """Save ``pixels`` (a numpy array) as a PNG with Pillow, or say why not."""
    try:
        from PIL import Image
    except ImportError:
        print("Pillow is not installed: no PNG written")
        return
    Image.fromarray(pixels, mode).save(path)
    print(f"wrote {path}")
