"""The exceptions of the llmc package, one per llmc_status."""


class Error(RuntimeError):
    """A failed llmc call; `status` is the llmc_status code."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class InvalidArgument(Error, ValueError):
    """Wrong shape, dtype or device of a tensor, or a bad option."""


class CompileError(Error):
    """The model did not load or compile; the message has the diagnostics."""


class ClosedStep(Error):
    """The step was closed (or its handle is not live)."""
