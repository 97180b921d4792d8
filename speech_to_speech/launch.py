"""The ``speech-to-speech`` command's entry point: the process's thread pools are limited before anything loads.

Kept apart from :mod:`speech_to_speech.cli`, which imports numpy and the
backends' modules as it builds its parser: by then the runtimes have read
their settings (see :mod:`speech_to_speech.cpu.unsized_pools`).
"""

from __future__ import annotations

from speech_to_speech.cpu.unsized_pools import limit_unsized_pools


def main() -> int:
    limit_unsized_pools()
    from speech_to_speech.cli import main as cli_main

    return cli_main()
