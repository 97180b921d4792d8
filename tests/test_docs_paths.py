"""Every file path the docs, docstrings and comments name exists: a path that moved is caught when it moves,
not by the next reader who follows it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "speech_to_speech"
# A relative path with at least one folder and a file's extension: ``realtime/service/send_loop.py``.
PATH = re.compile(r"(?<![\w/.\-])((?:[A-Za-z_][\w\-]*/)+[\w\-]+\.(?:py|md|yaml|json|sh|toml|ts|js))\b")
TEXTS = sorted(path for pattern in ("README.md", "docs/**/*.md", "speech_to_speech/**/*.py", "tests/**/*.py",
                                    "configs/*.yaml", "Makefile", "scripts/*")
               for path in ROOT.glob(pattern) if "node_modules" not in path.parts and path.is_file())


def exists(path: str, named_in: Path) -> bool:
    """Paths are written from the repository root, the package, tests/ or docs/, or from any folder above
    the file that names them (a module of realtime/ writes ``sessions/gate.py``); docs name the realtime
    rooms by their own folders."""
    bases = [ROOT, PACKAGE, ROOT / "tests", ROOT / "docs", PACKAGE / "realtime", *named_in.parents]
    return any((base / path).exists() for base in bases)


@pytest.mark.parametrize("text", TEXTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_named_paths_exist(text: Path) -> None:
    missing = sorted({match for match in PATH.findall(text.read_text(errors="replace"))
                      if not exists(match, text)})
    assert missing == [], f"{text.relative_to(ROOT)} names files that do not exist: {missing}"


def test_a_stale_path_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    gone = "realtime/service/" + "no_such_module.py"  # in two pieces, or this file would name it
    page.write_text(f"See `{gone}` and `llm/context_window.py`.")
    found = PATH.findall(page.read_text())
    assert found == [gone, "llm/context_window.py"]
    assert [exists(path, page) for path in found] == [False, True]


# A machine's own folders: a benchmark's JSON names its inputs as the README's commands do, from the checkout.
MACHINE_PATH = re.compile(r'"/(?:tmp|work|root|home|Users)/[^"]*"')


RESULTS = sorted((ROOT / "docs").glob("**/*.json"))


@pytest.mark.parametrize("result", RESULTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_benchmark_results_name_no_folder_of_the_machine_they_ran_on(result: Path) -> None:
    assert MACHINE_PATH.findall(result.read_text()) == []
