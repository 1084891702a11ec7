"""Tests for the stdlib-only hook client: the package relaybay_hook/ and its entry script
bin/relaybay-hook.

The client runs as a real subprocess (`python3 -S bin/relaybay-hook [wait]`) against a small
threaded stub HTTP server defined here, or against a closed port.

Run:   .venv/bin/python -m pytest tests/test_hook_client.py -p no:django
Timing (by hand, not a test):   .venv/bin/python tests/test_hook_client.py [runs]
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

HOOK = Path(__file__).resolve().parent.parent / 'bin' / 'relaybay-hook'
PACKAGE = HOOK.parent.parent / 'relaybay_hook'
PYTHON = os.environ.get('RELAYBAY_TEST_PYTHON') or sys.executable
TOKEN = 'test-token-123'
# The client against the stub server: neither the pass's database nor its channel layer is on
# its path, so make test runs the module once.
pytestmark = pytest.mark.embedded_only


# --------------------------------------------------------------------------- stub server

class Stub:
    """Threaded stub HTTP server that records requests and answers from `responder`.

    responder(request, index) returns a dict:
      status (200), body (bytes | dict | str), headers ({}), chunked (False),
      no_length (False: omit Content-Length, close-delimited), split (False: headers
      and body in separate writes, with a pause), drop (False: close without answering),
      hang (False: never answer), delay (0: seconds before answering).
    die_after=N: after the Nth request the listener is closed (later connects are refused).
    """

    def __init__(self, responder=None, die_after=None):
        self.responder = responder or (lambda req, i: {'body': {}})
        self.die_after = die_after
        self.requests = []
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.url = 'http://127.0.0.1:%d' % self.port
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.closed.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def close(self):
        if not self.closed.is_set():
            self.closed.set()
            try:
                self.listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.listener.close()

    @staticmethod
    def _read_request(conn):
        buf = b''
        while b'\r\n\r\n' not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buf += chunk
        head, _, rest = buf.partition(b'\r\n\r\n')
        lines = head.decode('latin-1').split('\r\n')
        method, target, _ = lines[0].split(' ', 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(':')
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get('content-length', 0))
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            rest += chunk
        parts = urlsplit(target)
        return {'method': method, 'target': target, 'path': parts.path,
                'query': {k: v[0] for k, v in parse_qs(parts.query).items()},
                'headers': headers, 'body': rest[:length], 'time': time.monotonic()}

    def _handle(self, conn):
        try:
            req = self._read_request(conn)
            if req is None:
                return
            with self.lock:
                index = len(self.requests)
                self.requests.append(req)
            answer = self.responder(req, index) or {}
            if self.die_after is not None and index + 1 >= self.die_after:
                self.close()
            if answer.get('delay'):
                time.sleep(answer['delay'])
            if answer.get('drop'):
                return
            if answer.get('hang'):
                time.sleep(30)
                return
            conn.sendall(self._render(answer, conn))
        except OSError:
            pass
        finally:
            conn.close()

    @staticmethod
    def _render(answer, conn):
        status = answer.get('status', 200)
        body = answer.get('body', b'')
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        head = ['HTTP/1.1 %d X' % status, 'Content-Type: application/json', 'Connection: close']
        head += ['%s: %s' % kv for kv in answer.get('headers', {}).items()]
        if answer.get('chunked'):
            head.append('Transfer-Encoding: chunked')
            pieces = [body[i:i + 7] for i in range(0, len(body), 7)]
            body = b''.join(b'%x\r\n%s\r\n' % (len(p), p) for p in pieces) + b'0\r\n\r\n'
        elif not answer.get('no_length'):
            head.append('Content-Length: %d' % len(body))
        raw_head = ('\r\n'.join(head) + '\r\n\r\n').encode()
        if answer.get('split'):
            conn.sendall(raw_head)
            time.sleep(0.05)
            half = len(body) // 2
            conn.sendall(body[:half])
            time.sleep(0.05)
            return body[half:]
        return raw_head + body

    def hook_requests(self):
        return [r for r in self.requests if r['path'] == '/api/hooks']


@pytest.fixture
def stub():
    servers = []

    def make(responder=None, die_after=None):
        s = Stub(responder, die_after)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


def closed_port_url():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return 'http://127.0.0.1:%d' % port


@pytest.fixture
def spool(tmp_path):
    return tmp_path / 'nested' / 'dir' / 'spool.jsonl'


def hook_env(url, spool, **extra):
    env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'HOME': str(spool.parent),
           'RELAYBAY_URL': url, 'RELAYBAY_TOKEN': TOKEN, 'RELAYBAY_SPOOL': str(spool)}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def outside_git(spool):
    """The test's own folder, where the client runs unless a test says: outside any working tree,
    so a PreToolUse carries no report of one (relaybay_tree) and bodies compare byte for byte."""
    return spool.parents[2]


def run_hook(url, spool, payload, *args, timeout=30, cwd=None, **env):
    if isinstance(payload, dict):
        payload = json.dumps(payload).encode()
    return subprocess.run([PYTHON, '-S', str(HOOK)] + list(args), input=payload, cwd=cwd or outside_git(spool),
                          env=hook_env(url, spool, **env), capture_output=True, timeout=timeout)


def event(n, name='PostToolUse', **fields):
    data = {'session_id': 'sess-1', 'hook_event_name': name, 'cwd': '/tmp',
            'transcript_path': '/tmp/t.jsonl', 'n': n}
    data.update(fields)
    return json.dumps(data).encode()


def spool_entries(spool):
    if not spool.exists():
        return []
    return [json.loads(line) for line in spool.read_text().splitlines() if line.strip()]


def write_spool(spool, payloads):
    spool.parent.mkdir(parents=True, exist_ok=True)
    with open(spool, 'w') as f:
        for i, p in enumerate(payloads):
            f.write(json.dumps({'spooled_at': '2030-01-01T00:00:%02d.000000+00:00' % i,
                                'payload': p.decode()}) + '\n')


# --------------------------------------------------------------------------- event mode

def test_entry_script_is_a_tiny_executable_over_a_stdlib_only_package():
    text = HOOK.read_text()
    assert text.startswith('#!/usr/bin/env python3\n')
    assert os.access(HOOK, os.X_OK)
    assert len(text.splitlines()) < 12
    for path in [HOOK, *PACKAGE.glob('*.py')]:
        code = path.read_text()
        assert 'django' not in code.lower().replace('no django', ''), path
        assert 'exec(' not in code and 'compile(' not in code, path


def test_it_runs_where_django_is_not_importable(stub, spool, tmp_path):
    # a `django` first on the path that refuses to import: any Django import would fail
    (tmp_path / 'django').mkdir()
    (tmp_path / 'django' / '__init__.py').write_text('raise ImportError("no Django here")\n')
    s = stub()
    r = subprocess.run([PYTHON, str(HOOK)], input=event(1), capture_output=True, timeout=30,
                       env=hook_env(s.url, spool, PYTHONPATH=tmp_path))
    assert (r.returncode, r.stdout, r.stderr) == (0, b'{}', b'')


def test_posts_payload_and_prints_answer(stub, spool):
    answer = {'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit',
                                     'additionalContext': 'hello ✓'}}
    s = stub(lambda req, i: {'body': answer})
    payload = event(1, 'UserPromptSubmit', prompt='hi ✓')
    r = run_hook(s.url, spool, payload)
    assert r.returncode == 0
    assert r.stderr == b''
    assert json.loads(r.stdout) == answer
    [req] = s.requests
    assert req['method'] == 'POST' and req['path'] == '/api/hooks'
    assert req['headers']['authorization'] == 'Bearer ' + TOKEN
    assert req['headers']['content-type'] == 'application/json'
    assert req['headers']['connection'].lower() == 'close'
    assert 'x-relaybay-replay' not in req['headers']
    assert req['body'] == payload  # byte for byte
    assert not spool.exists()


def test_url_path_prefix_is_kept(stub, spool):
    s = stub()
    r = run_hook(s.url + '/relaybay/', spool, event(1))
    assert r.returncode == 0 and r.stdout == b'{}'
    assert s.requests[0]['path'] == '/relaybay/api/hooks'


def test_session_name_added_on_session_start_only(stub, spool):
    s = stub()
    start = event(0, 'SessionStart', source='startup')
    run_hook(s.url, spool, start, RELAYBAY_SESSION='work-1')
    sent = json.loads(s.requests[0]['body'])
    assert sent['relaybay_session'] == 'work-1'
    assert {k: v for k, v in sent.items() if k != 'relaybay_session'} == json.loads(start)

    other = event(1, 'UserPromptSubmit', prompt='SessionStart is mentioned here')
    run_hook(s.url, spool, other, RELAYBAY_SESSION='work-1')
    assert s.requests[1]['body'] == other

    run_hook(s.url, spool, start)  # no RELAYBAY_SESSION
    assert s.requests[2]['body'] == start


@pytest.mark.parametrize('status,body,expected', [
    (401, {'detail': 'bad token'}, b'relaybay: 401 bad token\n'),
    (413, {'error': 'payload too large'}, b'relaybay: 413 payload too large\n'),
    (400, 'not json at all', b'relaybay: 400 not json at all\n'),
    (500, {'detail': 'boom'}, b'relaybay: 500 boom\n'),
    (500, '<!doctype html><html><head><title>Server Error (500)</title></head><body>x</body></html>',
     b'relaybay: 500 Server Error (500)\n'),
    (403, '', b'relaybay: 403\n'),
])
def test_non_2xx_prints_nothing_and_is_not_spooled(stub, spool, status, body, expected):
    s = stub(lambda req, i: {'status': status, 'body': body})
    r = run_hook(s.url, spool, event(1))
    assert r.returncode == 0
    assert r.stdout == b''
    assert r.stderr == expected
    assert spool_entries(spool) == []


def test_non_json_2xx_is_not_printed(stub, spool):
    s = stub(lambda req, i: {'body': '<html>proxy</html>'})
    r = run_hook(s.url, spool, event(1))
    assert r.returncode == 0 and r.stdout == b''
    assert b'not a JSON object' in r.stderr


def test_unreachable_spools_quickly_and_silently(spool):
    r = run_hook(closed_port_url(), spool, event(1))
    assert r.returncode == 0 and r.stdout == b'' and r.stderr == b''
    assert len(spool_entries(spool)) == 1


def test_unreachable_at_session_start_spools_and_tells_the_user(spool):
    payload = event(1, 'SessionStart', source='startup')
    t0 = time.monotonic()
    url = closed_port_url()
    r = run_hook(url, spool, payload, RELAYBAY_SESSION='named')
    elapsed = time.monotonic() - t0
    assert r.returncode == 0 and r.stderr == b''
    shown = json.loads(r.stdout)['systemMessage']
    assert shown.startswith('relaybay is not reachable at %s' % url) and str(spool) in shown
    assert elapsed < 1.0
    [entry] = spool_entries(spool)
    assert set(entry) == {'spooled_at', 'payload'}
    assert isinstance(entry['payload'], str)
    assert json.loads(entry['payload'])['relaybay_session'] == 'named'  # as it would be posted
    stamp = datetime.fromisoformat(entry['spooled_at'])
    assert stamp.utcoffset().total_seconds() == 0
    assert abs(stamp.timestamp() - time.time()) < 60
    assert oct(spool.stat().st_mode & 0o777) == oct(0o600)


def test_unknown_host_spools(spool):
    r = run_hook('http://relaybay.invalid:8000', spool, event(1))
    assert r.returncode == 0 and r.stdout == b''
    assert len(spool_entries(spool)) == 1


def test_reset_before_status_line_spools(stub, spool):
    s = stub(lambda req, i: {'drop': True})
    r = run_hook(s.url, spool, event(1))
    assert r.returncode == 0 and r.stdout == b'' and r.stderr == b''
    assert len(s.requests) == 1
    assert [e['payload'] for e in spool_entries(spool)] == [event(1).decode()]


def test_timeout_spools(stub, spool):
    s = stub(lambda req, i: {'hang': True})
    t0 = time.monotonic()
    r = run_hook(s.url, spool, event(1), RELAYBAY_TIMEOUT='0.5')
    assert time.monotonic() - t0 < 2.0
    assert r.returncode == 0 and r.stdout == b''
    assert len(spool_entries(spool)) == 1


def test_gateway_errors_count_as_unreachable(stub, spool):
    s = stub(lambda req, i: {'status': 503, 'body': 'upstream down'})
    r = run_hook(s.url, spool, event(1))
    assert r.returncode == 0 and r.stdout == b'' and r.stderr == b''
    assert len(spool_entries(spool)) == 1


def test_next_call_posts_its_own_event_first_then_replays_the_spool_in_order(stub, spool):
    down = closed_port_url()
    spooled = [event(i) for i in range(3)]
    for p in spooled:
        assert run_hook(down, spool, p).returncode == 0
    entries = spool_entries(spool)
    assert [e['payload'].encode() for e in entries] == spooled

    s = stub(lambda req, i: {'body': {'n': i}})
    own = event(99, 'UserPromptSubmit', prompt='now')
    r = run_hook(s.url, spool, own)
    assert r.returncode == 0
    assert json.loads(r.stdout) == {'n': 0}  # the answer to its own event, not a replay's
    reqs = s.hook_requests()
    assert [q['body'] for q in reqs] == [own] + spooled
    assert 'x-relaybay-replay' not in reqs[0]['headers']
    for q, e in zip(reqs[1:], entries):
        assert q['headers']['x-relaybay-replay'] == '1'
        assert q['headers']['x-relaybay-spooled-at'] == e['spooled_at']
        assert q['headers']['authorization'] == 'Bearer ' + TOKEN
    assert spool_entries(spool) == []


def test_server_dies_mid_replay_keeps_remainder_in_order(stub, spool):
    spooled = [event(i) for i in range(5)]
    write_spool(spool, spooled)
    s = stub(die_after=3)
    own = event(99)
    r = run_hook(s.url, spool, own)
    assert r.returncode == 0 and r.stdout == b'{}' and r.stderr == b''
    assert [q['body'] for q in s.requests] == [own] + spooled[:2]
    left = spool_entries(spool)
    assert [e['payload'].encode() for e in left] == spooled[2:]
    # untouched entries keep their original timestamps
    assert [e['spooled_at'] for e in left] == [
        '2030-01-01T00:00:%02d.000000+00:00' % i for i in (2, 3, 4)]
    assert not [p for p in spool.parent.iterdir() if '.tmp.' in p.name]

    s2 = stub()
    run_hook(s2.url, spool, event(100))
    assert [q['body'] for q in s2.requests] == [event(100)] + spooled[2:]
    assert [q['headers'].get('x-relaybay-replay') for q in s2.requests] == [None] + ['1'] * 3
    assert spool_entries(spool) == []


def test_replay_budget_defers_the_rest_in_order(stub, spool):
    # the client spends at most ~3 s replaying after its own event; the rest waits, in order
    spooled = [event(i) for i in range(20)]
    write_spool(spool, spooled)
    s = stub(lambda req, i: {'body': {}, 'delay': 0.25})
    t0 = time.monotonic()
    r = run_hook(s.url, spool, event(99))
    assert time.monotonic() - t0 < 5
    assert r.returncode == 0 and r.stdout == b'{}'
    own, *sent = [q['body'] for q in s.requests]
    assert own == event(99)
    assert 8 <= len(sent) < 20 and sent == spooled[:len(sent)]
    assert [e['payload'].encode() for e in spool_entries(spool)] == spooled[len(sent):]


def rejected_entries(spool):
    path = Path(str(spool) + '.rejected')
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_replay_refused_with_4xx_is_set_aside_and_the_rest_keeps_its_order(stub, spool):
    spooled = [event(i) for i in range(3)]
    write_spool(spool, spooled)
    s = stub(lambda req, i: {'status': 400, 'body': {'detail': 'malformed'}} if i == 2
             else {'body': {'n': i}})
    r = run_hook(s.url, spool, event(99))
    assert r.returncode == 0
    answer = json.loads(r.stdout)
    assert answer['n'] == 0  # the answer to its own event, with the notice for the user
    assert answer['systemMessage'] == ('relaybay set aside 1 event kept while it was unreachable '
                                       '(400 malformed); it is in %s.rejected' % spool)
    assert b'400 malformed' in r.stderr and b'set aside' in r.stderr
    assert [q['body'] for q in s.requests] == [event(99)] + spooled
    assert spool_entries(spool) == []
    [aside] = rejected_entries(spool)
    assert aside['payload'].encode() == spooled[1] and aside['status'] == 400
    assert aside['answer'] == '400 malformed' and aside['spooled_at'] == '2030-01-01T00:00:01.000000+00:00'


def test_a_replay_5xx_keeps_the_entry_at_the_head_and_everything_behind_it_in_order(stub, spool):
    spooled = [event(i) for i in range(3)]
    write_spool(spool, spooled)
    s = stub(lambda req, i: {'status': 500, 'body': {'detail': 'bug'}} if i == 2
             else {'body': {'n': i}})
    r = run_hook(s.url, spool, event(99))
    assert (r.returncode, json.loads(r.stdout)) == (0, {'n': 0})
    assert b'attempt 1 of 5' in r.stderr
    assert [q['body'] for q in s.requests] == [event(99)] + spooled[:2]
    left = spool_entries(spool)
    assert [e['payload'].encode() for e in left] == spooled[1:]
    assert left[0]['attempts'] == 1 and 'attempts' not in left[1]


def test_an_entry_failing_with_5xx_five_times_is_set_aside_and_the_rest_follows_in_order(stub, spool):
    spooled = [event(i) for i in range(4)]
    write_spool(spool, spooled)
    failing = spooled[1]
    s = stub(lambda req, i: {'status': 500, 'body': {'detail': 'bug'}} if req['body'] == failing
             else {'body': {'n': json.loads(req['body'])['n']}})
    live = [event(100 + n) for n in range(5)]
    for n, own in enumerate(live):
        r = run_hook(s.url, spool, own)
        assert r.returncode == 0
        if n < 4:  # kept at the head, with the rest behind it in order; each live event went first
            assert [e['payload'].encode() for e in spool_entries(spool)] == spooled[1:]
            assert json.loads(r.stdout) == {'n': 100 + n}
    answer = json.loads(r.stdout)
    assert answer['n'] == 104
    assert answer['systemMessage'].startswith('relaybay set aside 1 event kept while it was unreachable (500 bug)')
    sent = [q['body'] for q in s.requests]
    # the failing entry was tried five times; everything else arrived once
    assert sent.count(failing) == 5
    assert [b for b in sent if b != failing] == [live[0], spooled[0]] + live[1:] + spooled[2:]
    assert spool_entries(spool) == []
    [aside] = rejected_entries(spool)
    assert aside['payload'].encode() == failing and aside['status'] == 500 and aside['attempts'] == 5


def test_an_unreadable_spool_line_is_set_aside_and_the_person_is_told_once(stub, spool):
    write_spool(spool, [event(0)])
    with open(spool, 'a') as f:
        f.write('{"spooled_at": "x", "payl\n')
        f.write(json.dumps({'spooled_at': 'y', 'payload': event(2).decode()}) + '\n')
    s = stub()
    r = run_hook(s.url, spool, event(99))
    assert r.returncode == 0
    assert json.loads(r.stdout)['systemMessage'] == (
        'relaybay set aside 1 event kept while it was unreachable (unreadable: not JSON); it is in %s.rejected' % spool)
    assert [q['body'] for q in s.requests] == [event(99), event(0), event(2)]
    assert spool_entries(spool) == []
    [aside] = rejected_entries(spool)
    assert aside['line'] == '{"spooled_at": "x", "payl\n' and aside['answer'] == 'unreadable: not JSON'
    again = run_hook(s.url, spool, event(100))
    assert (again.stdout, again.stderr) == (b'{}', b'')


@pytest.mark.parametrize('procs', [2, 8])
def test_concurrent_calls_replay_each_event_exactly_once_in_order(stub, spool, procs):
    spooled = [event(i) for i in range(20)]
    write_spool(spool, spooled)
    s = stub(lambda req, i: {'body': {}, 'delay': 0.003})
    own = [event(1000 + k, 'PreToolUse') for k in range(procs)]
    popens = [subprocess.Popen([PYTHON, '-S', str(HOOK)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=outside_git(spool),
                               env=hook_env(s.url, spool)) for _ in range(procs)]
    for p, payload in zip(popens, own):  # start them together: all block on stdin until here
        p.stdin.write(payload)
    for p in popens:
        p.stdin.close()
    results = [(p.wait(timeout=30), p.stdout.read(), p.stderr.read()) for p in popens]
    for p in popens:
        p.stdout.close()
        p.stderr.close()
    assert results == [(0, b'{}', b'')] * procs
    replays = [q for q in s.requests if q['headers'].get('x-relaybay-replay') == '1']
    lives = [q for q in s.requests if 'x-relaybay-replay' not in q['headers']]
    assert [q['body'] for q in replays] == spooled  # each exactly once, in order
    assert sorted(q['body'] for q in lives) == sorted(own)
    assert spool_entries(spool) == []


def test_concurrent_spooling_loses_nothing(spool):
    down = closed_port_url()
    payloads = [event(i) for i in range(8)]
    popens = [subprocess.Popen([PYTHON, '-S', str(HOOK)], stdin=subprocess.PIPE,
                               env=hook_env(down, spool)) for _ in payloads]
    for p, payload in zip(popens, payloads):
        p.communicate(payload, timeout=30)
    assert sorted(e['payload'].encode() for e in spool_entries(spool)) == sorted(payloads)


@pytest.mark.parametrize('mode', ['chunked', 'split', 'no_length', 'chunked_split'])
def test_answer_framing(stub, spool, mode):
    answer = {'decision': 'block', 'reason': 'x' * 100 + ' ✓ end'}
    flags = {'chunked': 'chunked' in mode, 'split': 'split' in mode,
             'no_length': mode == 'no_length'}
    s = stub(lambda req, i: dict(body=answer, **flags))
    r = run_hook(s.url, spool, event(1, 'Stop'))
    assert r.returncode == 0 and r.stderr == b''
    assert json.loads(r.stdout) == answer


def test_empty_stdin_does_nothing(stub, spool):
    s = stub()
    r = run_hook(s.url, spool, b'')
    assert r.returncode == 0 and r.stdout == b'' and s.requests == []


def test_hot_path_imports_stay_light(stub, spool):
    s = stub()
    # A PreToolUse, run in this checkout (a working tree): the path that reports the tree.
    r = subprocess.run([PYTHON, '-S', '-X', 'importtime', str(HOOK)], input=event(1, 'PreToolUse', tool_name='Bash', tool_input={'command': 'ls'}), capture_output=True, timeout=30,
                       cwd=HOOK.parent.parent,
                       env=hook_env(s.url, spool, CLAUDE_CODE_MESSAGING_TOKEN='secret', CLAUDE_CODE_MESSAGING_SOCKET='/tmp/cc-socks/1.sock'))
    assert r.stdout == b'{}'
    imported = {line.split('|')[-1].strip() for line in r.stderr.decode().splitlines()
                if line.startswith('import time:')}
    assert 'relaybay_hook.tree' in imported and 'relaybay_tree' in s.requests[0]['body'].decode()
    heavy = {'socket', 'json', 're', 'os', 'ssl', 'email', 'http', 'http.client',
             'urllib', 'urllib.request', 'encodings.idna', 'fcntl', 'hashlib'}
    assert not imported & heavy, imported & heavy


def test_the_process_proof_goes_with_each_hook_and_matches_the_mcp_headers_helper(stub, spool):
    # Claude Code gives hooks and the http MCP entry's headersHelper the same messaging token;
    # both send its digest, never the token, so relaybay can match an MCP call to its hooks.
    s = stub()
    secret = 'messaging-secret-42'
    r = run_hook(s.url, spool, event(1), CLAUDE_CODE_MESSAGING_TOKEN=secret)
    helper = subprocess.run([PYTHON, '-S', str(HOOK.parent / 'relaybay-mcp-headers')], capture_output=True, timeout=30,
                            env=hook_env(s.url, spool, CLAUDE_CODE_MESSAGING_TOKEN=secret))
    assert r.returncode == 0 and helper.returncode == 0
    [req] = s.requests
    digest = hashlib.sha256(b'relaybay-process:' + secret.encode()).hexdigest()
    assert req['headers']['x-relaybay-process'] == digest
    assert json.loads(helper.stdout) == {'X-Relaybay-Process': digest}
    assert secret not in json.dumps(req['headers']) + helper.stdout.decode()


def test_without_a_messaging_token_no_proof_is_sent(stub, spool):
    s = stub()
    run_hook(s.url, spool, event(1))
    helper = subprocess.run([PYTHON, '-S', str(HOOK.parent / 'relaybay-mcp-headers')], capture_output=True, timeout=30,
                            env=hook_env(s.url, spool))
    [req] = s.requests
    assert 'x-relaybay-process' not in req['headers']
    assert json.loads(helper.stdout) == {}


def test_native_names_go_with_each_hook_as_claude_code_wrote_them(stub, spool, tmp_path):
    # Claude Code gives hooks its messaging socket, named by the claude pid, and keeps the
    # session's native name, status and tmux pane in <config dir>/sessions/<pid>.json.
    s = stub()
    sessions = tmp_path / 'claude' / 'sessions'
    sessions.mkdir(parents=True)
    claude = {'pid': 4242, 'name': 'bravo', 'status': 'busy', 'tmux': '%3', 'messagingSocketPath': '/tmp/cc-socks/4242.sock'}
    (sessions / '4242.json').write_text(json.dumps(claude))
    native_env = {'CLAUDE_CODE_MESSAGING_SOCKET': '/tmp/cc-socks/4242.sock', 'CLAUDE_CONFIG_DIR': str(tmp_path / 'claude')}
    for n, name in enumerate(['SessionStart', 'PreToolUse']):
        r = run_hook(s.url, spool, event(n, name, prompt='{"quoted": "}"}'), RELAYBAY_SESSION='b', **native_env)
        assert r.returncode == 0 and r.stdout == b'{}'
        sent = json.loads(s.requests[n]['body'])
        assert sent['relaybay_native'] == {'socket': '/tmp/cc-socks/4242.sock', 'session': claude}
        assert sent['prompt'] == '{"quoted": "}"}'
    # A rename rewrites the file: the next hook carries the new name.
    (sessions / '4242.json').write_text(json.dumps({**claude, 'name': 'bravo-2'}))
    run_hook(s.url, spool, event(2), **native_env)
    assert json.loads(s.requests[2]['body'])['relaybay_native']['session']['name'] == 'bravo-2'


@pytest.mark.parametrize('contents', [None, '', '{"name": "half-writ'])
def test_a_missing_or_half_written_session_file_sends_the_socket_alone(stub, spool, tmp_path, contents):
    s = stub()
    (tmp_path / 'sessions').mkdir()
    if contents is not None:
        (tmp_path / 'sessions' / '77.json').write_text(contents)
    run_hook(s.url, spool, event(1), CLAUDE_CODE_MESSAGING_SOCKET='/tmp/cc-socks/77.sock', CLAUDE_CONFIG_DIR=str(tmp_path))
    assert json.loads(s.requests[0]['body'])['relaybay_native'] == {'socket': '/tmp/cc-socks/77.sock', 'session': None}


@pytest.mark.parametrize('socket', ['/tmp/cc-socks/x.sock', '/tmp/"evil"/1.sock', '/tmp/cc-socks/1.txt'])
def test_a_socket_claude_code_would_not_make_is_not_sent(stub, spool, socket):
    s = stub()
    run_hook(s.url, spool, event(1), CLAUDE_CODE_MESSAGING_SOCKET=socket)
    assert s.requests[0]['body'] == event(1)


def test_a_pretooluse_carries_the_working_tree_the_hook_runs_in(stub, spool, tmp_path):
    # A checkout and a second worktree of it (its .git a file naming the shared git folder).
    repo, worktree = tmp_path / 'repo', tmp_path / 'wt'
    repo.mkdir()
    for args in (['init', '-q'], ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'x'],
                 ['worktree', 'add', '-q', str(worktree)]):
        subprocess.run(['git', *args], cwd=repo, check=True, capture_output=True)
    (worktree / 'src').mkdir()
    s = stub()
    edit = {'file_path': 'a.py', 'content': 'x'}
    run_hook(s.url, spool, event(1, 'PreToolUse', tool_name='Edit', tool_input=edit), cwd=worktree / 'src')
    run_hook(s.url, spool, event(2, 'PostToolUse', tool_name='Edit', tool_input=edit, tool_response={}), cwd=worktree / 'src')
    run_hook(s.url, spool, event(3, 'PreToolUse', tool_name='Edit', tool_input=edit))
    run_hook(s.url, spool, event(4, 'BeforeTool', tool_name='write_file', tool_input=edit), cwd=worktree / 'src')
    first, second, third, fourth = (json.loads(request['body']) for request in s.requests)
    real = lambda path: os.path.realpath(path)  # noqa: E731
    assert first['relaybay_tree'] == {'cwd': real(worktree / 'src'), 'root': real(worktree), 'repository': real(repo)}
    assert 'relaybay_tree' not in second  # only before a tool runs: the edit check's event
    assert 'relaybay_tree' not in third  # outside any working tree
    assert fourth['relaybay_tree'] == first['relaybay_tree']  # another CLI's name for PreToolUse


# --------------------------------------------------------------------------- wait mode

def stop_payload(session_id='sess-w'):
    return {'session_id': session_id, 'hook_event_name': 'Stop', 'stop_hook_active': False}


def test_wait_delivered_exits_2_with_text_on_stderr(stub, spool):
    s = stub(lambda req, i: {'body': {'status': 'delivered', 'text': 'message from B ✓'}})
    r = run_hook(s.url, spool, stop_payload('a b/ü'), 'wait')
    assert r.returncode == 2
    assert r.stderr.decode() == 'message from B ✓'
    assert r.stdout == b''
    [req] = s.requests
    assert req['method'] == 'GET' and req['path'] == '/api/hooks/wait'
    assert req['query'] == {'session_id': 'a b/ü', 'timeout': '50'}
    assert req['headers']['authorization'] == 'Bearer ' + TOKEN


def test_wait_replaced_exits_0(stub, spool):
    s = stub(lambda req, i: {'body': {'status': 'replaced'}})
    r = run_hook(s.url, spool, stop_payload(), 'wait')
    assert (r.returncode, r.stdout, r.stderr) == (0, b'', b'')


def test_wait_times_out_then_loops_until_deadline(stub, spool):
    s = stub(lambda req, i: {'body': {'status': 'timeout'}})
    t0 = time.monotonic()
    r = run_hook(s.url, spool, stop_payload(), 'wait', RELAYBAY_WAIT='2.5')
    elapsed = time.monotonic() - t0
    assert (r.returncode, r.stdout, r.stderr) == (0, b'', b'')
    assert 2.3 < elapsed < 4.5
    assert len(s.requests) >= 2
    timeouts = [int(q['query']['timeout']) for q in s.requests]
    assert timeouts[0] == 3 and all(1 <= t <= 3 for t in timeouts)
    # Each poll here reaches the bound: each says it is the last, so relaybay stops reporting
    # the session as being woken when it times out.
    assert all(q['query'].get('last') == '1' for q in s.requests)


def test_wait_timeout_then_delivered(stub, spool):
    def answer(req, i):
        if i == 0:
            return {'body': {'status': 'timeout'}, 'delay': 0.2}
        return {'body': {'status': 'delivered', 'text': 'late'}}
    s = stub(answer)
    r = run_hook(s.url, spool, stop_payload(), 'wait', RELAYBAY_WAIT='10')
    assert r.returncode == 2 and r.stderr == b'late'
    assert len(s.requests) == 2


def test_the_default_wait_bound_is_eight_hours():
    from relaybay_hook.wait import DEFAULT_WAIT

    assert DEFAULT_WAIT == 8 * 3600


def test_wait_retries_while_relaybay_is_unreachable_until_its_bound_then_exits_0_and_never_spools(spool):
    t0 = time.monotonic()
    r = run_hook(closed_port_url(), spool, stop_payload(), 'wait', RELAYBAY_WAIT='2.5')
    assert 2.3 < time.monotonic() - t0 < 6
    assert (r.returncode, r.stdout, r.stderr) == (0, b'', b'')
    assert not spool.exists()


@pytest.mark.parametrize('down', [
    {'status': 503, 'body': {'detail': 'restarting'}},
    {'status': 500, 'body': 'oops'},
    {'drop': True},
])
def test_wait_retries_while_relaybay_restarts_and_is_woken_once_it_is_back(stub, spool, down):
    s = stub(lambda req, i: down if i < 2 else {'body': {'status': 'delivered', 'text': 'back again'}})
    r = run_hook(s.url, spool, stop_payload(), 'wait', RELAYBAY_WAIT='30')
    assert (r.returncode, r.stderr) == (2, b'back again')
    assert len(s.requests) == 3
    assert not spool.exists()


@pytest.mark.parametrize('answer', [
    {'status': 401, 'body': {'detail': 'bad token'}},
    {'status': 404, 'body': {'detail': 'no such route'}},
    {'body': 'not json'},
    {'body': {'status': 'delivered', 'text': ''}},
    {'body': {'status': 'weird'}},
])
def test_wait_anything_else_exits_0(stub, spool, answer):
    s = stub(lambda req, i: answer)
    r = run_hook(s.url, spool, stop_payload(), 'wait')
    assert (r.returncode, r.stdout) == (0, b'')
    assert len(s.requests) == 1
    assert not spool.exists()


@pytest.mark.parametrize('payload', [b'', b'not json', b'[]', b'{"hook_event_name": "Stop"}'])
def test_wait_without_session_id_exits_0(stub, spool, payload):
    s = stub()
    r = run_hook(s.url, spool, payload, 'wait')
    assert (r.returncode, r.stdout, r.stderr) == (0, b'', b'')
    assert s.requests == []


def test_an_unattended_session_does_not_wait(stub, spool):
    # `claude -p` does not exit before its asyncRewake hooks end: no waiter, no request.
    s = stub(lambda req, i: {'body': {'status': 'delivered', 'text': 'mail'}})
    r = run_hook(s.url, spool, stop_payload(), 'wait', CLAUDE_CODE_SESSION_ATTENDED='0')
    assert (r.returncode, r.stdout, r.stderr) == (0, b'', b'')
    assert s.requests == []


@pytest.mark.parametrize('attended, asked', [('1', ''), ('', ''), ('0', '1'), ('0', 'yes')])
def test_an_attended_session_or_one_asked_to_waits(stub, spool, attended, asked):
    s = stub(lambda req, i: {'body': {'status': 'delivered', 'text': 'mail'}})
    r = run_hook(s.url, spool, stop_payload(), 'wait', CLAUDE_CODE_SESSION_ATTENDED=attended,
                 RELAYBAY_WAIT_UNATTENDED=asked)
    assert (r.returncode, r.stderr) == (2, b'mail')
    assert len(s.requests) == 1


def test_a_headless_worker_can_ask_to_wait_in_the_configuration_file(stub, spool, tmp_path):
    config = tmp_path / 'hook.conf'
    config.write_text('RELAYBAY_WAIT_UNATTENDED=1\n')
    s = stub(lambda req, i: {'body': {'status': 'delivered', 'text': 'mail'}})
    r = run_hook(s.url, spool, stop_payload(), 'wait', CLAUDE_CODE_SESSION_ATTENDED='0',
                 RELAYBAY_HOOK_CONFIG=config)
    assert (r.returncode, r.stderr) == (2, b'mail')


# --------------------------------------------------------------------------- configuration file

def test_settings_come_from_the_configuration_file(stub, spool, tmp_path):
    s = stub()
    config = tmp_path / 'hook.conf'
    config.write_text('# written by claude_config\nRELAYBAY_URL=%s/prefix\nRELAYBAY_TOKEN=from-the-file\n'
                      'RELAYBAY_SESSION=Filed\nRELAYBAY_SPOOL=%s\n' % (s.url, tmp_path / 'filed.jsonl'))
    env = {'PATH': '/usr/bin:/bin', 'HOME': str(tmp_path), 'RELAYBAY_HOOK_CONFIG': str(config)}
    r = subprocess.run([PYTHON, '-S', str(HOOK)], input=event(1, name='SessionStart'), env=env,
                       capture_output=True, timeout=30)
    assert (r.returncode, r.stdout) == (0, b'{}')
    [req] = s.requests
    assert req['path'] == '/prefix/api/hooks'
    assert req['headers']['authorization'] == 'Bearer from-the-file'
    assert json.loads(req['body'])['relaybay_session'] == 'Filed'
    s.close()
    subprocess.run([PYTHON, '-S', str(HOOK)], input=event(2), env=env, capture_output=True, timeout=30)
    assert [e['payload'] for e in spool_entries(tmp_path / 'filed.jsonl')] == [event(2).decode()]


def test_the_environment_overrides_the_configuration_file(stub, spool, tmp_path):
    s = stub()
    config = tmp_path / 'hook.conf'
    config.write_text('RELAYBAY_URL=http://127.0.0.1:1\nRELAYBAY_TOKEN=from-the-file\n')
    r = run_hook(s.url, spool, event(1), RELAYBAY_HOOK_CONFIG=config)
    assert (r.returncode, r.stdout) == (0, b'{}')
    assert s.requests[0]['headers']['authorization'] == 'Bearer ' + TOKEN


# --------------------------------------------------------------------------- timing (by hand)

def _timing(runs=200):
    """Compare `python3 -S bin/relaybay-hook` posting to the stub with `python3 -c pass`."""
    import shutil
    import tempfile
    pythons = [PYTHON] + [p for p in ('/usr/bin/python3',) if os.path.exists(p) and p != PYTHON]
    s = Stub(lambda req, i: {'body': {'hookSpecificOutput': {
        'hookEventName': 'PostToolUse', 'additionalContext': 'ok'}}})
    tmp = Path(tempfile.mkdtemp())
    env = hook_env(s.url, tmp / 'spool.jsonl')
    payload = event(1)
    (tmp / 'payload.json').write_bytes(payload)
    hyperfine = shutil.which('hyperfine')
    for py in pythons:
        if hyperfine:
            subprocess.run([hyperfine, '-N', '-w', '10', '-r', str(runs), '--input',
                            str(tmp / 'payload.json'),
                            '%s -c pass' % py, '%s -S %s' % (py, HOOK)], env=env)
            continue
        cases = [('python3 -c pass', [py, '-c', 'pass']),
                 ('python3 -S -c pass', [py, '-S', '-c', 'pass']),
                 ('python3 -S bin/relaybay-hook', [py, '-S', str(HOOK)])]
        for label, cmd in cases:  # warm-up (pyc, page cache)
            for _ in range(10):
                subprocess.run(cmd, input=payload, env=env, capture_output=True)
        best = {label: [] for label, _ in cases}
        for _ in range(runs):  # interleaved, so a load spike hits every case alike
            for label, cmd in cases:
                t0 = time.perf_counter()
                subprocess.run(cmd, input=payload, env=env, capture_output=True)
                best[label].append(time.perf_counter() - t0)
        for samples in best.values():
            samples.sort()
        print('\n%s (%s)' % (py, subprocess.run([py, '-V'], capture_output=True, text=True).stdout.strip()))
        base = best['python3 -c pass'][len(samples) // 2]
        for label, samples in best.items():
            med = samples[len(samples) // 2]
            print('  %-28s median %6.2f ms  min %6.2f ms  p90 %6.2f ms  %.2fx' % (
                label, med * 1e3, samples[0] * 1e3, samples[int(len(samples) * .9)] * 1e3,
                med / base))
    print('\nstub requests served: %d' % len(s.requests))
    s.close()
    shutil.rmtree(tmp)


if __name__ == '__main__':
    _timing(int(sys.argv[1]) if len(sys.argv) > 1 else 200)



def test_the_token_can_come_from_a_file(stub, spool, tmp_path):
    """claude_config keeps the token out of hook command lines by naming a file."""
    token_file = tmp_path / 'hook-token'
    token_file.write_text('from-a-file')
    s = stub()
    r = run_hook(s.url, spool, event(1), RELAYBAY_TOKEN='', RELAYBAY_TOKEN_FILE=token_file)
    assert r.returncode == 0
    assert s.requests[0]['headers']['authorization'] == 'Bearer from-a-file'


def test_the_engine_a_hook_command_names_goes_with_every_event(stub, spool):
    # Codex's and Gemini CLI's hooks run `relaybay-hook --engine codex|gemini` (docs/rules.md §1.6).
    s = stub()
    payload = event(1, 'BeforeAgent', prompt='hi')
    assert run_hook(s.url, spool, payload, '--engine', 'gemini').returncode == 0
    sent = json.loads(s.requests[0]['body'])
    assert sent['relaybay_engine'] == 'gemini' and {k: v for k, v in sent.items() if k != 'relaybay_engine'} == json.loads(payload)
    run_hook(s.url, spool, event(2), '--engine=codex')
    assert json.loads(s.requests[1]['body'])['relaybay_engine'] == 'codex'
    # Which engines there are is relaybay's to say (it refuses a name it does not know, with the
    # list): the client passes any name on. What is no name is said on stderr, and the event goes
    # as Claude Code's.
    run_hook(s.url, spool, event(3), '--engine', 'vim')
    assert json.loads(s.requests[2]['body'])['relaybay_engine'] == 'vim'
    r = run_hook(s.url, spool, event(4), '--engine', 'v"im')
    assert b"is not an engine's name" in r.stderr and s.requests[3]['body'] == event(4)


def test_a_refused_token_at_a_codex_start_says_to_connect_codex_again(stub, spool):
    s = stub(lambda req, i: {'status': 401, 'body': {'detail': 'wrong token'}})
    r = run_hook(s.url, spool, event(0, 'SessionStart', source='startup'), '--engine', 'codex')
    said = json.loads(r.stdout)['systemMessage']
    assert 'wrong token' in said and '`manage.py connect codex` again' in said
