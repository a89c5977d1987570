"""Exception types for mistakes a user can fix.

Every error the tool expects carries a message for humans and, where useful, a hint saying
what to do next. The CLI prints these without a traceback; anything else is a bug.
"""

from __future__ import annotations


class RecsdkError(Exception):
    """Base class: an expected failure with a human-readable message."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ConfigError(RecsdkError):
    """recsdk.toml is missing, malformed or has an invalid value."""


class UsageError(RecsdkError):
    """The command line asks for something that does not exist (unknown stage, operator)."""

    exit_code = 2


class SourceError(RecsdkError):
    """The torchrec source could not be fetched or failed verification."""


class PatchError(RecsdkError):
    """A patch of the series does not apply, or the source tree is not in a patchable state."""


class BuildError(RecsdkError):
    """A build step (wheel, operator, adapter) failed."""


class VerifyError(RecsdkError):
    """The verification suite failed or could not run."""


class LockError(RecsdkError):
    """Another run holds the build directory."""


class ToolMissingError(RecsdkError):
    """A tool required by the requested target is not installed."""


class BundleError(RecsdkError):
    """A build cannot be bundled (partial, stale) or a bundle is damaged or tampered with."""


class InstallError(RecsdkError):
    """A bundle cannot be installed into the environment asked for."""


class StageInputError(RecsdkError):
    """A stage was run on its own but the outputs of the stage it depends on are missing."""
