"""The per-extension pages (docs/extensions/) and the public API's examples stay complete."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest
from doc_quotes import check_page

import qcom_ext
from qcom_ext.device.extensions import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "extensions"
INDEX = PAGES / "README.md"
HEADINGS = (
    "## What the hardware does",
    "## Host API",
    "## Kernel builtins",
    "## Fallback semantics",
    "## Where native hardware could differ",
    "## Sample",
    "## Limits queried",
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
API_NAME = re.compile(r"`(qcom_ext(?:\.[A-Za-z_]\w*)+)")


def all_pages() -> list[Path]:
    return sorted(PAGES.glob("*.md"))


def sections(text: str) -> dict[str, str]:
    """Heading -> body for every ``## `` heading of a page."""
    parts = re.split(r"^(## .+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts), 2)}


def resolve(dotted: str) -> object:
    """``qcom_ext.a.b`` as an attribute chain from the package, importing submodules."""
    obj: object = qcom_ext
    parts = dotted.split(".")
    for i, part in enumerate(parts[1:], start=2):
        if not hasattr(obj, part):
            obj = importlib.import_module(".".join(parts[:i]))
        else:
            obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_extension_has_a_page_with_all_sections(name):
    page = PAGES / f"{name}.md"
    assert page.is_file(), f"{name} has no page {page.relative_to(ROOT)}"
    text = page.read_text()
    assert text.startswith(f"# `{name}`")
    found = sections(text)
    for heading in HEADINGS:
        assert heading in found, f"{page.name}: missing {heading!r}"
        assert found[heading], f"{page.name}: {heading!r} is empty"
    assert [h for h in found if h in HEADINGS] == list(HEADINGS), f"{page.name}: order"


def test_no_page_for_an_unknown_extension():
    names = {p.stem for p in all_pages()} - {"README"}
    assert names == set(REGISTRY)


def test_index_lists_every_extension_with_its_page():
    text = INDEX.read_text()
    for name, ext in REGISTRY.items():
        rows = [line for line in text.splitlines() if line.startswith(f"| `{name}` |")]
        assert len(rows) == 1, f"{name}: {len(rows)} index rows"
        assert f"]({name}.md)" in rows[0]
        assert f"| {ext.side} |" in rows[0]
        for tier in ext.khronos:
            assert f"`{tier}`" in rows[0]
        assert (ext.fallback or ext.no_fallback_reason) in rows[0]


def test_top_level_readme_links_the_index():
    assert "docs/extensions/README.md" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("page", all_pages(), ids=lambda p: p.name)
def test_relative_links_resolve(page):
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.name}: broken link {target}"


@pytest.mark.parametrize("page", all_pages(), ids=lambda p: p.name)
def test_named_api_exists(page):
    for dotted in API_NAME.findall(page.read_text()):
        try:
            resolve(dotted)
        except (AttributeError, ImportError) as exc:
            pytest.fail(f"{page.name}: `{dotted}` is not in qcom_ext ({exc})")


def test_resolve_rejects_a_made_up_name():
    with pytest.raises((AttributeError, ImportError)):
        resolve("qcom_ext.no_such_function")


def public_callables() -> list[str]:
    names = []
    for name in qcom_ext.__all__:
        obj = getattr(qcom_ext, name)
        if inspect.ismodule(obj) or not callable(obj):
            continue  # constants (REGISTRY, CACHE_POLICIES, __version__) and qcom_ext.ops
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue
        names.append(name)
    return names


@pytest.mark.parametrize("name", public_callables())
def test_public_callable_has_an_example(name):
    obj = getattr(qcom_ext, name)
    docs = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        docs.append(inspect.getmodule(obj).__doc__ or "")
    assert any(">>>" in doc for doc in docs), f"qcom_ext.{name} has no >>> example"


# ---- quoted signatures, prototypes and builtins against the code (tests/doc_quotes.py) ----

TOPIC_PAGES = sorted(p for p in (ROOT / "docs").glob("*.md"))
QUOTING_PAGES = TOPIC_PAGES + all_pages()


@pytest.mark.parametrize("page", QUOTING_PAGES, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_quoted_code_matches_the_code(page):
    problems = check_page(page.read_text())
    assert not problems, f"{page.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_the_quote_checks_cover_the_pages():
    seen: list[str] = []
    for page in QUOTING_PAGES:
        check_page(page.read_text(), seen)
    kinds = {
        kind: {s.split(":", 1)[1] for s in seen if s.startswith(kind + ":")}
        for kind in ("python", "c", "prototype", "kernel")
    }
    assert len(kinds["python"]) > 100, kinds["python"]
    assert {"qcom_ext.create_context", "rec.replay", "frame.write"} <= kinds["python"]
    assert {"qcom_convolve_imagef", "qcom_udot8_acc", "qcom_sub_group_shuffle_up"} <= kinds[
        "kernel"
    ]
    assert "clSetPerfHintQCOM" in kinds["prototype"]


def test_every_qcom_entry_point_is_quoted_with_its_prototype_on_its_page():
    for cdef in sorted((ROOT / "cdefs").glob("cl_qcom_*.h")):
        names = re.findall(r"\(\s*\*\s*(cl\w+QCOM)_fn\s*\)", cdef.read_text())
        if not names:
            continue
        seen: list[str] = []
        page = PAGES / f"{cdef.stem}.md"
        assert not check_page(page.read_text(), seen)
        missing = {f"prototype:{n}" for n in names} - set(seen)
        assert not missing, f"{page.name} quotes no prototype of {sorted(missing)}"


WRONG = {
    # Python: a code span (call or signature) and a Python block
    "`qcom_ext.create_context(perf_hnit='low')`": "has no parameter 'perf_hnit'",
    "`qcom_ext.set_perf_hint(ctx)`": "needs 'hint'",
    "`qcom_ext.set_perf_hint(ctx, 'low', 3)`": "takes 2 positional argument(s)",
    "`qcom_ext.no_such_function(ctx)`": "is not in qcom_ext",
    "`qcom_ext.create_context(devices=None, *, perf_hint=None, priority_hint=None)`": (
        "omits 'protected'"
    ),
    "`qcom_ext.create_context(devices=None, *, perf_hint='low', ...)`": (
        "'perf_hint' defaults to None"
    ),
    "`qcom_ext.create_context(*, devices=None, ...)`": "'devices' is quoted after `*`",
    "`create_image(compressed=True)`": "needs 'context'",
    "```python\nimport qcom_ext\nwith qcom_ext.Recording(q) as rec:\n"
    "    rec.replay(q, arg={})\n```": "has no parameter 'arg'",
    # C entry points
    "`clSetPerfHintQCOM(context)`": "takes 2 arguments, the quote has 1",
    "`clSetPerfHintQCM(context, hint)`": "not declared in cdefs/",
    "```c\ncl_int clSetPerfHintQCOM(cl_context context, cl_ulong perf_hint);\n```": (
        "quoted int32_t(*)(struct _cl_context *, uint64_t)"
    ),
    "```c\ncl_mem clCreateBufferFromImageQCOM(cl_mem image, cl_mem_flags flags);\n```": (
        "takes 3 arguments, the quote has 2"
    ),
    # kernel builtins
    "`int qcom_udot8_acc(uint p0, uint p1)`": "takes [3] arguments",
    "`float qcom_udot8_acc(uint p0, uint p1, int acc)`": "returns int",
    "```c\nfloat4 v = qcom_read_imagef_bicubic(src, s);\n```": "takes [3] arguments",
    "`qcom_no_such_builtin(x)`": "not defined by kernels/compat",
}


@pytest.mark.parametrize("snippet", list(WRONG), ids=range(len(WRONG)))
def test_the_quote_checks_fail_on_wrong_snippets(snippet):
    problems = check_page(f"# page\n\n{snippet}\n")
    assert any(WRONG[snippet] in p for p in problems), problems


@pytest.mark.parametrize(
    "snippet",
    [
        "`qcom_ext.create_context(devices=None, *, perf_hint=None, priority_hint=None, "
        "protected=False)`",
        "`qcom_ext.create_context(perf_hint='low')`",
        "`create_image(..., compressed=True)`",
        "`clQueryImageInfoQCOM(..., CL_IMAGE_SIZE_QCOM, ...)`",
        "```c\ncl_int clSetPerfHintQCOM(cl_context context, cl_perf_hint_qcom hint);\n```",
        "`int qcom_dot8_acc(uint p0, uint p1, int acc)`",
        "`gentype qcom_sub_group_shuffle_xor(gentype value, uint offset, uint width, gentype d)`",
    ],
)
def test_the_quote_checks_pass_right_snippets(snippet):
    assert check_page(f"# page\n\n{snippet}\n") == []
