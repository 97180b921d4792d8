"""speech_to_speech.protocol: the one home of the wire contract, which the client stands on alone."""

from __future__ import annotations

import subprocess
import sys
from typing import get_args

from speech_to_speech.protocol import error_codes, metadata, policies
from speech_to_speech.realtime.conversation import overlap, playback
from speech_to_speech.realtime.service import capabilities
from speech_to_speech.realtime.wire import errors, tool_results
from speech_to_speech.realtime.wire import session_model as session

SERVER_PACKAGES = {"realtime", "pipeline", "vad", "stt", "llm", "tts", "visemes", "registry"}


def test_importing_the_client_loads_no_part_of_the_server() -> None:
    # A fresh interpreter: this one has the server loaded already.
    probe = ("import sys, speech_to_speech.client, speech_to_speech.client.cli, speech_to_speech.client.local\n"
             "print(' '.join(sorted({m.split('.')[1] for m in sys.modules if m.startswith('speech_to_speech.')})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(done.stdout.split())
    assert "protocol" in loaded and not loaded & SERVER_PACKAGES, loaded


def test_the_old_homes_of_moved_names_still_give_the_same_objects() -> None:
    assert errors.SESSION_LIMIT_REACHED is error_codes.SESSION_LIMIT_REACHED
    assert errors.stage_failed is error_codes.stage_failed
    assert tool_results.encode_call_ids is metadata.encode_call_ids
    assert tool_results.FOLLOWUP_CALL_IDS_KEY == metadata.FOLLOWUP_CALL_IDS_KEY
    assert session.OverlapPolicy is policies.OverlapPolicy
    assert session.PlaybackCommitPolicy is policies.PlaybackCommitPolicy
    assert (overlap.BARGE_IN_ON_SPEECH, playback.ACK_ONLY) == (policies.BARGE_IN_ON_SPEECH, policies.ACK_ONLY)


def test_each_policy_default_comes_first_in_its_literal() -> None:
    assert get_args(policies.OverlapPolicy)[0] == policies.ADAPTIVE == session.SessionModel().overlap_policy
    assert (get_args(policies.PlaybackCommitPolicy)[0] == policies.COMMIT_ALL_ON_DONE
            == session.SessionModel().playback_commit_policy)
    assert capabilities.OVERLAP_POLICIES == ("adaptive", "barge_in_on_speech", "listen_only")
    assert capabilities.PLAYBACK_COMMIT_POLICIES == ("commit_all_on_done", "ack_only")


def test_call_ids_keep_the_most_recent_that_fit_a_metadata_value() -> None:
    ids = [f"call_{n:040d}" for n in range(20)]
    encoded = metadata.encode_call_ids(ids)
    assert len(encoded) <= metadata.METADATA_VALUE_LIMIT
    decoded = metadata.decode_call_ids(encoded)
    assert decoded == ids[-len(decoded):] and decoded
    assert metadata.followup_call_ids({metadata.FOLLOWUP_CALL_IDS_KEY: encoded}) == decoded
    assert metadata.decode_call_ids("not json") == metadata.decode_call_ids(None) == []
