"""Which path each cl_qcom_* extension takes on your OpenCL devices.

    python samples/probe.py                 # every device, one summary line each
    python samples/probe.py --device 0:0    # one device, every extension with its reason
    python samples/probe.py --device pocl-3.1-cpu   # a device by its label
    QCOM_EXT_DISABLE=all python samples/probe.py --device 0:0   # forced fallbacks

On a Snapdragon device the Adreno GPU shows its native extensions; anywhere else the
portable fallbacks (or, for protected contexts and Android buffer imports, the reason
why nothing can stand in) are listed.
"""

from __future__ import annotations

import argparse
import sys

import qcom_ext
from qcom_ext.device.choice import device_from_spec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--device", help="as PYOPENCL_CTX ('0:0', 'nvidia') or a label ('pocl-3.1-cpu')"
    )
    args = parser.parse_args()
    try:
        if args.device is None:
            for caps in qcom_ext.probe_all():
                print(caps.summary())
            return 0
        caps = qcom_ext.probe(device_from_spec(args.device))
    except qcom_ext.QcomExtError as exc:
        print(f"probe failed: {exc}", file=sys.stderr)
        return 1
    print(caps)  # the facts line names driver, model (and where it came from), compiler
    for quirk in caps.quirks:
        print(f"quirk {quirk.id}: {quirk.effect} ({quirk.source})")
    limits = {k: v for k, v in caps.limits.items() if v is not None}
    print("limits:", limits)
    print("kernel build options:", " ".join(caps.compiler_options()) or "(portable code only)")
    # The check a sample makes on itself: every cl_qcom_* extension got exactly one path.
    missing = set(qcom_ext.REGISTRY) - set(caps.statuses)
    if missing:
        print(f"no path decided for {sorted(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
