"""``python -m speech_to_speech``: the same as the ``speech-to-speech`` command."""

import sys

from speech_to_speech.launch import main

sys.exit(main())
