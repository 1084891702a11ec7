"""Domain errors: a human sentence that says what to do, and one table of HTTP codes.

The API maps them to JSON responses, the MCP server to tool errors, the board to messages.
"""


class RelaybayError(Exception):
    status = 400

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class InvalidInput(RelaybayError):
    status = 400


class NotFound(RelaybayError):
    status = 404


class Ambiguous(RelaybayError):
    status = 409


class Refused(RelaybayError):
    """The write is understood but not allowed; nothing was written."""

    status = 403


class SenderRefused(Refused):
    pass


class RateLimited(RelaybayError):
    status = 429


class PayloadTooLarge(RelaybayError):
    status = 413
