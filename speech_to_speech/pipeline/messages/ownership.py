"""What the items made for a response share: the response and the CancelScope generation they belong to.

Every item that can go stale (anything produced for a response) is :class:`ResponseOwned`; the few
that go out even when stale are :class:`AlwaysDelivered`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResponseOwned:
    """An item made for one response: which one, and under which generation of the CancelScope.

    Both are needed: one response id can be asked of the LLM twice (a speculative
    request, then the real one), and only the generation tells the two apart.
    An item of a generation that was cancelled is stale, and dropped.
    """

    response_id: str
    generation: int


class AlwaysDelivered:
    """Marks an item that goes out even when its generation is stale: a response's sentinel (the send
    loop needs it to close the response), usage (billed even for a cancelled response), error reports."""
