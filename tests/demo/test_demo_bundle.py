"""The committed demo bundle (speech_to_speech/demo_static/) is what demo/ builds to.

demo/build.mjs records the sha256 of every source and every output in build-info.json. The
first tests compare those with the files in the repository, with no Node.js (fast, everywhere);
the last one rebuilds with the installed npm packages and compares byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from speech_to_speech.realtime.app.demo import STATIC_DIR

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "demo"
REBUILD = "run `make demo` and commit speech_to_speech/demo_static/"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_info() -> dict[str, dict[str, str]]:
    return dict(json.loads((STATIC_DIR / "build-info.json").read_text()))


def demo_sources() -> list[Path]:
    """The rule of demo/build.mjs: every file under demo/ but node_modules/, livekit/, dotfiles and *.md."""
    found = []
    for path in DEMO.rglob("*"):
        parts = path.relative_to(DEMO).parts
        if any(part.startswith(".") or part == "node_modules" for part in parts) or parts[0] == "livekit":
            continue
        if path.is_file() and path.suffix != ".md":
            found.append(path)
    return sorted(found)


def test_the_bundle_was_built_from_the_current_sources() -> None:
    recorded = build_info()["sources"]
    current = {path.relative_to(REPO).as_posix(): sha256(path) for path in demo_sources()}
    assert sorted(current) == sorted(recorded), f"demo/ has other files than the bundle was built from: {REBUILD}"
    changed = [name for name in current if current[name] != recorded[name]]
    assert not changed, f"changed since the bundle was built: {changed}: {REBUILD}"


def test_the_bundle_is_exactly_what_the_build_wrote() -> None:
    recorded = build_info()["outputs"]
    on_disk = sorted(path.name for path in STATIC_DIR.iterdir() if path.name != "build-info.json")
    assert on_disk == sorted(recorded)
    edited = [name for name in recorded if sha256(STATIC_DIR / name) != recorded[name]]
    assert not edited, f"edited by hand after the build: {edited}: edit demo/ instead and {REBUILD}"


@pytest.mark.node
def test_rebuilding_the_demo_gives_the_committed_bundle_byte_for_byte(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None or not (DEMO / "node_modules" / "esbuild").is_dir():
        pytest.skip("the demo's npm packages are not installed: `make demo` (or `npm ci --prefix demo`)")
    out = tmp_path / "demo_static"
    result = subprocess.run([node, str(DEMO / "build.mjs"), "--outdir", str(out)], cwd=DEMO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"the build failed:\n{result.stdout}\n{result.stderr}"
    rebuilt = sorted(path.name for path in out.iterdir())
    assert rebuilt == sorted(path.name for path in STATIC_DIR.iterdir())
    different = [name for name in rebuilt if (out / name).read_bytes() != (STATIC_DIR / name).read_bytes()]
    assert not different, f"the rebuild differs in {different}: {REBUILD}"
