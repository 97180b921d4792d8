"""Identifiers in the shapes Realtime clients expect (``item_…``, ``resp_…``, …)."""

from __future__ import annotations

import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def item_id() -> str:
    return new_id("item")


def response_id() -> str:
    return new_id("resp")


def call_id() -> str:
    return new_id("call")


def event_id() -> str:
    return new_id("event")
