"""Scripted stand-ins for the OpenAI Responses API (Codex CLI) and the Gemini API (Gemini CLI),
beside the Anthropic one (model_server.py), for driving the real CLIs offline.

Both take the same script steps as ModelServer (`text`, `tool`, `tools`): a tool is named as
Claude Code names it, and each server writes it the way its CLI calls it — `Bash` with a
`command` becomes Codex's `exec_command` (`cmd`) or Gemini's `run_shell_command`, and
`mcp__SERVER__TOOL` becomes Codex's namespaced function `TOOL` in `mcp__SERVER` or Gemini's
`mcp_SERVER_TOOL`. Every request body is recorded, and `request_texts()` gives the text each
request showed the model (the conversation's items or contents), so a test proves what the
model was shown: a hook's additionalContext, a tool's result, a delivered message.

Stdlib only, like model_server.py.
"""

import copy
import itertools
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.e2e.model_server import ModelServer, text

__all__ = ["ResponsesServer", "GeminiServer", "text"]


def _mcp_parts(name):
    """("SERVER", "TOOL") for a Claude Code MCP tool name `mcp__SERVER__TOOL`, else None."""
    if name.startswith("mcp__") and name.count("__") >= 2:
        server, _, tool = name[5:].partition("__")
        return server, tool
    return None


class ScriptedServer(ModelServer):
    """ModelServer's script and record, behind a handler of another API. A subclass says which
    POST paths are the conversation (`conversation`), how a step is answered (`answer`), and
    what text a request showed the model (`texts_of`)."""

    def start(self):
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def request_texts(self):
        with self._lock:
            bodies = list(self.requests)
        return ["\n".join(self.texts_of(body)) for body in bodies]

    def next_step(self, body):
        """Record a conversation request and take the next step (a filler once the script is out)."""
        with self._lock:
            self.requests.append(body)
            step = self._script.pop(0) if self._script else text("done")
        if step.get("before"):
            step["before"]()
        return step

    def conversation(self, path):
        raise NotImplementedError

    def answer(self, handler, path, body):
        raise NotImplementedError

    def texts_of(self, body):
        raise NotImplementedError

    def other(self, handler, path, body):
        """A POST to a path that is not the conversation: recorded, answered 404."""
        self._record_other("POST", path, body)
        handler.json(404, {"error": {"code": 404, "message": f"no route {path}"}})


class ResponsesServer(ScriptedServer):
    """`POST /v1/responses` as Codex CLI 0.171.0 streams it (server-sent events)."""

    def __init__(self, script=None):
        super().__init__(script)
        self._responses = itertools.count(1)

    def conversation(self, path):
        return path == "/v1/responses"

    def answer(self, handler, path, body):
        step = self.next_step(body)
        number = next(self._responses)
        items = [self._item(block, number, i) for i, block in enumerate(copy.deepcopy(step["content"]))]
        usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5, "output_tokens_details": None, "total_tokens": 15}
        events = [("response.created", {"type": "response.created", "response": {"id": f"resp_{number}"}})]
        for index, item in enumerate(items):
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": index, "item": item}))
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": item}))
        events.append(("response.completed", {"type": "response.completed", "response": {"id": f"resp_{number}", "usage": usage}}))
        handler.sse("".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events))

    def _item(self, block, number, index):
        if block["type"] == "text":
            content = [{"type": "output_text", "text": block["text"], "annotations": []}]
            return {"type": "message", "role": "assistant", "id": f"msg_{number}_{index}", "content": content}
        call = {"type": "function_call", "id": f"fc_{number}_{index}", "call_id": f"call_{uuid.uuid4().hex[:12]}"}
        name, arguments = block["name"], block["input"]
        if name == "apply_patch":
            # A freeform tool (offered as `"type": "custom"`): its input is the patch itself.
            return {"type": "custom_tool_call", "id": f"ctc_{number}_{index}", "call_id": call["call_id"], "name": name, "input": arguments["patch"], "status": "completed"}
        mcp = _mcp_parts(name)
        if mcp:
            call.update(namespace=f"mcp__{mcp[0]}", name=mcp[1])
        elif name == "Bash":
            call["name"], arguments = "exec_command", {"cmd": arguments["command"]}
        else:
            call["name"] = name
        call["arguments"] = json.dumps(arguments)
        return call

    def texts_of(self, body):
        parts = []
        for item in body.get("input") or []:
            if item.get("type") == "message":
                parts += [c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict)]
            elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
                output = item.get("output")
                if isinstance(output, str):
                    parts.append(output)
                elif isinstance(output, list):
                    parts += [c.get("text", "") for c in output if isinstance(c, dict)]
        return parts

    def tool_names(self, body):
        """The tools a request offered the model, MCP tools as `mcp__SERVER__TOOL`."""
        names = []
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace":
                names += [f"{tool['name']}__{inner['name']}" for inner in tool.get("tools") or []]
            elif tool.get("name"):
                names.append(tool["name"])
        return names


# Gemini CLI asks a small model which model a turn needs before each turn (a bad answer is
# tolerated, with a stack trace on stderr): this answer is one it takes.
ROUTING_ANSWER = {"complexity_reasoning": "a scripted turn", "complexity_score": 1}


class GeminiServer(ScriptedServer):
    """`POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` as Gemini CLI 0.61.0 streams
    it; its routing call (`:generateContent`) gets ROUTING_ANSWER and is not a script step."""

    def conversation(self, path):
        return path.startswith("/v1beta/models/") and path.endswith(":streamGenerateContent")

    def answer(self, handler, path, body):
        step = self.next_step(body)
        parts = []
        for block in copy.deepcopy(step["content"]):
            if block["type"] == "text":
                parts.append({"text": block["text"]})
                continue
            name, arguments = block["name"], block["input"]
            mcp = _mcp_parts(name)
            if mcp:
                name = f"mcp_{mcp[0]}_{mcp[1]}"
            elif name == "Bash":
                name = "run_shell_command"
            parts.append({"functionCall": {"name": name, "args": arguments}})
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        }
        handler.sse(f"data: {json.dumps(chunk)}\r\n\r\n")

    def other(self, handler, path, body):
        if path.startswith("/v1beta/models/") and path.endswith(":generateContent"):
            self._record_other("POST", path, body)
            content = {"role": "model", "parts": [{"text": json.dumps(ROUTING_ANSWER)}]}
            return handler.json(200, {"candidates": [{"content": content, "finishReason": "STOP", "index": 0}]})
        return super().other(handler, path, body)

    def texts_of(self, body):
        parts = []
        for content in body.get("contents") or []:
            for part in content.get("parts") or []:
                if "text" in part:
                    parts.append(part["text"])
                elif "functionResponse" in part:
                    parts.append(json.dumps(part["functionResponse"].get("response"), ensure_ascii=False))
        return parts

    def tool_names(self, body):
        return [d.get("name") for tool in body.get("tools") or [] for d in tool.get("functionDeclarations") or []]


def _handler(server):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return self.json(400, {"error": {"code": 400, "message": "body is not JSON"}})
            if server.conversation(path):
                return server.answer(self, path, body)
            return server.other(self, path, body)

        def do_GET(self):
            server._record_other("GET", self.path, None)
            self.json(404, {"error": {"code": 404, "message": f"no route {self.path}"}})

        def json(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def sse(self, stream):
            data = stream.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):
            pass

    return Handler
