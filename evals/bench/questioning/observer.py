"""What the agent loop tells the parts that watch it (questioners, recipe stage controllers)."""

from __future__ import annotations

from typing import Protocol

from inspect_ai.model import ChatMessageUser


class Observer(Protocol):
    """Sees each step of the agent loop and may add user messages."""

    async def on_reply(self, text: str) -> list[ChatMessageUser]:
        """After each assistant message."""
        ...

    async def on_tools(self, names: set[str]) -> list[ChatMessageUser]:
        """After the tool calls of a turn ran; ``names`` are the tools called."""
        ...

    async def on_failed_claim(self, report: str) -> list[ChatMessageUser]:
        """After a submission failed verification."""
        ...
