"""Issue 26, the adversarial review on pocl 3.1: the host-side findings 3, 4, 8, 9, 10
and 11, each with the regression that failed before its fix (crashes and hangs run in a
child process)."""

from __future__ import annotations

import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl
import pytest
from fakes.claiming import claiming

import qcom_ext
from qcom_ext.device.probe import clear_cache
from qcom_ext.errors import ConfigError, signal_name
from qcom_ext.ext.program.build import build_program
from qcom_ext.ops import load_weight, save_weights

# ---- 3: child processes never import from the current directory ---------------------

MARKER = "planted-json-ran"
#: A json.py in a shared working directory: it leaves a marker, then hands over the
#: real json module (so that a child that imports it still works).
PLANTED_JSON = f"""
import importlib, os, sys
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, {MARKER!r}), "w").close()
sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != here]
del sys.modules["json"]
sys.modules["json"] = importlib.import_module("json")
"""


@pytest.fixture
def planted_cwd(tmp_path, monkeypatch):
    """The current directory holds a planted json.py; the parent's path has '' (as
    ``python -c`` and the REPL do)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "json.py").write_text(PLANTED_JSON)
    monkeypatch.chdir(shared)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    return shared / MARKER


def test_isolated_compile_imports_nothing_from_the_cwd(planted_cwd, kernel_context):
    source = f"__kernel void k(__global int *a) {{ a[0] = {len(str(planted_cwd))}; }}"
    program = build_program(kernel_context, f"// {planted_cwd}\n{source}", isolate=True)
    assert program.get_info(pyopencl.program_info.NUM_KERNELS) == 1
    assert not planted_cwd.exists(), "the isolated compile's child ran ./json.py"


def test_isolated_probe_imports_nothing_from_the_cwd(planted_cwd):
    reports = qcom_ext.probe_all(isolated=True)
    assert reports
    assert not planted_cwd.exists(), "probe_all(isolated=True)'s child ran ./json.py"


def test_cli_isolated_probe_imports_nothing_from_the_cwd(planted_cwd, capsys):
    from qcom_ext.tools import cli

    assert cli.main(["probe", "--isolated", "--all", "--json"]) == 0
    assert not planted_cwd.exists(), "qcom-ext probe --isolated's child ran ./json.py"


def test_probe_verify_imports_nothing_from_the_cwd(planted_cwd, device_caps, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(planted_cwd.parent / "cache"))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    clear_cache()
    name = "cl_qcom_bitreverse"  # claimed: its trial runs in a child
    with claiming(device_caps.device_id, extensions=[name]):
        caps = qcom_ext.probe(device_caps.device_id, verify=True)
    assert name in caps.verdicts
    assert not planted_cwd.exists(), "probe(verify=True)'s trial child ran ./json.py"


# ---- 4: save_weights' temporary file is mkstemp's, never a predictable name ----------


def _predictable(target: Path, pid: int) -> Path:
    """The name the temporary file had before the fix."""
    return target.with_name(f".{target.name}.{pid}.partial")


def _weights() -> dict:
    return {"w": np.ones((2, 3), np.float32)}


@pytest.fixture
def gguf():
    return pytest.importorskip(
        "gguf", reason="writing GGUF needs the gguf package (qcom_ext[gguf])"
    )


def test_a_planted_symlink_at_the_old_temporary_name_is_not_followed(tmp_path, gguf):
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's file")
    target = tmp_path / "w.gguf"
    planted = _predictable(target, os.getpid())
    planted.symlink_to(victim)
    save_weights(target, _weights())
    assert victim.read_text() == "the victim's file"
    assert not target.is_symlink() and load_weight(target, "w").shape == (2, 3)
    assert planted.is_symlink() and planted.resolve() == victim.resolve()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [planted.name, "victim.txt", "w.gguf"]
    )


def test_a_planted_file_at_the_old_temporary_name_does_not_become_the_model(tmp_path, gguf):
    target = tmp_path / "w.gguf"
    planted = _predictable(target, os.getpid())
    planted.write_bytes(b"the planter's file")
    os.chmod(planted, 0o666)
    save_weights(target, _weights())
    assert planted.read_bytes() == b"the planter's file"
    assert os.stat(target).st_ino != os.stat(planted).st_ino
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([planted.name, "w.gguf"])


def test_a_planted_fifo_at_the_old_temporary_name_does_not_block_the_save(tmp_path, gguf):
    target = tmp_path / "w.gguf"
    code = (
        "import os, sys, numpy as np; from qcom_ext.ops import save_weights; "
        "target = sys.argv[1]; d, n = os.path.split(target); "
        "os.mkfifo(os.path.join(d, f'.{n}.{os.getpid()}.partial')); "
        "save_weights(target, {'w': np.ones((2, 3), np.float32)})"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(target)], capture_output=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail("save_weights blocked on a FIFO planted at its temporary file's name")
    assert done.returncode == 0, done.stderr.decode()
    assert load_weight(target, "w").shape == (2, 3)


def test_a_failed_save_leaves_no_temporary_file(tmp_path, gguf, monkeypatch):
    def broken(self, *args, **kwargs):
        raise ValueError("gguf-py refused")

    monkeypatch.setattr(gguf.GGUFWriter, "write_kv_data_to_file", broken)
    with pytest.raises(ValueError, match="gguf-py refused"):
        save_weights(tmp_path / "w.gguf", _weights())
    assert list(tmp_path.iterdir()) == []


# ---- 10: allocate_chunked is bounded by the global memory and MAX_CHUNKS -------------

#: A child that makes ``size`` bytes in chunks of ``chunk`` on the device labelled
#: ``label``, its memory capped, and prints the error it got.
CHUNKED_CHILD = """
import resource, sys
import pyopencl as cl, qcom_ext
label, size, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) or None
resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))
caps = next(c for c in qcom_ext.probe_all() if c.label == label)
ctx = cl.Context([caps.device()])
try:
    parts = qcom_ext.allocate_chunked(ctx, size, chunk=chunk)
except qcom_ext.errors.QcomExtError as exc:
    print(type(exc).__name__, exc)
else:
    print("made", len(parts), "buffers")
"""


@pytest.mark.parametrize(("size", "chunk"), [(2**50, 0), (64 << 30, 128)])
def test_allocate_chunked_refuses_more_than_the_global_memory(device_caps, size, chunk):
    memory = device_caps.device().global_mem_size
    if size <= memory:
        pytest.skip(f"{device_caps.label} has {memory} bytes of global memory")
    command = [sys.executable, "-c", CHUNKED_CHILD, device_caps.label, str(size), str(chunk)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"allocate_chunked({size}, chunk={chunk or None}) still allocating at 60 s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("BufferTooLargeError"), done.stdout
    assert f"size {size} bytes exceeds CL_DEVICE_GLOBAL_MEM_SIZE = {memory}" in done.stdout


def test_allocate_chunked_refuses_more_than_max_chunks(cl_context, monkeypatch):
    from qcom_ext.ext.memory import large_buffer

    align = max(d.mem_base_addr_align // 8 for d in cl_context.devices)
    made = []
    real = large_buffer.create_buffer
    monkeypatch.setattr(large_buffer, "create_buffer", lambda *a: made.append(1) or real(*a))
    size = (large_buffer.MAX_CHUNKS + 1) * align
    with pytest.raises(
        ConfigError,
        match=f"{large_buffer.MAX_CHUNKS + 1} buffers: .* at most {large_buffer.MAX_CHUNKS}",
    ):
        qcom_ext.allocate_chunked(cl_context, size, chunk=align)
    assert made == []  # refused before any allocation
    parts = qcom_ext.allocate_chunked(cl_context, size - align, chunk=align)
    assert len(parts) == large_buffer.MAX_CHUNKS
    for part in parts:
        part.release()


# ---- 8: a raw int is a device handle only when the enumeration lists it --------------

#: Public entry points that take a device, each given a raw int that is no handle.
RAW_DEVICE_CALLS = {
    "probe(1)": ("qcom_ext.probe(1)", 1),
    "probe(-1)": ("qcom_ext.probe(-1)", -1),
    "probe(numpy 1)": ("qcom_ext.probe(numpy.int64(1))", 1),
    "create_context([1])": ("qcom_ext.create_context(devices=[1])", 1),
    "create_context(1)": ("qcom_ext.create_context(devices=1)", 1),
    "caps_of(1)": ("qcom_ext.device.shared.caps_of(1)", 1),
    "accelerated_limits(1)": ("qcom_ext.accelerated_limits(1)", 1),
    "box_size(device=1)": ("qcom_ext.box_size(1.0, 1.0, device=1)", 1),
    "query_image_info(1)": ("qcom_ext.query_image_info(1, 'RGBA/UNORM_INT8', (4, 4))", 1),
    "kernel_sub_group_size(k, 1)": ("qcom_ext.kernel_sub_group_size(1, 1, 8)", 1),
}


def _run_python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``code`` in a child Python (a crash or a hang there fails the test, not the run)."""
    try:
        return subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child still ran at {timeout} s: {code!r}")


@pytest.mark.parametrize("call", list(RAW_DEVICE_CALLS))
def test_a_raw_int_that_is_no_device_is_a_config_error(call):
    if not qcom_ext.probe_all():
        pytest.skip("no OpenCL device")
    statement, value = RAW_DEVICE_CALLS[call]
    code = (
        "import numpy, qcom_ext, qcom_ext.device.shared\n"
        f"try:\n    {statement}\n"
        "except qcom_ext.ConfigError as exc:\n    print('ConfigError:', exc)\n"
    )
    done = _run_python(code)
    assert done.returncode == 0, f"{call}: {signal_name(done.returncode)}; {done.stderr[-500:]}"
    shown = f"device {value} ({value:#x}) is not a device handle"
    assert done.stdout.startswith("ConfigError:") and shown in done.stdout, done.stdout


# ---- 9: hostile GGUF files are GGUFFileError, never a hang, a RecursionError or SIGBUS -

#: The child: ``weight_names`` or ``load_weight`` on the file, its memory capped; it
#: prints the typed error it got.
GGUF_CHILD = """
import resource, sys
from qcom_ext.ops import gguf_weights
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
path, name = sys.argv[1], sys.argv[2]
try:
    found = gguf_weights.load_weight(path, name) if name else gguf_weights.weight_names(path)
except gguf_weights.GGUFFileError as exc:
    print("GGUFFileError:", exc)
else:
    print("read", found)
"""


def _kv_file(value_type: int, value: bytes) -> bytes:
    """A GGUF v3 file of no tensor and one key/value ``x`` of ``value_type``."""
    key = struct.pack("<Q", 1) + b"x"
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + key + struct.pack("<I", value_type) + value


def _read_in_a_child(path: Path, name: str = "") -> str:
    done = _run_python(GGUF_CHILD, str(path), name, timeout=30)
    assert done.returncode == 0, f"{signal_name(done.returncode)}: {done.stderr[-1500:]}"
    return done.stdout


def test_an_array_longer_than_the_file_is_refused_not_looped_on(tmp_path, gguf):
    path = tmp_path / "long-array.gguf"
    array, uint8 = 9, 0
    path.write_bytes(_kv_file(array, struct.pack("<IQ", uint8, 2**62)))
    out = _read_in_a_child(path)
    assert out.startswith("GGUFFileError:"), out
    assert f"counts {2**62} items" in out and "the file has 0 bytes left" in out


def test_arrays_nested_thousands_deep_are_a_gguf_file_error(tmp_path, gguf):
    path = tmp_path / "nested.gguf"
    array, uint8 = 9, 0
    nested = struct.pack("<IQ", array, 1) * 2999 + struct.pack("<IQ", uint8, 0)
    path.write_bytes(_kv_file(array, nested))
    out = _read_in_a_child(path)
    assert out.startswith("GGUFFileError:") and "nests arrays more than 16 deep" in out, out


def test_a_file_truncated_while_a_tensor_is_read_is_a_gguf_file_error(tmp_path, gguf):
    """The file shrinks after gguf-py parsed it, before the tensor's bytes are copied:
    through gguf-py's memory map that copy was a SIGBUS."""
    path = tmp_path / "shrinks.gguf"
    save_weights(path, {"big": np.ones(1 << 20, np.float32)})
    hook = (
        "import os, gguf\n"
        "parse = gguf.GGUFReader\n"
        "def shrinking(*args, **kwargs):\n"
        "    reader = parse(*args, **kwargs)\n"
        f"    os.truncate({str(path)!r}, 4096)\n"
        "    return reader\n"
        "gguf.GGUFReader = shrinking\n"
    )
    done = _run_python(hook + GGUF_CHILD, str(path), "big", timeout=60)
    assert done.returncode == 0, f"{signal_name(done.returncode)}: {done.stderr[-1500:]}"
    assert done.stdout.startswith("GGUFFileError:"), done.stdout
    assert "run past the end of the file (4096 bytes)" in done.stdout, done.stdout


def test_a_recursion_error_in_gguf_py_is_a_gguf_file_error(tmp_path, gguf, monkeypatch):
    """Without the header check, gguf-py's own RecursionError is caught and typed."""
    from qcom_ext.ops import gguf_weights

    path = tmp_path / "nested.gguf"
    nested = struct.pack("<IQ", 9, 1) * 2999 + struct.pack("<IQ", 0, 0)
    path.write_bytes(_kv_file(9, nested))
    monkeypatch.setattr(gguf_weights, "scan_header", lambda *args: None)
    with pytest.raises(gguf_weights.GGUFFileError, match="RecursionError"):
        gguf_weights.weight_names(path)


# ---- 11: what qcom_ext holds outlives the caller's release() ---------------------------

#: The start of a child on the device labelled argv[1]: ``ctx``, ``queue``, ``mf``.
DEVICE_CHILD = """
import gc, sys
import numpy as np, pyopencl as cl, qcom_ext
caps = next(c for c in qcom_ext.probe_all() if c.label == sys.argv[1])
ctx = cl.Context([caps.device()])
queue = cl.CommandQueue(ctx)
mf = cl.mem_flags
def fillers():  # buffers that may take the memory of what was freed
    return [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.full(64, 255, np.uint8))
            for _ in range(16)]
"""


def _on_device_in_a_child(device_caps, code: str) -> str:
    done = _run_python(DEVICE_CHILD + code, device_caps.label)
    assert done.returncode == 0, f"{signal_name(done.returncode)}: {done.stderr[-1500:]}"
    return done.stdout.strip()


def test_an_image_buffer_outlives_the_callers_release_of_its_image(device_caps):
    if not device_caps.device().image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    code = """
pixels = np.arange(8 * 4 * 4, dtype=np.uint8).reshape(4, 8, 4)
image = qcom_ext.create_image(ctx, (8, 4), "RGBA/UNSIGNED_INT8").image
cl.enqueue_copy(queue, image, pixels, origin=(0, 0), region=(8, 4)).wait()
pair = qcom_ext.buffer_from_image(image)
image.release(); del image; gc.collect()
keep = fillers()
pair.sync_to_buffer(queue)
got = pair.read_buffer(queue)
print("equal" if (got == pixels).all() else got.ravel()[:8].tolist())
"""
    assert _on_device_in_a_child(device_caps, code) == "equal"


def test_a_wrapped_buffer_matrix_outlives_the_callers_release(device_caps):
    code = """
from qcom_ext.ops.matmul import BufferMatrix
a = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a)
matrix = BufferMatrix.wrap(buf, (64, 16), np.float32)
buf.release(); del buf; gc.collect()
keep = fillers()
got = matrix.to_numpy(queue)
print("equal" if (got == a).all() else got.ravel()[:4].tolist())
"""
    assert _on_device_in_a_child(device_caps, code) == "equal"
