"""Protected contexts (cl_qcom_protected_context): one where supported, a reason elsewhere.

    python samples/protected_context.py [--device 0:0]

On an Adreno device with the extension this creates a protected context and a queue on
it (every queue of a protected context is protected, and profiling is refused). On any
other device qcom_ext refuses with ExtensionUnavailable: a protected context never
falls back, since a fallback would silently drop the hardware content protection. That
refusal is the expected behaviour there and the sample exits 0; it exits 1 when what
happens disagrees with the probe.
"""

from __future__ import annotations

import _common

import qcom_ext

EXTENSION = "cl_qcom_protected_context"


def main() -> int:
    parser = _common.parser(__doc__)
    args = parser.parse_args()
    caps = _common.probe_device(args)
    status = _common.report(caps, "cl_qcom_protected_context")
    try:
        ctx = qcom_ext.create_context(protected=True)
    except qcom_ext.ExtensionUnavailable as exc:
        print(f"refused, as expected on this device: {exc}")
        return 0 if status.path != "native" and exc.extension == EXTENSION else 1
    except qcom_ext.CLError as exc:  # the extension is advertised but the driver said no
        print(f"the driver refused the protected context: {exc}")
        return 1
    info = qcom_ext.context_info(ctx)
    queue = qcom_ext.create_queue(ctx)
    print(f"protected context created: {info}; queue on {queue.device.name}")
    try:
        qcom_ext.create_queue(ctx, profiling=True)
    except qcom_ext.ConfigError as exc:
        print(f"profiling queue refused, as the extension requires: {exc}")
    else:
        print("a profiling queue was created on a protected context")
        return 1
    return 0 if info.protected and status.path == "native" else 1


if __name__ == "__main__":
    raise SystemExit(main())
