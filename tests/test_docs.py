"""The per-extension pages (docs/extensions/) and the public API's examples stay complete."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import qcom_ext
from qcom_ext.extensions import REGISTRY

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
