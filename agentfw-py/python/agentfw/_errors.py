"""The exceptions agentfw raises. Each carries the core's stable ``code``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentfw._agentfw import Diagnostic


class AgentfwError(Exception):
    """Base of every error agentfw raises. ``code`` is stable, e.g. ``open.replayed``."""

    code: str

    def __init__(self, message: str, code: str = "agentfw.error") -> None:
        super().__init__(message)
        self.code = code


class InputError(AgentfwError, ValueError):
    """An argument could not be turned into what the core takes (``input.invalid``), or a
    trust file has errors (``trust.invalid``)."""


class PolicyError(AgentfwError, ValueError):
    """Rules did not compile (``policy.invalid``); ``diagnostics`` say where and why."""

    diagnostics: list[Diagnostic]

    def __init__(self, message: str, code: str = "policy.invalid") -> None:
        super().__init__(message, code)
        self.diagnostics = []


class MessageError(AgentfwError, ValueError):
    """A malformed message id (``message.bad_id``) or body (``message.invalid_utf8``)."""


class KeysError(AgentfwError, ValueError):
    """A key file, public bundle or rotation was refused, or a keyring change failed
    (``keys.*``)."""


class SealError(AgentfwError, ValueError):
    """A body could not be sealed (``seal.*``)."""


class OpenError(AgentfwError):
    """An envelope was refused (``open.*``: ``open.replayed``, ``open.bad_signature``, …)."""


class HandoffError(AgentfwError):
    """A hand-off was refused or could not be signed (``handoff.*``)."""


class AdmissionError(AgentfwError, ValueError):
    """Admission input is not usable (``admission.*``)."""


class SnapshotError(AgentfwError, ValueError):
    """A snapshot or saved state does not parse (``snapshot.invalid``)."""


class FileError(AgentfwError, OSError):
    """A rule file or folder could not be read (``io.read``)."""


class InternalError(AgentfwError):
    """A bug in agentfw was caught at the boundary (``internal.panic``, ``internal.serialize``)."""


__all__ = [
    "AdmissionError",
    "AgentfwError",
    "FileError",
    "HandoffError",
    "InputError",
    "InternalError",
    "KeysError",
    "MessageError",
    "OpenError",
    "PolicyError",
    "SealError",
    "SnapshotError",
]
