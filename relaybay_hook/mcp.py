"""The local MCP server a CLI starts for relaybay's tools: a forwarder to relaybay's /mcp.

A CLI that starts a stdio MCP server keeps it for the whole session, whatever happens to
relaybay; one that connects to an http server drops it when relaybay goes away for a few
seconds, and its tools are gone until the person reconnects by hand. So each session runs this
small process (`bin/relaybay-mcp`, stdlib only, a few MB): every JSON-RPC message the CLI writes
on stdin is POSTed to {RELAYBAY_URL}/mcp unchanged, and relaybay's answer is written back on
stdout. relaybay's SDK server is the only MCP implementation; this process holds no tool logic.

What it adds:
- the agents' token (RELAYBAY_TOKEN, or the plugin's CLAUDE_PLUGIN_OPTION_TOKEN) and the
  process proof the hook client sends (relaybay_hook/proof.py), so a call speaks for the hook
  session of the claude process that started it;
- after relaybay was unreachable, or answers that it no longer knows the MCP session, the
  CLI's own `initialize` is sent again before the next message, so a restart is invisible;
- while relaybay is unreachable: `initialize`, `tools/list` and other lists are answered from
  relaybay's last answers (kept in memory and in <spool folder>/mcp-<digest of the address>.json,
  so a session started while relaybay is down still lists its tools), `ping` is answered, and
  a `tools/call` gets a tool error the model can read: "relaybay is not running at …; it was
  reachable until …; your message was not sent." Nothing is queued: the call was not made.
- a session that listed its tools from a stale or empty copy is told the list changed
  (notifications/tools/list_changed) once relaybay answers again.
"""
import _thread
import json
import sys
import time

from relaybay_hook import conn, env, proof

MCP_PATH = '/mcp'
DEFAULT_TIMEOUT = 60.0
# Answers kept while relaybay is up, given back while it is down (a result depends only on the
# method and its params for these).
KEPT = ('server/discover', 'initialize', 'tools/list', 'prompts/list', 'resources/list',
        'resources/templates/list')
NOT_REACHED_CODE = -32000
CACHE_LIMIT = 4 << 20
# How often a session whose tools were listed from a copy looks for relaybay.
WATCH_SECONDS = 3.0


class Forwarder:
    """One CLI session's connection to relaybay's /mcp."""

    def __init__(self, url, write, cache_path=None, timeout=DEFAULT_TIMEOUT):
        self.url = url.rstrip('/')
        self.write = write
        self.cache_path = cache_path
        self.timeout = timeout
        self.lock = _thread.allocate_lock()  # one writer of stdout at a time
        self.opening = _thread.allocate_lock()  # one initialize again at a time
        self.saving = _thread.allocate_lock()
        self.watching = False
        self.initialize = None  # the CLI's own initialize request, sent again after a restart
        self.initialized = False  # relaybay has seen the CLI's initialize in this MCP session
        self.session_id = None  # Mcp-Session-Id, when relaybay's server keeps sessions
        self.protocol = None  # the protocol version relaybay answered initialize with
        self.reachable_at = None  # when relaybay last answered
        self.down = False
        self.listed_stale = False  # tools/list was answered from a copy while relaybay was down
        self.kept = self._read_cache()

    # -- the CLI's messages ------------------------------------------------------------------

    def handle(self, line):
        """One line from the CLI: a JSON-RPC message (or a batch), forwarded as it came. The
        CLI's initialize and its notifications go before the next line is read, in order; each
        other request on a thread of its own, as a CLI may make several calls at once."""
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            message = {}
        method = message.get('method')
        if method and 'id' in message and method != 'initialize':
            _thread.start_new_thread(self._guarded, (line, message))
        else:
            self.forward(line, message)

    def _guarded(self, line, message):
        try:
            self.forward(line, message)
        except Exception as exc:  # one message that breaks must not end the session's tools
            _broke(exc)

    def forward(self, line, message):
        method = message.get('method')
        is_request = bool(method) and 'id' in message
        if method == 'initialize' and is_request:
            self.initialize = line
            self.initialized = False
        try:
            answers = self._forward(line, reinitialize=method != 'initialize')
        except conn.NotRelaybay as refusal:
            if is_request:
                self._emit(self._answer_offline(message, 'relaybay is not what answers at %s: %s. Nothing was sent to '
                                                'it. Start relaybay (`make run`), then call the tool again.' % (self.url, refusal)))
            return
        except conn.Unreachable:
            self._went_down()
            if is_request:
                self._emit(self._answer_offline(message))
            return
        except Refused as refused:
            if is_request:
                self._emit(self._answer_refused(message, refused))
            return
        for answer in answers:
            self._remember(message, answer)
            self._emit(answer)
        if self.listed_stale and method != 'tools/list':
            self._tell_if_tools_changed()

    # -- relaybay ----------------------------------------------------------------------------

    def _forward(self, body, reinitialize=True):
        """POST `body` to /mcp; the JSON-RPC messages of the answer. Sends the CLI's initialize
        first when relaybay's MCP session is not the one the CLI opened (a restart, an outage)."""
        if reinitialize and self.initialize is not None and not self.initialized:
            with self.opening:
                if not self.initialized:
                    self._reinitialize()
        status, headers, answer = self._post(body)
        if status == 404 and self.session_id and self.initialize is not None:
            # relaybay forgot the MCP session (it restarted): open it again and resend.
            with self.opening:
                self.session_id = None
                self.initialized = False
                self._reinitialize()
            status, headers, answer = self._post(body)
        if status in (401, 403):
            raise Refused(status, answer)
        if status >= 400 and answer is None:
            raise Refused(status, answer)
        return _messages(headers.get('content-type', ''), answer)

    def _reinitialize(self):
        status, headers, answer = self._post(self.initialize, opening=True)
        if status in (401, 403):
            raise Refused(status, answer)
        for message in _messages(headers.get('content-type', ''), answer):
            if isinstance(message, dict) and isinstance(message.get('result'), dict):
                self.protocol = message['result'].get('protocolVersion') or self.protocol
        self.initialized = True
        self._post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def _post(self, body, opening=False):
        if isinstance(body, str):
            body = body.encode('utf-8', 'surrogateescape')
        lines = ['Accept: application/json, text/event-stream'] + list(proof.hook_headers())
        if self.session_id and not opening:
            lines.append('Mcp-Session-Id: ' + self.session_id)
        if self.protocol and not opening:
            lines.append('Mcp-Protocol-Version: ' + env.clean(self.protocol))
        answer_headers = {}
        status, answer = conn.http_request(
            'POST', MCP_PATH, body=body, headers=lines, timeout=self.timeout, url=self.url,
            answer_headers=answer_headers)
        if conn.unavailable(status):
            raise conn.Unreachable('%d from a proxy' % status)
        session_id = answer_headers.get('mcp-session-id')
        if session_id and status < 400:
            self.session_id = env.clean(session_id)
        if opening and status < 400:
            self.initialized = True
        self._came_back()
        return status, answer_headers, answer

    def _came_back(self):
        self.reachable_at = time.time()
        if self.down:
            self.down = False
            self._write_cache()

    def _went_down(self):
        if not self.down:
            self.down = True
            self.initialized = False
            self.session_id = None
            self._write_cache()

    # -- answers while relaybay cannot answer --------------------------------------------------

    def not_running(self, method, params):
        """The sentence a call gets while relaybay is down."""
        if self.reachable_at:
            since = 'it was reachable until %s' % time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.reachable_at))
        else:
            since = 'it has not been reachable from this machine yet'
        tool = params.get('name') if isinstance(params, dict) else None
        if tool in ('message_send', 'message_broadcast'):
            undone = 'your message was not sent'
        else:
            undone = 'nothing was done'
        return ('relaybay is not running at %s; %s; %s. Try again once relaybay is back '
                '(`make run`, or `manage.py service install` to start it at login).' % (self.url, since, undone))

    def _answer_offline(self, message, text=None):
        """The answer while relaybay cannot answer, or refuses the token (`text` says so)."""
        method, request_id = message.get('method'), message.get('id')
        params = message.get('params')
        text = text or self.not_running(method, params)
        if method == 'tools/call':
            return _result(request_id, {'content': [{'type': 'text', 'text': text}], 'isError': True})
        if method == 'ping':
            return _result(request_id, {})
        kept = self.kept.get(_kept_key(method, params))
        if kept is not None:
            if method == 'tools/list':
                self._stale()
            return _result(request_id, kept)
        if method == 'initialize':
            # Never reached from this machine: a minimal answer keeps the server in the CLI's
            # list; its tools are announced once relaybay answers.
            version = params.get('protocolVersion') if isinstance(params, dict) else None
            return _result(request_id, {
                'protocolVersion': version or '2025-06-18',
                'capabilities': {'tools': {'listChanged': True}},
                'serverInfo': {'name': 'relaybay', 'version': '0'},
            })
        if method == 'tools/list':
            self._stale()
            return _result(request_id, {'tools': []})
        return {'jsonrpc': '2.0', 'id': request_id, 'error': {'code': NOT_REACHED_CODE, 'message': text}}

    def _answer_refused(self, message, refused):
        text = ('relaybay at %s refused this session (%s): the token this MCP server was given does not '
                'match relaybay\'s. %s and restart the session.' % (self.url, refused, env.reconnect_hint()))
        return self._answer_offline(message, text)

    def _stale(self):
        """tools/list was answered from a copy: watch for relaybay, so that a session that sends
        nothing still hears of its tools once relaybay answers."""
        self.listed_stale = True
        if not self.watching:
            self.watching = True
            _thread.start_new_thread(self._watch, ())

    def _watch(self):
        try:
            while self.listed_stale:
                time.sleep(WATCH_SECONDS)
                if self.initialize is not None:
                    self._tell_if_tools_changed()
        finally:
            self.watching = False

    def _tell_if_tools_changed(self):
        """After a tools/list answered from a copy: once relaybay answers, the CLI hears that the
        list changed if relaybay's own differs from what it was given."""
        given = self.kept.get(_kept_key('tools/list', None))
        try:
            answers = self._forward(b'{"jsonrpc":"2.0","id":"relaybay-tools","method":"tools/list"}')
        except (conn.Unreachable, Refused):
            return
        self.listed_stale = False
        for answer in answers:
            if isinstance(answer, dict) and isinstance(answer.get('result'), dict):
                self._keep(_kept_key('tools/list', None), answer['result'])
                if answer['result'] != given:
                    self._emit({'jsonrpc': '2.0', 'method': 'notifications/tools/list_changed'})

    # -- keeping relaybay's answers ------------------------------------------------------------

    def _remember(self, message, answer):
        if not isinstance(message, dict) or message.get('method') not in KEPT:
            return
        if isinstance(answer, dict) and isinstance(answer.get('result'), dict):
            if message['method'] == 'initialize':
                self.protocol = answer['result'].get('protocolVersion') or self.protocol
                self.initialized = True
            if message['method'] == 'tools/list':
                self.listed_stale = False
            self._keep(_kept_key(message['method'], message.get('params')), answer['result'])

    def _keep(self, key, result):
        if self.kept.get(key) != result:
            self.kept[key] = result
            self._write_cache()

    def _read_cache(self):
        if not self.cache_path:
            return {}
        from relaybay_hook import private
        try:
            saved = json.loads(private.read(self.cache_path, CACHE_LIMIT).decode('utf-8') or '{}')
        except (OSError, ValueError, private.Unusable):
            return {}
        if not isinstance(saved, dict) or not isinstance(saved.get('kept'), dict):
            return {}
        if isinstance(saved.get('reachable_at'), (int, float)):
            self.reachable_at = saved['reachable_at']
        return saved['kept']

    def _write_cache(self):
        """relaybay's last answers beside the spool, as the client keeps its own files (0600 in a
        0700 folder, no link followed: relaybay_hook/private.py)."""
        if not self.cache_path:
            return
        from relaybay_hook import private
        with self.saving:
            data = json.dumps({'url': self.url, 'reachable_at': self.reachable_at, 'kept': dict(self.kept)})
            try:
                private.folder(self.cache_path.rpartition('/')[0] or '.')
                private.replace(self.cache_path, data.encode('utf-8'))
            except (OSError, private.Unusable) as exc:
                _broke(exc)

    def _emit(self, message):
        data = json.dumps(message, separators=(',', ':'), ensure_ascii=False)
        with self.lock:
            self.write(data.encode('utf-8', 'surrogateescape') + b'\n')


class Refused(Exception):
    """relaybay answered with a refusal of the token (401/403) or an error with no body."""

    def __init__(self, status, body):
        super().__init__(conn.error_text(status, body))


def _result(request_id, result):
    return {'jsonrpc': '2.0', 'id': request_id, 'result': result}


def _kept_key(method, params):
    cursor = params.get('cursor') if isinstance(params, dict) else None
    return method if not cursor else '%s %s' % (method, cursor)


def _messages(content_type, body):
    """The JSON-RPC messages of one answer: a JSON body, or the data of an event stream's events."""
    if not body:
        return []
    if 'text/event-stream' in content_type:
        found = []
        for event in body.decode('utf-8', 'replace').replace('\r\n', '\n').split('\n\n'):
            data = '\n'.join(line[5:].lstrip(' ') for line in event.split('\n') if line.startswith('data:'))
            if data:
                try:
                    found.append(json.loads(data))
                except ValueError:
                    pass
        return _flat(found)
    try:
        return _flat([json.loads(body.decode('utf-8'))])
    except ValueError:
        return []


def _flat(messages):
    out = []
    for message in messages:
        out.extend(message if isinstance(message, list) else [message])
    return out


def cache_path(url):
    folder = env.spool_path().rpartition('/')[0] or '.'
    return '%s/mcp-%s.json' % (folder, proof.sha256_hex(url.encode('utf-8'))[:16])


def main(argv=None):
    url = env.base_url().rstrip('/')
    forwarder = Forwarder(url, _stdout(), cache_path(url), env.float_env('RELAYBAY_MCP_TIMEOUT', DEFAULT_TIMEOUT))
    read = sys.stdin.buffer.readline
    while True:
        line = read()
        if not line:
            return 0
        if line.strip():
            try:
                forwarder.handle(line)
            except Exception as exc:
                _broke(exc)


def _broke(exc):
    from relaybay_hook.output import err
    err('mcp: %s: %s' % (exc.__class__.__name__, exc))


def _stdout():
    out = sys.stdout.buffer

    def write(data):
        out.write(data)
        out.flush()
    return write
