"""Hostile input, decided in one place for every route and both databases.

What a client sends is read here before anything else sees it:
- a JSON body is parsed strictly (`read_json_body`): valid JSON, no NaN or Infinity, numbers
  a database and JavaScript can both hold, no nesting deeper than MAX_DEPTH, at most
  MAX_VALUES values, the whole body within RELAYBAY_MAX_PAYLOAD (413 otherwise, chunked or not);
- text that is only kept and shown (a prompt, a tool's output, a message body) is made valid
  text (`clean_text`, `clean_json`): a lone surrogate (which JSON can escape but UTF-8 cannot
  encode) and NUL (which PostgreSQL refuses) become U+FFFD, so SQLite and PostgreSQL store the
  same thing and every page that shows it can be written;
- a string that names or keys something (a hook session id, an event name, a folder, a
  session name) is refused instead (`check_identifier`), because replacing characters in it
  would make two different names one;
- an id given as text is ASCII digits within a database integer (`parse_id`), never "³".
"""

import json
import math
import re
from typing import Annotated

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from pydantic import AfterValidator

from .errors import ErrorCode, InvalidInput, PayloadTooLarge

MAX_DEPTH = 64
MAX_VALUES = 100_000
# I-JSON (RFC 7493): integers a JavaScript client (Claude Code) and every database hold exactly.
MAX_SAFE_INTEGER = 2**53 - 1
MAX_ID_DIGITS = 18  # below 2**63: a bigint on PostgreSQL, an INTEGER on SQLite
REPLACEMENT = "\ufffd"
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _refuse_constant(name):
    raise InvalidInput(f"The JSON holds {name}, which is not a JSON number; send a number or null.", code=ErrorCode.INVALID_JSON)


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise InvalidInput(f"The JSON number {text[:40]} is too large; send a number within double precision.", code=ErrorCode.INVALID_JSON)
    return value


def _safe_int(text):
    value = int(text) if len(text) <= 20 else None
    if value is None or abs(value) > MAX_SAFE_INTEGER:
        raise InvalidInput(
            f"The JSON integer {text[:40]} is too large; integers must be within ±{MAX_SAFE_INTEGER}.", code=ErrorCode.INVALID_JSON
        )
    return value


def _check_shape(value):
    """Depth and size, walked without recursion: a payload nested 100,000 deep must not
    overflow anything later (clipping, the database's JSON encoder, a template)."""
    count = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise PayloadTooLarge(f"The JSON holds more than {MAX_VALUES} values; relaybay refused it and stored nothing.")
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                raise InvalidInput(f"The JSON is nested deeper than {MAX_DEPTH} levels.", code=ErrorCode.INVALID_JSON)
            count += len(node)
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                raise InvalidInput(f"The JSON is nested deeper than {MAX_DEPTH} levels.", code=ErrorCode.INVALID_JSON)
            stack.extend((v, depth + 1) for v in node)


def load_json(body, *, what="The request body"):
    """Parse a JSON document strictly, or raise InvalidInput / PayloadTooLarge saying why."""
    try:
        value = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_safe_int)
    except RecursionError:
        raise InvalidInput(f"{what} is nested deeper than {MAX_DEPTH} levels.", code=ErrorCode.INVALID_JSON)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput(f"{what} is not valid JSON (UTF-8).", code=ErrorCode.INVALID_JSON)
    _check_shape(value)
    return value


def too_large():
    return PayloadTooLarge(
        f"The request body is over {settings.RELAYBAY_MAX_PAYLOAD} bytes; relaybay refused it and stored nothing."
    )


def read_body(request):
    """The request's bytes within RELAYBAY_MAX_PAYLOAD, whether its length was declared or
    it came chunked (then Django counts what it buffered)."""
    cap = settings.RELAYBAY_MAX_PAYLOAD
    declared = request.headers.get("Content-Length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > cap:
        raise too_large()
    try:
        body = request.body
    except RequestDataTooBig:
        raise too_large()
    if len(body) > cap:
        raise too_large()
    return body


def read_json_body(request, *, what="The request body"):
    return load_json(read_body(request), what=what)


def clean_text(text):
    """`text` as valid text both databases store alike: lone surrogates and NUL replaced."""
    if text.isascii():  # the common case, checked at C speed: no surrogate, perhaps a NUL
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    return UNSTORABLE.sub(REPLACEMENT, text)


def clean_json(value):
    """Every string (keys included) of a parsed JSON value made valid text. Iterative, like
    the shape check before it; returns a new value."""
    if isinstance(value, str):
        return clean_text(value)
    if not isinstance(value, (dict, list)):
        return value
    root = [value]
    stack = [(root, 0, value)]
    while stack:
        parent, key, node = stack.pop()
        if isinstance(node, dict):
            copy = {}
            for k, v in node.items():
                copy[clean_text(k)] = v
            parent[key] = copy
            for k, v in copy.items():
                if isinstance(v, str):
                    copy[k] = clean_text(v)
                elif isinstance(v, (dict, list)):
                    stack.append((copy, k, v))
        elif isinstance(node, list):
            copy = list(node)
            parent[key] = copy
            for i, v in enumerate(copy):
                if isinstance(v, str):
                    copy[i] = clean_text(v)
                elif isinstance(v, (dict, list)):
                    stack.append((copy, i, v))
    return root[0]


def check_identifier(value, *, what, max_length, required=True):
    """A string that names or keys something: refused, never altered, when it is not one."""
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"The {what} must be a string.", code=ErrorCode.INVALID_IDENTIFIER)
    if required and not value.strip():
        raise InvalidInput(f"The {what} is empty.", code=ErrorCode.INVALID_IDENTIFIER)
    if UNSTORABLE.search(value):
        raise InvalidInput(
            f"The {what} holds a NUL character or a lone surrogate (\\ud800-\\udfff), which no name may hold.",
            code=ErrorCode.INVALID_IDENTIFIER,
        )
    if len(value) > max_length:
        raise InvalidInput(f"The {what} is longer than {max_length} characters.", code=ErrorCode.INVALID_IDENTIFIER)
    return value


def is_identifier_text(value):
    """Whether a name looked up (never stored) could name anything: lookups of one that
    cannot answer "not found" on both databases alike (PostgreSQL refuses NUL in a query)."""
    return not UNSTORABLE.search(value)


def parse_id(ref):
    """The integer an id written as text names ("12", " 12 "), else None ("³", "١٢", "1e3",
    an id past what the database holds)."""
    if isinstance(ref, int) and not isinstance(ref, bool):
        return ref if 0 < ref < 10**MAX_ID_DIGITS else None
    if not isinstance(ref, str):
        return None
    ref = ref.strip()
    if ref.isascii() and ref.isdigit() and len(ref) <= MAX_ID_DIGITS:
        return int(ref) or None
    return None


def _identifier_type(max_length):
    def check(value, info):
        return check_identifier(value, what=(info.field_name or "value").replace("_", " "), max_length=max_length, required=False)

    return Annotated[str, AfterValidator(check)]


# Schema field types for what a route's caller names things with: the check above, run by
# django-ninja's validation of bodies and query strings alike (a refusal answers 400). A
# name's length is the actions' to judge (sessions_app.directory.check_name says what to do).
Name = _identifier_type(math.inf)
Path = _identifier_type(1000)
