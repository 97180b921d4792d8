"""The documentation's links resolve: every relative link names a file of the repository, and every
``#anchor`` a heading of the page it points to (GitHub's heading ids)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "demo").glob("**/README.md")])
PAGES = [page for page in PAGES if "node_modules" not in page.parts]
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)|\!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The ids GitHub gives the headings of ``page``: lower case, punctuation out, spaces to hyphens."""
    seen: dict[str, int] = {}
    ids = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        ids.add(slug if count == 0 else f"{slug}-{count}")
    return ids


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for link in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):  # http:, https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.is_file() and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {target.relative_to(ROOT)}")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_readme_is_a_front_door() -> None:
    """The README stays short; what it leaves out lives in docs/ and is linked from it."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    outside = re.compile(r"[a-z][a-z0-9+.-]*:")
    linked = {(ROOT / link.partition("#")[0]).resolve()
              for link in links(ROOT / "README.md") if not outside.match(link)}
    for page in (ROOT / "docs").glob("*.md"):
        assert page.resolve() in linked, f"README.md does not link {page.relative_to(ROOT)}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_code_blocks_are_closed(page: Path) -> None:
    """An unclosed fence turns the rest of the page into code (and hides its links from the test above)."""
    fences = [line for line in page.read_text().splitlines() if re.match(r"\s*(```|~~~)", line)]
    assert len(fences) % 2 == 0, f"{page.relative_to(ROOT)}: {len(fences)} fence lines"
