"""Typed errors raised by the library.

The CLI turns FluxLiteError into `flux-lite CMD: ERROR: <message>` and exit 1;
UsageError into exit 2. Format errors are also ValueErrors so that callers
parsing user input can catch either.
"""


class FluxLiteError(Exception):
    """A refused or failed operation (exit 1). `errno` mirrors Flux's where known."""

    errno = None

    def __init__(self, message, errno=None):
        super().__init__(message)
        if errno is not None:
            self.errno = errno

    @property
    def message(self):
        return str(self.args[0]) if self.args else ""


class UsageError(FluxLiteError):
    """Bad usage of a command (exit 2)."""


class FormatError(FluxLiteError, ValueError):
    """Malformed input in one of Flux's formats."""


class JobIDError(FormatError):
    pass


class IdsetError(FormatError):
    pass


class HostlistError(FormatError):
    pass


class FSDError(FormatError):
    pass


class EventlogError(FormatError):
    pass


class JobspecError(FormatError):
    pass


class RsetError(FormatError):
    pass


class ConfigError(FluxLiteError):
    pass


class NoInstanceError(FluxLiteError):
    pass
