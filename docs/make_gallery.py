"""Regenerate the samples gallery: the table in samples/README.md and docs/img/ previews.

    python docs/make_gallery.py [--device 0:0] [--check]

Runs every sample in ``samples/`` on the device (with ``--png`` where the sample takes
it), records the path its extension took (the probe line every sample prints), shrinks
each PNG to a small preview under ``docs/img/``, and rewrites the table between the
``<!-- gallery -->`` markers of ``samples/README.md``. A sample's extension comes from
its ``_common.report(caps, "cl_...")`` call (or ``EXTENSION = "cl_..."`` constant), its
command from its docstring's usage line.
``--check`` only verifies that the README table lists exactly the samples present and
that every preview it names exists (what tests/test_samples.py also checks).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
IMG = ROOT / "docs" / "img"
README = SAMPLES / "README.md"
BEGIN, END = "<!-- gallery -->", "<!-- /gallery -->"
PREVIEW_PX = 256
_REPORT = re.compile(
    r"""report\(\s*caps\s*,\s*["'](cl_\w+)["']|^EXTENSION = ["'](cl_\w+)["']""", re.M
)
_USAGE = re.compile(r"^\s+(python3? samples/\S+\.py.*)$", re.MULTILINE)
_PATH_LINE = re.compile(r"^\S+: (cl_\w+) -> (\S+)", re.MULTILINE)


@dataclass
class Sample:
    name: str
    extensions: list[str]
    command: str
    path: str = ""
    preview: str = ""


def discover() -> list[Sample]:
    """Every runnable sample, with its extension(s) and usage line, in name order."""
    samples = []
    for file in sorted(SAMPLES.glob("*.py")):
        if file.name.startswith("_"):
            continue
        text = file.read_text()
        usage = _USAGE.search(text)
        found = [a or b for a, b in _REPORT.findall(text)]
        extensions = list(dict.fromkeys(found)) or ["all cl_qcom_*"]
        command = usage.group(1).split("#")[0].strip() if usage else f"python samples/{file.name}"
        samples.append(Sample(file.name, extensions, command))
    return samples


def run(sample: Sample, device: str | None, workdir: Path) -> None:
    """Run ``sample``; fill in the path taken and its preview (if it writes a PNG)."""
    from PIL import Image

    script = SAMPLES / sample.name
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    args = [sys.executable, str(script)] + (["--device", device] if device else [])
    helps = subprocess.run([*args, "--help"], capture_output=True, text=True, env=env).stdout
    png = workdir / (script.stem + ".png")
    if "--png" in helps:
        args += ["--png", str(png)]
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"{sample.name} failed:\n{result.stdout}\n{result.stderr}")
    paths = dict(_PATH_LINE.findall(result.stdout))
    sample.path = ", ".join(paths[e] for e in sample.extensions if e in paths) or "(all)"
    if png.is_file():
        with Image.open(png) as image:
            image.thumbnail((PREVIEW_PX, PREVIEW_PX))
            IMG.mkdir(parents=True, exist_ok=True)
            image.save(IMG / png.name, optimize=True)
        sample.preview = png.name


def table(samples: list[Sample], device_label: str) -> str:
    lines = [
        f"Paths as taken on `{device_label}` (regenerate: `python docs/make_gallery.py`).",
        "",
        "| sample | extension | command | path taken | output |",
        "|---|---|---|---|---|",
    ]
    for s in samples:
        ext = ", ".join(f"`{e}`" for e in s.extensions)
        preview = f"![{s.preview}](../docs/img/{s.preview})" if s.preview else ""
        lines.append(f"| `{s.name}` | {ext} | `{s.command}` | {s.path} | {preview} |")
    return "\n".join(lines)


def listed_in_readme() -> tuple[list[str], list[str]]:
    """(sample names, preview file names) the README's gallery table lists."""
    text = README.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{README} has no {BEGIN} ... {END} block")
    block = text[text.index(BEGIN) : text.index(END)]
    names = re.findall(r"^\| `([\w.]+\.py)` \|", block, re.MULTILINE)
    previews = re.findall(r"\(\.\./docs/img/([\w.-]+\.png)\)", block)
    return names, previews


def check() -> list[str]:
    """Problems of the committed gallery (empty when consistent)."""
    names, previews = listed_in_readme()
    present = [s.name for s in discover()]
    problems = [f"{n} is not in the README gallery" for n in present if n not in names]
    problems += [f"the gallery lists {n}, which does not exist" for n in names if n not in present]
    problems += [f"docs/img/{p} is missing" for p in previews if not (IMG / p).is_file()]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", help="as PYOPENCL_CTX: '0:0', 'nvidia', ...")
    parser.add_argument("--check", action="store_true", help="only check the committed table")
    args = parser.parse_args()
    if args.check:
        problems = check()
        print("\n".join(problems) or "gallery is consistent")
        return 1 if problems else 0
    import qcom_ext

    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    label = qcom_ext.probe().label
    samples = discover()
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            print(f"running {sample.name} ...", flush=True)
            run(sample, args.device, Path(tmp))
    text = README.read_text()
    head, tail = text.split(BEGIN)[0], text.split(END)[1]
    README.write_text(f"{head}{BEGIN}\n{table(samples, label)}\n{END}{tail}")
    print(f"wrote {README.relative_to(ROOT)} and {len(list(IMG.glob('*.png')))} previews")
    return 0


if __name__ == "__main__":
    sys.exit(main())
