"""The command's entry point gives the unsized thread pools one thread before anything loads them."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points

from speech_to_speech.cpu.unsized_pools import VARIABLE, limit_unsized_pools


def test_an_unset_count_becomes_one_thread() -> None:
    environ: dict[str, str] = {}
    assert limit_unsized_pools(environ) is True
    assert environ[VARIABLE] == "1"


def test_a_count_the_user_chose_is_kept() -> None:
    environ = {VARIABLE: "4"}
    assert limit_unsized_pools(environ) is False
    assert environ[VARIABLE] == "4"


def test_an_empty_count_counts_as_unset() -> None:
    environ = {VARIABLE: " "}
    assert limit_unsized_pools(environ) is True
    assert environ[VARIABLE] == "1"


def test_the_installed_command_starts_at_the_launcher() -> None:
    (script,) = [point for point in entry_points(group="console_scripts") if point.name == "speech-to-speech"]
    assert script.value == "speech_to_speech.launch:main"


def test_the_launcher_sets_the_count_before_numpy_is_loaded() -> None:
    probe = (
        "import os, sys\n"
        "import speech_to_speech.launch as launch\n"
        "loaded_early = 'numpy' in sys.modules\n"
        "sys.argv = ['speech-to-speech']\n"
        "launch.main()\n"
        "print(loaded_early, 'numpy' in sys.modules, os.environ.get('OMP_NUM_THREADS'))\n"
    )
    environ = {key: value for key, value in os.environ.items() if key != VARIABLE}
    done = subprocess.run([sys.executable, "-c", probe], env=environ, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "1"], done.stderr


def test_running_the_cli_module_starts_again_at_the_launcher() -> None:
    # `python -m speech_to_speech.cli` has loaded the runtimes before it could size them: it must hand over.
    probe = (
        "import os, runpy, sys\n"
        "def execv(path, args):\n"
        "    print(args[1:])\n"
        "    sys.exit(0)\n"
        "os.execv = execv\n"
        "sys.argv = ['cli', 'serve', '--port', '9']\n"
        "runpy.run_module('speech_to_speech.cli', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "['-m', 'speech_to_speech', 'serve', '--port', '9']", done.stderr
