#!/usr/bin/env bash
# qcom_ext on aarch64 (the Snapdragon CPU architecture) under qemu user emulation, by hand
# (not part of .ci/run; .ci/aarch64/README.md says why and how). Builds, once, a Debian
# bookworm arm64 root with mmdebstrap (Python, pyopencl, numpy, cffi, pocl ... all Debian's
# arm64 packages), installs qcom_ext from this checkout into it, and runs inside it:
# `qcom-ext probe`, `qcom-ext doctor` where the tree has it, the device-free binding tests
# (struct layouts, constants, marshalling) and a kernel subset on pocl's arm64 CPU device.
#
#   sudo .ci/aarch64/run.sh                 # as root: apt-get, binfmt_misc, chroot
#
# QCOM_EXT_ARM64_ROOT  where the built root is cached (default /var/tmp/qcom-ext-arm64);
#                      a rerun reuses it (delete the directory to rebuild it).
# QCOM_EXT_ARM64_MIRROR  the Debian mirror (default http://deb.debian.org/debian).
# Exits nonzero on the first failing phase; prints the time of every phase.
# shellcheck disable=SC2016  # $1, $@ and ${Package} are for the hook, sh -c and dpkg-query
set -euo pipefail
cd "$(dirname "$0")/../.."
checkout=$PWD

cache=${QCOM_EXT_ARM64_ROOT:-/var/tmp/qcom-ext-arm64}
mirror=${QCOM_EXT_ARM64_MIRROR:-http://deb.debian.org/debian}
root=$cache/root
suite=bookworm
# Everything comes from Debian's arm64 archive except qcom_ext itself: pip would build
# numpy/pyopencl from source under emulation (hours), and Debian's builds are what an
# arm64 Debian/Ubuntu user gets. pytest-timeout is needed by pyproject's `timeout` option.
packages=(
  python3 python3-pip python3-hatchling python3-pyopencl python3-numpy python3-cffi
  python3-platformdirs python3-pyelftools python3-rich python3-pytest python3-pytest-timeout
  python3-hypothesis pocl-opencl-icd ocl-icd-libopencl1 ca-certificates
  cpp # tests/compat_helpers.py expands the compat header with it
)
# Only pure-Python test tools come from PyPI, where pyproject.toml asks for more than
# bookworm has: the suite's hooks (tests/time_budget.py) need pytest 8 (pluggy's
# wrapper=True); Debian's pytest is 7.2. Installed once into the cached root's /usr/local.
pypi_packages=("pytest>=8" "pytest-timeout>=2.2")
# The binding's layout/constant tests, none needing a device: the declarations parse,
# every token and LP64 struct layout against the reference (test_reference_values), what
# the marshalling hands a driver (cffi callbacks), the loader, and the native paths on a
# fake Adreno driver (the structs qcom_ext fills in, read back field by field).
binding_tests=(
  tests/test_cdefs.py tests/test_reference_values.py tests/test_marshalling.py
  tests/test_loader.py tests/test_host_ptr_fake.py tests/test_images_fake.py
  tests/test_context_fake.py tests/test_weight_image_fake.py
)
# Debian bookworm's pyopencl is 2022.3.1, below the 2024.1 pyproject.toml asks for, and two
# of its gaps stop parts of qcom_ext (docs/RELIABILITY.md, "aarch64 under emulation"):
# * it has no cl.create_image, which qcom_ext's uncompressed-image fallback, ops' image
#   tensors and weight layouts, and the selftest call: so no image tests here, and the one
#   binding test that patches cl.create_image is deselected;
# * its Kernel.set_scalar_arg_dtypes falls back (on Python 3.11, where re-classing the
#   kernel fails) to an instance attribute set_args that is called without the kernel, so
#   qcom_ext.ops' launches (ext/program/launch.py) fail "missing ... 'arg13'": no ops tests.
# Neither depends on the architecture.
binding_deselect=(
  --deselect tests/test_images_fake.py::test_compressed_without_memory_falls_back_uncompressed
)
# A kernel subset that runs in minutes under qemu on pocl's arm64 CPU device, through
# qcom_ext's build_program and compat headers: build, launch, check against numpy and the
# worked examples. dot8's signed lanes (as_char4) and bfloat16's bit patterns are where
# an arm64 code-generation difference (char signedness, rounding) would show.
kernel_tests=(
  tests/test_context.py::test_pyopencl_code_runs_unchanged
  tests/test_context.py::test_reference_counts_prove_ownership_is_handed_over
  tests/test_dot8.py::test_guide_worked_examples
  tests/test_dot8.py::test_saturation_is_applied_once_at_the_end
  tests/test_dot8.py::test_random_against_numpy
  tests/test_bfloat16.py
  tests/test_subgroup_shuffle.py
  tests/test_large_buffer.py
)

if [ "$(id -u)" != 0 ]; then
  echo ".ci/aarch64/run.sh: run as root (apt-get, binfmt_misc, chroot)" >&2
  exit 2
fi

phase_names=()
phase_times=()
phase() { # phase NAME COMMAND...: run it, time it, stop the script when it fails
  local name=$1 start end status=0
  shift
  echo "=== $name"
  start=$(date +%s)
  # A subshell outside any `||` context: errexit stays on inside the phase's functions.
  set +e
  (
    set -e
    "$@"
  )
  status=$?
  set -e
  end=$(date +%s)
  phase_names+=("$name")
  phase_times+=("$((end - start))")
  echo "=== $name: $((end - start)) s (status $status)"
  if [ "$status" -ne 0 ]; then
    summary
    echo ".ci/aarch64/run.sh: phase '$name' failed with status $status" >&2
    exit "$status"
  fi
}
summary() {
  echo "--- phase times (s)"
  local i
  for i in "${!phase_names[@]}"; do
    printf '%6s  %s\n' "${phase_times[$i]}" "${phase_names[$i]}"
  done
}

host_tools() {
  local missing=()
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
  command -v update-binfmts >/dev/null || missing+=(binfmt-support)
  if [ "${#missing[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  mmdebstrap --version
  qemu-aarch64-static --version | head -1
}

# The kernel runs arm64 ELF files through qemu-aarch64-static once binfmt_misc has the
# qemu-aarch64 entry; its F flag (qemu-user-static's default) opens the interpreter at
# registration, so it works inside the chroot without a copy of qemu there.
emulation() {
  if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  fi
  if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    update-binfmts --enable qemu-aarch64 || update-binfmts --import qemu-aarch64
  fi
  grep -E '^(enabled|interpreter|flags)' /proc/sys/fs/binfmt_misc/qemu-aarch64
  if ! grep -q '^flags: .*F' /proc/sys/fs/binfmt_misc/qemu-aarch64; then
    echo "qemu-aarch64 is registered without the F flag: the chroot cannot find it" >&2
    return 1
  fi
}

bootstrap() {
  local want stamp=$cache/root.packages
  want="$suite ${packages[*]}"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$root/usr/bin/python3" ]; then
    echo "reusing $root (built $(date -r "$stamp" -u '+%F %T UTC'))"
    return 0
  fi
  rm -rf "$root" "$stamp" "$cache/root.pypi"
  mkdir -p "$cache"
  # --mode=root: we are root and chroot(2) is allowed; maintainer scripts run emulated.
  nice -n 10 mmdebstrap --mode=root --arch=arm64 --variant=apt \
    --include="$(
      IFS=,
      echo "${packages[*]}"
    )" \
    --aptopt='APT::Install-Recommends "false"' \
    --customize-hook='rm -f "$1"/etc/resolv.conf; cp /etc/resolv.conf "$1"/etc/resolv.conf' \
    "$suite" "$root" "$mirror"
  echo "$want" >"$stamp"
}

# in_root COMMAND...: COMMAND inside the arm64 root, in private mount and pid namespaces
# (its /proc, /sys, /dev and /tmp go away with it), with a clean environment and the
# caches (pyopencl's and pocl's compiled kernels) in that /tmp, so every run compiles cold:
# QCOM_EXT_TEST_DEVICES unset, so the tests parametrize over every device the root has.
# pocl sizes its device from hwloc, which reads /sys: without it pocl aborts ("Not enough
# memory to run on this device"). The command runs as a child of the namespace's init (a
# shell), not as pid 1, so it gets ordinary signal handling; a timeout bounds it, since
# qemu-user can hang after an emulated program aborts.
in_root() {
  timeout -k 10 "${QCOM_EXT_ARM64_TIMEOUT:-1800}" \
    unshare --mount --pid --fork --kill-child -- /bin/sh -ec '
    root=$1; shift
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/tmp"
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 XDG_CACHE_HOME=/tmp/cache \
      PATH=/usr/local/bin:/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
      /bin/sh -ec "cd /src/qcom_ext 2>/dev/null || cd /; exec \"\$@\"" sh "$@"
    exit 0  # not the last command, so the shell forks it rather than exec-ing it as pid 1
  ' sh "$root" "$@"
}

pypi_tools() {
  local want stamp=$cache/root.pypi
  want="${pypi_packages[*]}"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "reusing the PyPI tools in $root: $want"
  else
    # The host's trust store, which may hold a proxy's CA that Debian's bundle lacks.
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/host-ca-certificates.crt"
    in_root python3 -m pip install --break-system-packages --root-user-action=ignore \
      --cert /etc/ssl/certs/host-ca-certificates.crt --no-cache-dir -q "${pypi_packages[@]}"
    echo "$want" >"$stamp"
  fi
  in_root python3 -m pytest --version
}

install_checkout() {
  # The checkout's files (tracked and untracked, not ignored), fresh every run.
  rm -rf "$root/src/qcom_ext"
  mkdir -p "$root/src/qcom_ext"
  git ls-files -z --cached --others --exclude-standard |
    tar -C "$checkout" --null -T - -cf - | tar -C "$root/src/qcom_ext" -xf -
  in_root uname -m
  in_root python3 -m pip install --no-deps --no-build-isolation --no-index \
    --break-system-packages --root-user-action=ignore -q .
  in_root python3 - <<'EOF'
import importlib.metadata as md, platform
print("python", platform.python_version(), platform.machine())
for name in ("qcom_ext", "pyopencl", "numpy", "cffi", "pytest", "pytest-timeout", "hypothesis"):
    print(name, md.version(name))
EOF
  in_root dpkg-query -W -f '${Package} ${Version} ${Architecture}\n' \
    python3 python3-pyopencl pocl-opencl-icd python3-numpy
}

probe() {
  in_root qcom-ext probe
  # pocl's arm64 CPU device must be there (its version names the LLVM target triple,
  # "pthread-aarch64-..."): it is what the kernel tests run on.
  in_root python3 -c '
import platform
import pyopencl as cl
devices = [(p.name, d.name, d.version) for p in cl.get_platforms() for d in p.get_devices()]
print(platform.machine(), devices)
assert any(
    p == "Portable Computing Language" and "aarch64" in v for p, _, v in devices
), "no pocl aarch64 device in the arm64 root"
'
}

doctor() {
  if in_root qcom-ext doctor --help >/dev/null 2>&1; then
    in_root qcom-ext doctor
  else
    echo "qcom-ext doctor: not present in this tree"
  fi
}

# The suite's per-test budget (tests/time_budget.py) is for native runs on 2 CPUs; under
# qemu the same test takes several times longer, so it is widened, not dropped.
pytest_in_root() {
  in_root env QCOM_EXT_TEST_BUDGET_S="${QCOM_EXT_TEST_BUDGET_S:-300}" \
    python3 -m pytest -p no:cacheprovider -q "$@"
}

phase "host tools" host_tools
phase "emulation (binfmt_misc)" emulation
phase "bootstrap arm64 root" bootstrap
phase "test tools from PyPI" pypi_tools
phase "install qcom_ext" install_checkout
phase "qcom-ext probe" probe
phase "qcom-ext doctor" doctor
phase "binding tests" pytest_in_root "${binding_tests[@]}" "${binding_deselect[@]}"
phase "kernel subset" pytest_in_root -m "not slow" "${kernel_tests[@]}"
summary
echo ".ci/aarch64/run.sh: all phases passed"
