"""Domain errors: a stable code and a human sentence that says what to do.

The code is what programs and tests rely on (as Zulip's `ErrorCode`); the sentence is what a
model or a person reads and may be reworded. One table maps each code to its HTTP status;
`error_body` is every JSON error answer, `tool_error_text` every MCP tool error, and the board
shows the sentence. Plain Python: the stdio MCP server imports this without Django.
"""

from enum import StrEnum


class ErrorCode(StrEnum):
    # Domain errors, raised by the actions and reads.
    INVALID_INPUT = "invalid_input"
    INVALID_JSON = "invalid_json"
    INVALID_IDENTIFIER = "invalid_identifier"
    BODY_TOO_LONG = "body_too_long"
    NOT_FOUND = "not_found"
    AMBIGUOUS_NAME = "ambiguous_name"
    REFUSED = "refused"
    SENDER_REFUSED = "sender_refused"
    LINK_HELD = "link_held"
    NAME_IN_USE = "name_in_use"
    HOOK_ENDED = "hook_ended"
    SELF_MESSAGE = "self_message"
    REPLY_TOO_DEEP = "reply_too_deep"
    ACK_NOT_PROVEN = "ack_not_proven"
    READ_NOT_PROVEN = "read_not_proven"
    NOT_YOUR_MAIL = "not_your_mail"
    RATE_LIMITED = "rate_limited"
    INBOUND_REFUSED = "inbound_refused"
    UNREAD_CAP = "unread_cap"
    UNPROVEN_NAMES_FULL = "unproven_names_full"
    BROADCAST_REACHES_NOBODY = "broadcast_reaches_nobody"
    INVALID_PATH = "invalid_path"
    CALLER_NOT_PROVEN = "caller_not_proven"
    PROCESS_NOT_PROVEN = "process_not_proven"
    OTHER_MACHINE = "other_machine"
    RESERVATION_HELD = "reservation_held"
    RESERVATIONS_FULL = "reservations_full"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    NOT_PENDING = "not_pending"
    # Around the actions: the API's own answers.
    UNAUTHORIZED = "unauthorized"
    OWNER_ONLY = "owner_only"
    INVALID_REQUEST = "invalid_request"
    NO_SUCH_ROUTE = "no_such_route"
    HOST_NOT_SERVED = "host_not_served"
    DATABASE_UNAVAILABLE = "database_unavailable"
    CHANNEL_LAYER_UNAVAILABLE = "channel_layer_unavailable"


HTTP_STATUS = {
    ErrorCode.INVALID_INPUT: 400,
    ErrorCode.INVALID_JSON: 400,
    ErrorCode.INVALID_IDENTIFIER: 400,
    ErrorCode.BODY_TOO_LONG: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.AMBIGUOUS_NAME: 409,
    ErrorCode.REFUSED: 403,
    ErrorCode.SENDER_REFUSED: 403,
    ErrorCode.LINK_HELD: 403,
    ErrorCode.NAME_IN_USE: 409,
    ErrorCode.HOOK_ENDED: 403,
    ErrorCode.SELF_MESSAGE: 403,
    ErrorCode.REPLY_TOO_DEEP: 403,
    ErrorCode.ACK_NOT_PROVEN: 403,
    ErrorCode.READ_NOT_PROVEN: 403,
    ErrorCode.NOT_YOUR_MAIL: 403,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.INBOUND_REFUSED: 403,
    ErrorCode.UNREAD_CAP: 429,
    ErrorCode.UNPROVEN_NAMES_FULL: 429,
    ErrorCode.BROADCAST_REACHES_NOBODY: 403,
    ErrorCode.INVALID_PATH: 400,
    ErrorCode.CALLER_NOT_PROVEN: 403,
    ErrorCode.PROCESS_NOT_PROVEN: 403,
    ErrorCode.OTHER_MACHINE: 403,
    ErrorCode.RESERVATION_HELD: 409,
    ErrorCode.RESERVATIONS_FULL: 409,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.NOT_PENDING: 409,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.OWNER_ONLY: 403,
    ErrorCode.INVALID_REQUEST: 422,
    ErrorCode.NO_SUCH_ROUTE: 404,
    ErrorCode.HOST_NOT_SERVED: 400,
    ErrorCode.DATABASE_UNAVAILABLE: 503,
    ErrorCode.CHANNEL_LAYER_UNAVAILABLE: 503,
}


def error_body(code, detail, **more):
    """A JSON error answer: the sentence and its code."""
    return {"detail": detail, "code": str(code), **more}


def tool_error_text(code, detail):
    """An MCP tool error: the sentence the model reads, then its code."""
    return f"{detail} (error code: {code})" if code else detail


class RelaybayError(Exception):
    code = ErrorCode.INVALID_INPUT

    def __init__(self, message, *, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    @property
    def status(self):
        return HTTP_STATUS[self.code]

    def body(self):
        return error_body(self.code, self.message)


class InvalidInput(RelaybayError):
    code = ErrorCode.INVALID_INPUT


class NotFound(RelaybayError):
    code = ErrorCode.NOT_FOUND


class Ambiguous(RelaybayError):
    code = ErrorCode.AMBIGUOUS_NAME


class Refused(RelaybayError):
    """The write is understood but not allowed; nothing was written."""

    code = ErrorCode.REFUSED


class SenderRefused(Refused):
    code = ErrorCode.SENDER_REFUSED


class RateLimited(RelaybayError):
    code = ErrorCode.RATE_LIMITED


class PayloadTooLarge(RelaybayError):
    code = ErrorCode.PAYLOAD_TOO_LARGE
