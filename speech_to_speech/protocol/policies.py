"""The policies a session may choose (docs/sessions.md); the first value of each is the default.

- ``overlap_policy``: what user speech over the assistant does: judge it by
  its words before it may cut the answer off (``adaptive``: a listener's
  "yeah" is acknowledged, anything else barges in), cut it off at once
  (``barge_in_on_speech``), or let the answer go on while the overlap is
  judged by its length (``listen_only``);
- ``playback_commit_policy``: how much of an answer enters the LLM's history:
  all of it once done (``commit_all_on_done``), or what ``playback.ack`` says
  was heard (``ack_only``).
"""

from __future__ import annotations

from typing import Literal, get_args

OverlapPolicy = Literal["adaptive", "barge_in_on_speech", "listen_only"]
PlaybackCommitPolicy = Literal["commit_all_on_done", "ack_only"]

# Each value by name; the annotations make the type checker hold them to the Literals above.
ADAPTIVE: OverlapPolicy = "adaptive"
BARGE_IN_ON_SPEECH: OverlapPolicy = "barge_in_on_speech"
LISTEN_ONLY: OverlapPolicy = "listen_only"
COMMIT_ALL_ON_DONE: PlaybackCommitPolicy = "commit_all_on_done"
ACK_ONLY: PlaybackCommitPolicy = "ack_only"

OVERLAP_POLICIES: tuple[str, ...] = get_args(OverlapPolicy)
PLAYBACK_COMMIT_POLICIES: tuple[str, ...] = get_args(PlaybackCommitPolicy)
