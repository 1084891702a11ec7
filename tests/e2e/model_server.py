"""A scripted stand-in for the Anthropic Messages API, for driving the real Claude Code CLI.

Tests hand the server a script of assistant replies (`text`, `tool`, `tools`); each main-loop
request the CLI sends consumes the next step, so a test decides exactly which tools the "model"
calls. Every request body is recorded, so a test can prove what the model was shown: a hook's
additionalContext, a tool result, a delivered message.

Stdlib only, so it runs wherever the tests run.
"""

import copy
import itertools
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "claude-test-model"


def text(body, before=None):
    """A reply with one text block that ends the turn. `before`, a callable, runs just before
    the reply is sent: a test's way to act at an exact point of the turn."""
    return {"content": [{"type": "text", "text": body}], "stop_reason": "end_turn", "before": before}


def tool(name, input, before=None):
    """A reply that calls one tool."""
    return tools([(name, input)], before=before)


def tools(calls, before=None):
    """A reply that calls several tools in parallel; `calls` is a list of (name, input)."""
    blocks = [{"type": "tool_use", "name": name, "input": input} for name, input in calls]
    return {"content": blocks, "stop_reason": "tool_use", "before": before}


def is_main_loop_request(body):
    """Whether a request comes from the agent loop rather than a side query.

    Besides the conversation itself, Claude Code sends side queries to the same endpoint
    (session title, topic detection, quota probes). They never carry the tools, while every
    agent-loop request does (the CLI always offers at least its built-in tools), so only
    requests with a non-empty `tools` list consume script steps.
    """
    return bool(body.get("tools"))


def message_texts(body):
    """All text the model was shown in one request's messages (the system prompt excluded)."""
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content or []:
            parts.extend(_block_texts(block))
    return parts


def _block_texts(block):
    kind = block.get("type")
    if kind == "text":
        return [block.get("text", "")]
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return [content]
        return [b.get("text", "") for b in content or [] if b.get("type") == "text"]
    return []


class ModelServer:
    """Serves scripted replies on 127.0.0.1 and records every request it receives."""

    def __init__(self, script=None):
        self.requests = []
        # Requests to any other path, as (method, path, body): not part of the conversation,
        # but telling when the CLI reaches for an endpoint the server does not serve.
        self.other_requests = []
        self._script = list(script or [])
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd = None
        self._thread = None

    def start(self):
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        # A short poll interval keeps stop() fast: shutdown() waits for the next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self):
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join()
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self):
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def add_steps(self, *steps):
        with self._lock:
            self._script.extend(steps)

    @property
    def remaining_steps(self):
        with self._lock:
            return len(self._script)

    def main_requests(self):
        """The recorded requests that came from the agent loop (see is_main_loop_request)."""
        with self._lock:
            return [r for r in self.requests if is_main_loop_request(r)]

    def request_texts(self):
        """For each recorded request, all message text it showed the model, joined by newlines."""
        with self._lock:
            bodies = list(self.requests)
        return ["\n".join(message_texts(body)) for body in bodies]

    def all_text(self):
        return "\n".join(self.request_texts())

    def wait_for(self, predicate, timeout=30.0, interval=0.1):
        """Poll until predicate(self) is true; return its value or raise TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate(self)
            if result:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"model server: condition not met within {timeout} s")
            time.sleep(interval)

    def wait_for_text(self, substring, timeout=30.0):
        """Wait until some request showed the model `substring`."""
        try:
            return self.wait_for(lambda server: substring in server.all_text(), timeout)
        except TimeoutError:
            raise TimeoutError(
                f"the model was not shown {substring!r} within {timeout} s"
            ) from None

    def _record_and_reply(self, body):
        """Record a request and pick its reply: the next script step, or a filler for side
        queries and for an exhausted script."""
        with self._lock:
            self.requests.append(body)
            if not is_main_loop_request(body):
                step = text("ok")
            elif self._script:
                step = self._script.pop(0)
            else:
                step = text("done")
        if step.get("before"):
            step["before"]()
        return self._message(step)

    def _record_other(self, method, path, body):
        with self._lock:
            self.other_requests.append((method, path, body))

    def _message(self, step):
        content = copy.deepcopy(step["content"])
        for block in content:
            # Ids are minted per reply so a step object can be reused in a script.
            if block["type"] == "tool_use":
                block["id"] = f"toolu_{uuid.uuid4().hex[:24]}"
        return {
            "id": f"msg_test_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": step["stop_reason"],
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }


def _sse_events(message):
    """The server-sent events that stream `message`, in the Messages API's order."""
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        start_block = {"type": "content_block_start", "index": index, "content_block": opening}
        yield "content_block_start", start_block
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": usage}
    yield "message_stop", {"type": "message_stop"}


def _handler_for(server):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return self._json(400, _error("invalid_request_error", "body is not JSON"))
            if path == "/v1/messages":
                message = server._record_and_reply(body)
                if body.get("stream"):
                    return self._stream(message)
                return self._json(200, message)
            server._record_other("POST", self.path, body)
            if path == "/v1/messages/count_tokens":
                return self._json(200, {"input_tokens": 10})
            return self._json(404, _error("not_found_error", f"no route {path}"))

        def do_GET(self):
            server._record_other("GET", self.path, None)
            return self._json(404, _error("not_found_error", f"no route {self.path}"))

        def _json(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, message):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            # No Content-Length: the stream ends when the connection closes.
            self.send_header("Connection", "close")
            self.end_headers()
            for event, data in _sse_events(message):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, format, *args):
            pass  # keep pytest output clean; the recorded requests are the log

    return Handler


def _error(kind, message):
    return {"type": "error", "error": {"type": kind, "message": message}}
