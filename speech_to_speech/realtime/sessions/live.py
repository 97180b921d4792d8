"""A session that outlives its socket: the service, its unit and journal, apart from the connection.

A :class:`LiveSession` owns what a conversation needs (the service over its
pipeline unit, the send loop, the guard, the replay journal) and lives
until it is closed, times out, or its socket has been gone for
``disconnect_grace_s``. An :class:`~speech_to_speech.realtime.sessions.attachment.Attachment`
is one socket serving it: a writer that sends the session's frames, a
receiver that feeds client events in (attachment.py). When a socket drops without a goodbye the session detaches and
goes on (its output is journaled); a new socket may resume it and gets the
events it missed, in order; a socket that resumes a session another socket
still holds replaces that one.

Every server event leaves through :meth:`LiveSession.emit`: it is stamped
(``event_id``, ``server_event_seq``), serialised once, journaled, and queued
for the attached socket. Connection-level events (``session.resumed``,
``session.replaced``, ``session.heartbeat_ack``) go to one socket only and
carry no seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import INTERNAL_ERROR, NORMAL_CLOSURE, error_codes
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events import session as events
from speech_to_speech.realtime.connection.frames import Frame, to_frame
from speech_to_speech.realtime.connection.outbound import OutboundQueue
from speech_to_speech.realtime.connection.transport import Transport
from speech_to_speech.realtime.metrics import ServerMetrics
from speech_to_speech.realtime.service.capabilities import session_capabilities
from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.realtime.service.send_loop import attach_wakeup, detach_wakeup, send_loop
from speech_to_speech.realtime.service.session_events import ResumeRequest
from speech_to_speech.realtime.sessions.attachment import (
    FLUSH_TIMEOUT_S,
    GOODBYE_CODES,
    Attachment,
    Incoming,
    cancel_tasks,
    receive,
)
from speech_to_speech.realtime.sessions.claim import UnitLease
from speech_to_speech.realtime.sessions.guard import Closing, guard, output_overflow
from speech_to_speech.realtime.sessions.journal import MemoryJournal, ReplayJournal
from speech_to_speech.realtime.sessions.registry import SessionRegistry
from speech_to_speech.realtime.sessions.restore import lost_response_done, restore_service
from speech_to_speech.realtime.sessions.store import SessionLink, SessionStore, StoredSession
from speech_to_speech.realtime.sessions.store.base import Snapshot

log = logging.getLogger(__name__)

# Events after which the store's copy of the session object or conversation is out of date.
STATE_EVENTS = frozenset({"session.created", "session.updated", "conversation.item.added", "conversation.item.done",
                          "conversation.item.deleted", "conversation.item.truncated", "response.done",
                          "conversation.item.input_audio_transcription.completed", "playback.acknowledged"})


class LiveSession:
    """One conversation over one pipeline unit, served by at most one socket at a time."""

    def __init__(self, lease: UnitLease, settings: ServerSettings, *,
                 media: Any = None,
                 validate_language: Callable[[str | None, str | None], str | None] | None = None,
                 metrics: ServerMetrics | None = None,
                 registry: SessionRegistry[LiveSession] | None = None,
                 journal: ReplayJournal | None = None, store: SessionStore | None = None,
                 restored: StoredSession | None = None) -> None:
        self.lease = lease  # kept once the session's tasks run: the end of _stop releases it
        self.unit = unit = lease.unit
        self.pool = lease.pool
        self.settings = settings
        self.metrics = metrics
        self.registry = registry  # None: the session cannot be resumed (WebRTC: it dies with its call)
        local = MemoryJournal(settings.limits.replay_journal_max_bytes, settings.limits.replay_journal_ttl_s)
        self.journal = journal or local
        loop = asyncio.get_running_loop()
        self.closer: asyncio.Future[Closing | None] = loop.create_future()  # None: the client went
        self.finished: asyncio.Future[None] = loop.create_future()
        self.attachment: Attachment | None = None
        self.generation = 0
        self.detached_at: float | None = None
        self._seq = 0
        self._tasks: list[asyncio.Task[Any]] = []
        self._grace: asyncio.Task[None] | None = None
        self.service = RealtimeService(
            unit, settings, self.emit, media=media, validate_language=validate_language, session_control=self,
            metrics=metrics)
        if restored is not None:  # taken over from another replica (sessions/move.py)
            restore_service(self.service, restored)
            local.restore(restored.frames, restored.floor)
            self._seq, self.generation = restored.last_seq, 1
        self.id: str = self.service.state.session["id"]
        # Where another replica finds this session (None: this process only); moved: it was handed over.
        self.link: SessionLink | None = None
        if store is not None and registry is not None and journal is None:
            self.link = store.link(self.id, local, self._snapshot)
            self.journal = self.link.journal
        self.moved = False

    @property
    def resumable(self) -> bool:
        return self.registry is not None

    # ------------------------------------------------------------ output: the one exit

    def emit(self, event: ServerEvent) -> None:
        """Stamp, serialise and journal ``event``, and queue it for the attached socket (if any)."""
        self._emit(event)

    def _emit(self, event: ServerEvent) -> Frame:
        self._seq += 1
        frame = to_frame(event, self._seq)
        self.journal.append(self._seq, frame)
        if self.link is not None and frame.type in STATE_EVENTS:
            self.link.changed()
        if self.metrics is not None:
            self.metrics.event_sent(event)
        if self.attachment is not None:
            self.attachment.outgoing.put(frame)
        return frame

    def capabilities(self) -> dict[str, Any]:
        return session_capabilities(resumable=self.resumable, media_track=self.service.media is not None,
                                    multi_session=self.pool.size > 1, turn_detector=self.unit.detects_turns)

    # ------------------------------------------------------------ lifetime

    def start(self, transport: Transport) -> Attachment:
        """Attach the first socket, say ``session.created`` and start the session's own tasks."""
        token = self.registry.add(self.id, self) if self.registry is not None else None
        attachment = self._attach(transport, ())
        fields: events.SessionAttachment = {"session_id": self.id, "attachment_generation": attachment.generation}
        if token is not None:
            fields["resume_token"] = token
            if self.link is not None:
                self.link.token(token)
        wake = attach_wakeup(self.unit, asyncio.get_running_loop())
        self.service.start(fields, {"capabilities": self.capabilities()})
        self._start_tasks(wake)
        return attachment

    def adopt(self, transport: Transport, request: ResumeRequest, token: str, stored: StoredSession) -> Attachment:
        """Serve a session taken over from another replica: resumed as :meth:`resume` does, then its
        interrupted response (if any) ended as failed, since its server was lost."""
        assert self.registry is not None
        self.registry.adopt(self.id, self, token)
        self._seq = max(self._seq, request.last_received_server_event_seq)  # what the client got past the store
        wake = attach_wakeup(self.unit, asyncio.get_running_loop())
        attachment = self.resume(transport, request, token)
        lost = lost_response_done(stored, request.last_finished_response_id)
        if lost is not None:
            self.emit(lost)
        self._start_tasks(wake)
        return attachment

    def move_out(self) -> None:
        """Another replica takes this session: fail its response, replace its socket, end it here (the
        store keeps it). Its last events reach the store before the lease goes (``_stop``)."""
        if self.closer.done():
            return
        self.moved = True
        if self.registry is not None:
            self.registry.remove(self.id)
        if self.service.response is not None:
            self.service.fail_active(error_codes.SESSION_MOVED, "The session moved to another server")
        if self.attachment is not None:
            self.attachment.release("replaced")
            self._count("replaced")
        self.end(None)

    def _snapshot(self) -> Snapshot:
        service = self.service
        response = service.response
        return Snapshot(service.state.session, service.conversation.export(service.playback.history_text),
                        service.last_client_event_id, service.conversation_id,
                        tuple(item["id"] for item in response.output) if response is not None else ())

    def _start_tasks(self, wake: Any) -> None:
        self.lease.keep()  # from here on _run's _stop hands the unit back, not the Entry that claimed it
        name = f"unit{self.unit.index}"
        self._tasks = [
            asyncio.create_task(send_loop(self.unit, self.service, wake), name=f"{name}-send-loop"),
            asyncio.create_task(self._guard(), name=f"{name}-guard"),
        ]
        self._tasks.append(asyncio.create_task(self._run(), name=f"{name}-session"))

    async def _guard(self) -> None:
        closing = await guard(self.service, self.settings, lambda: self.attachment is None)
        self.end(closing)

    def end(self, closing: Closing | None) -> None:
        """End the session: with ``closing`` the client is told why; None: it went without a word."""
        if not self.closer.done():
            self.closer.set_result(closing)

    async def _run(self) -> None:
        helpers = self._tasks[:2]
        try:
            await asyncio.wait([self.closer, *helpers], return_when=asyncio.FIRST_COMPLETED)
            for task in helpers:
                if task.done() and not task.cancelled() and task.exception() is not None:
                    log.info("session %s on unit %d ended: %r", self.id, self.unit.index, task.exception())
            if self.registry is not None:
                self.registry.remove(self.id)  # from now on a resume finds nothing
            closing = self.closer.result() if self.closer.done() else None
            attachment = self.attachment
            if attachment is not None and closing is not None:
                await self._say_goodbye(attachment, closing)
        finally:
            await self._stop()

    async def _say_goodbye(self, attachment: Attachment, closing: Closing) -> None:
        """Tell the client why, let what is queued reach it (briefly), then close with the code."""
        log.info("closing session %s: %s", self.id, closing.reason)
        if not closing.reported and self.service.response is not None:
            self.service.fail_active(closing.error_code, closing.message)  # the error, and the response failed
        elif not closing.reported:
            self.service.emit(events.error_event(closing.error_code, closing.message, type=closing.error_type))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(attachment.outgoing.join(), FLUSH_TIMEOUT_S)
        with contextlib.suppress(Exception):
            await attachment.transport.close(closing.code, closing.reason)

    async def _stop(self) -> None:
        if self.registry is not None:
            self.registry.remove(self.id)
        if self.detached_at is not None and self.metrics is not None:  # ended while detached (a shutdown)
            self.metrics.detached_sessions.dec()
        self.detached_at = None
        attachment, self.attachment = self.attachment, None
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        if self._grace is not None:
            tasks.append(self._grace)
        if attachment is not None:
            attachment.release("ended")
            tasks.extend(attachment.tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        with contextlib.suppress(Exception):
            await self.service.aclose()  # its MCP connections and calls (realtime/tools/)
        detach_wakeup(self.unit)
        self.lease.release()
        self.journal.close()
        if self.link is not None:
            closing = self.closer.result() if self.closer.done() else None
            shutdown = closing is not None and closing.error_code == error_codes.SERVER_SHUTTING_DOWN
            await self.link.finish(keep=self.moved or shutdown)  # kept: it resumes on another replica
        log.info("session %s on unit %d closed", self.id, self.unit.index)
        if not self.finished.done():
            self.finished.set_result(None)

    # ------------------------------------------------------------ sockets

    def _attach(self, transport: Transport, prelude: tuple[Frame, ...]) -> Attachment:
        self.generation += 1

        def overflowed() -> None:
            # At once (inside the emit that overflowed): a response.done the same drain would queue must be failed.
            closing = output_overflow(self.settings)
            self.service.fail_active(closing.error_code, closing.message)
            limits = self.settings.limits
            self.emit(events.session_closed(self.id, closing.error_code, {
                "max_pending_output_bytes": limits.max_pending_output_bytes_per_session,
                "max_pending_output_events": limits.max_pending_output_events_per_session}))
            if self.registry is not None:
                self.registry.remove(self.id)  # a session closed for its slow client cannot be resumed
            self.end(closing)

        outgoing = OutboundQueue(self.settings.limits.max_pending_output_bytes_per_session,
                                 self.settings.limits.max_pending_output_events_per_session, overflowed)
        attachment = Attachment(self.generation, transport, outgoing, prelude)
        self.attachment = attachment
        if self.detached_at is not None:
            self._count("resumed", -1)
        elif self.generation > 1:
            self._count("resumed")
        self.detached_at = None
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        self.service.last_activity = time.monotonic()
        return attachment

    def resume(self, transport: Transport, request: ResumeRequest, token: str) -> Attachment:
        """Take the session over with ``transport``: the replay after the client's cursor, then live events.

        Runs without awaiting, so no event can fall between the journal read and the new socket's queue.
        """
        if self.link is not None:
            self.link.token(token)
        old, self.attachment = self.attachment, None  # a resync below is journaled, not queued to the old socket
        replay = self.journal.after(request.last_received_server_event_seq)
        session = {**self.service.state.session, "capabilities": self.capabilities()}
        resumed = to_frame(events.session_resumed(self.id, session, self.generation + 1, token,
                                                  self.service.last_client_event_id))
        prelude = [resumed]
        if not replay.complete:
            prelude.append(self._emit(events.session_resync_required(self.id, "journal_gap")))
        prelude.extend(replay.frames)
        if old is not None:
            old.release("replaced")
            self._count("replaced")
        log.info("session %s resumed (generation %d) after seq %d: %d event(s) replayed%s", self.id,
                 self.generation + 1, request.last_received_server_event_seq, len(replay.frames),
                 "" if replay.complete else ", with a gap")
        return self._attach(transport, tuple(prelude))

    async def serve(self, attachment: Attachment, incoming: Incoming) -> None:
        """Pump ``attachment`` until its socket goes, a newer one replaces it, or the session ends."""
        name = f"unit{self.unit.index}-gen{attachment.generation}"
        writer = asyncio.create_task(attachment.write(), name=f"{name}-writer")
        receiver = asyncio.create_task(receive(self.service, incoming), name=f"{name}-receiver")
        attachment.tasks.extend((writer, receiver))
        waiters: list[asyncio.Future[Any]] = [writer, receiver, attachment.released]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for task in (writer, receiver):
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.info("session %s, socket %d: %r", self.id, attachment.generation, task.exception())
        if attachment.released.done() and attachment.released.result() == "replaced":
            await attachment.hand_over(self.id)
            return
        if not self.closer.done() and self.attachment is attachment:
            code = attachment.transport.peer_close_code
            if not self.resumable or (receiver.done() and code in GOODBYE_CODES):
                log.info("session %s: its socket closed (%s)", self.id, code)
                self.end(None)  # a goodbye, or a transport that cannot come back: the session ends now
                if self.resumable:
                    return  # nothing left to say on a closed socket: the client may connect again at once
            else:
                self._detach(attachment, code)
                await cancel_tasks(writer, receiver)
                with contextlib.suppress(Exception):  # 1011, not a final code: the client may resume
                    await attachment.transport.close(INTERNAL_ERROR, "connection lost; the session can be resumed")
                return
        await asyncio.shield(self.finished)  # the session is ending: its goodbye may still be flushing

    def _detach(self, attachment: Attachment, code: int | None) -> None:
        log.info("session %s lost its socket (close code %s); %g s to resume", self.id, code,
                 self.settings.limits.disconnect_grace_s)
        self.attachment = None
        self.detached_at = time.monotonic()
        self._count("detached", +1)
        self._grace = asyncio.create_task(self._expire_after(self.settings.limits.disconnect_grace_s),
                                          name=f"unit{self.unit.index}-grace")

    async def _expire_after(self, grace_s: float) -> None:
        await asyncio.sleep(grace_s)
        self.expire("disconnect_grace_expired")

    def expire(self, reason: str) -> None:
        """End a detached session: ``session.expired`` is journaled (no socket hears it) and the unit freed."""
        if self.closer.done():
            return
        if self.registry is not None:
            self.registry.remove(self.id)
        log.info("session %s expired: %s", self.id, reason)
        self._count(reason, -1 if self.detached_at is not None else 0)
        self.detached_at = None
        self.emit(events.session_expired(self.id, reason))
        self.end(Closing(NORMAL_CLOSURE, reason, reason, reason, reported=True))

    def _count(self, event: str, detached_change: int = 0) -> None:
        if self.metrics is not None:
            self.metrics.session_event(event, detached_change)

    # ------------------------------------------------------------ lifecycle events (SessionControl)

    def heartbeat(self) -> None:
        if self.attachment is not None:
            self.attachment.outgoing.put(to_frame(events.session_heartbeat_ack(self.id)))

    def event_ack(self, seq: int) -> None:
        self.journal.ack(min(seq, self._seq))

    def close_by_client(self) -> None:
        self.emit(events.session_closed(self.id, error_codes.CLIENT_CLOSE))
        self.end(Closing(NORMAL_CLOSURE, "client close", error_codes.CLIENT_CLOSE, "client close", reported=True))

    def client_event_taken(self) -> None:
        if self.link is not None:
            self.link.changed()  # the store's marker moves with what it holds of the conversation
