"""The hook client on the person's machine (docs/hook-client.md, "The spool" and "Only to
relaybay"): whatever the spool holds, the live event goes first and through, and what cannot be
replayed is set aside and said once; its files are private whichever is made first, no symbolic
link is followed, and everything it keeps is bounded; a listener of another account on
relaybay's address is sent nothing, and nothing it answers is printed.

Other accounts are real: files chowned to, and programs run as, uid 65534 (setpriv).
"""
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from relaybay_hook import peer
from tests.impostor import ANSWER as IMPOSTOR_ANSWER
from tests.test_hook_client import HOOK, event, hook_env, outside_git, run_hook, spool, spool_entries, stop_payload, stub  # noqa: F401

pytestmark = pytest.mark.embedded_only

NOBODY = 65534
IMPOSTOR = Path(__file__).resolve().parent / 'impostor.py'
SYSTEM_PYTHON = '/usr/bin/python3'  # the machine's: another account can run it
AS_NOBODY = ['setpriv', '--reuid', str(NOBODY), '--regid', str(NOBODY), '--clear-groups']


@pytest.fixture
def shared_tmp():
    """A folder other accounts can reach (pytest's own are 0700 above the test's)."""
    folder = Path(tempfile.mkdtemp(prefix='relaybay-accounts-'))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def rejected(spool):
    path = Path(str(spool) + '.rejected')
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def asides(spool):
    return sorted(p for p in spool.parent.iterdir() if p.name.startswith(spool.name + '.aside-'))


def told(result):
    return json.loads(result.stdout).get('systemMessage', '')


# --------------------------------------------------------------------------- the spool

def test_a_spool_line_with_infinite_attempts_is_set_aside_and_every_event_goes_through(stub, spool):
    spool.parent.mkdir(parents=True)
    spool.write_text('{"payload": "{}", "attempts": Infinity}\n' + json.dumps({'payload': event(1).decode()}) + '\n')
    s = stub()
    first = run_hook(s.url, spool, event(2))
    assert [q['body'] for q in s.requests] == [event(2), event(1)]
    notice = ('relaybay set aside 1 event kept while it was unreachable (unreadable: attempts is '
              'Infinity); it is in %s.rejected' % spool)
    assert told(first) == notice
    assert b'attempts is Infinity' in first.stderr
    [aside] = rejected(spool)
    assert aside['line'] == '{"payload": "{}", "attempts": Infinity}\n'
    assert spool_entries(spool) == []
    # said once: the next events go through with nothing more to say; the next post takes the
    # notice to the board
    for n in (3, 4):
        later = run_hook(s.url, spool, event(n))
        assert (later.stdout, later.stderr) == (b'{}', b'')
    assert [q['body'] for q in s.requests][2:] == [event(3), event(4)]
    assert [q['headers'].get('x-relaybay-notice') for q in s.requests] == [None, None, notice, None]


@pytest.mark.parametrize('kind', ['directory', 'symlink', 'too big'])
def test_a_spool_the_client_cannot_use_is_moved_aside_and_the_live_event_goes_through(stub, spool, tmp_path, kind):
    spool.parent.mkdir(parents=True)
    target = tmp_path / 'elsewhere.txt'
    if kind == 'directory':
        spool.mkdir()
        (spool / 'inside').write_text('kept')
    elif kind == 'symlink':
        target.write_text(json.dumps({'payload': event(0).decode()}) + '\n')
        spool.symlink_to(target)
    else:
        with open(spool, 'wb') as f:  # 200 MB, sparse: the client must not read it
            f.truncate(200 * 1024 * 1024)
    s = stub()
    r = run_hook(s.url, spool, event(1))
    assert [q['body'] for q in s.requests] == [event(1)]
    [aside] = asides(spool)
    why = {'directory': 'is a directory', 'symlink': 'is a symbolic link', 'too big': 'holds 200 MB, past its bound of 16 MB'}[kind]
    assert told(r) == "relaybay's spool %s %s: it was moved aside to %s, and events are kept in a new one." % (spool, why, aside)
    assert s.requests[0]['headers']['x-relaybay-notice'] == told(r)  # the board hears of it with this very post
    assert why.encode() in r.stderr
    if kind == 'directory':
        assert (aside / 'inside').read_text() == 'kept'
    if kind == 'symlink':
        assert target.read_text() == json.dumps({'payload': event(0).decode()}) + '\n'  # the link's target untouched
    # relaybay down: the next event is kept in a new spool of the client's own
    s.close()
    down = run_hook(s.url, spool, event(2))
    assert down.stdout == b'' and down.stderr == b''
    assert stat.S_ISREG(spool.lstat().st_mode) and [e['payload'].encode() for e in spool_entries(spool)] == [event(2)]


def test_a_spool_of_another_account_is_moved_aside_by_a_client_that_cannot_read_it(stub, shared_tmp):
    # The client runs as uid 65534 in a home of its own; the spool in it belongs to root, 0600.
    home = shared_tmp / 'home'
    (home / '.relaybay').mkdir(parents=True)
    spool = home / '.relaybay' / 'spool.jsonl'
    spool.write_text(json.dumps({'payload': event(0).decode()}) + '\n')
    spool.chmod(0o600)
    os.chown(home, NOBODY, NOBODY)
    os.chown(home / '.relaybay', NOBODY, NOBODY)
    s = stub()
    r = subprocess.run(AS_NOBODY + [SYSTEM_PYTHON, '-S', str(HOOK)], input=event(1), capture_output=True, timeout=30,
                       cwd='/', env=hook_env(s.url, spool, HOME=home))
    assert [q['body'] for q in s.requests] == [event(1)]
    [aside] = asides(spool)
    assert told(r).startswith("relaybay's spool %s belongs to another account (uid 0): it was moved aside to %s" % (spool, aside))
    assert aside.stat().st_uid == 0 and not spool.exists()


def test_an_event_larger_than_relaybay_takes_is_not_spooled_and_the_person_is_told(spool):
    big = event(1, prompt='x' * (2 * 1024 * 1024))
    r = run_hook('http://127.0.0.1:9', spool, big)
    assert b'larger than relaybay takes' in r.stderr
    assert spool_entries(spool) == []


def test_an_entry_kept_longer_than_a_week_is_set_aside_not_replayed(stub, spool):
    spool.parent.mkdir(parents=True)
    old = time.strftime('%Y-%m-%dT%H:%M:%S.000000+00:00', time.gmtime(time.time() - 8 * 86400))
    recent = time.strftime('%Y-%m-%dT%H:%M:%S.000000+00:00', time.gmtime(time.time() - 86400))
    spool.write_text(json.dumps({'spooled_at': old, 'payload': event(0).decode()}) + '\n'
                     + json.dumps({'spooled_at': recent, 'payload': event(1).decode()}) + '\n')
    s = stub()
    r = run_hook(s.url, spool, event(2))
    assert [q['body'] for q in s.requests] == [event(2), event(1)]
    assert 'kept longer than 7 days' in told(r)
    [aside] = rejected(spool)
    assert aside['payload'].encode() == event(0)


def test_what_is_set_aside_is_bounded_to_one_older_generation(stub, spool):
    spool.parent.mkdir(parents=True)
    Path(str(spool) + '.rejected').write_bytes(b'x' * (4 * 1024 * 1024))
    spool.write_text(json.dumps({'payload': event(0).decode(), 'attempts': -1}) + '\n')
    run_hook(stub().url, spool, event(1))
    assert Path(str(spool) + '.rejected.1').stat().st_size == 4 * 1024 * 1024
    assert len(rejected(spool)) == 1


# --------------------------------------------------------------------------- its files

def delivery(handle):
    return {'body': {'hookSpecificOutput': {'hookEventName': 'PostToolUse', 'additionalContext': 'hi'}},
            'headers': {'X-Relaybay-Items': handle}}


def mode(path):
    return stat.S_IMODE(path.lstat().st_mode)


def test_folders_are_0700_and_files_0600_when_the_printed_record_is_made_first_and_compacted(stub, spool):
    s = stub(lambda req, i: delivery('M-%d' % (i + 1)))
    env = {'CLAUDE_CODE_MESSAGING_TOKEN': 'secret'}
    old_umask = os.umask(0o022)
    try:
        assert run_hook(s.url, spool, event(1), **env).stdout
        [record] = (spool.parent / 'printed').glob('?' * 64)
        # past the compaction threshold: the next record is written anew
        with open(record, 'a') as f:
            f.write(''.join('M-%d c %.3f\n' % (n, time.time()) for n in range(1000, 1300)))
        first = record.stat().st_ino
        assert run_hook(s.url, spool, event(2), **env).stdout
    finally:
        os.umask(old_umask)
    assert record.stat().st_ino != first and 'M-2 p' in record.read_text()  # written anew
    for folder in (spool.parent.parent, spool.parent, spool.parent / 'printed'):
        assert mode(folder) == 0o700, folder
    for path in (spool.parent / 'printed').iterdir():
        assert mode(path) == 0o600, path


def test_a_printed_record_that_is_a_symlink_is_not_followed(stub, spool, tmp_path):
    s = stub(lambda req, i: delivery('M-1'))
    env = {'CLAUDE_CODE_MESSAGING_TOKEN': 'secret'}
    assert run_hook(s.url, spool, event(1), **env).stdout
    [record] = (spool.parent / 'printed').glob('[0-9a-f]*[0-9a-f]')
    target = tmp_path / 'target'
    target.write_text('untouched\n')
    record.unlink()
    record.symlink_to(target)
    s2 = stub(lambda req, i: delivery('M-2'))
    r = run_hook(s2.url, spool, event(2), **env)
    assert r.returncode == 0 and b'could not record' in r.stderr
    assert target.read_text() == 'untouched\n'
    assert 'x-relaybay-printed' not in s2.requests[0]['headers']  # the link's target was not read


def test_records_of_processes_long_gone_are_removed_when_a_new_one_is_made(stub, spool):
    printed = spool.parent / 'printed'
    printed.mkdir(parents=True)
    gone, recent = printed / ('a' * 64), printed / ('b' * 64)
    for path in (gone, recent):
        path.write_text('M-1 c 1.000\n')
    three_days_ago = time.time() - 3 * 86400
    os.utime(gone, (three_days_ago, three_days_ago))
    run_hook(stub(lambda req, i: delivery('M-9')).url, spool, event(1), CLAUDE_CODE_MESSAGING_TOKEN='new')
    assert not gone.exists() and recent.exists()


# --------------------------------------------------------------------------- only to relaybay

@pytest.fixture
def impostor(shared_tmp):
    """A listener of uid 65534 on a loopback port: (its url, the connections it accepted)."""
    folder = shared_tmp / 'impostor'
    folder.mkdir()
    os.chown(folder, NOBODY, NOBODY)
    log = folder / 'log.jsonl'
    process = subprocess.Popen(AS_NOBODY + [SYSTEM_PYTHON, str(IMPOSTOR), str(log)], stdout=subprocess.PIPE, cwd='/')
    port = int(process.stdout.readline())

    def accepted():
        """What each connection sent it (waiting a moment for it to write down the last one)."""
        deadline = time.monotonic() + 5
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return [json.loads(line)['received'] for line in log.read_text().splitlines()] if log.exists() else []

    yield 'http://127.0.0.1:%d' % port, accepted
    process.kill()
    process.wait(10)
    process.stdout.close()


def test_a_listener_of_another_account_gets_no_token_and_no_prompt_and_its_answer_is_not_printed(impostor, stub, spool):
    url, accepted = impostor
    prompt = event(1, 'UserPromptSubmit', prompt='the secret plan')
    r = run_hook(url, spool, prompt)
    assert r.returncode == 0
    assert b'INJECTED' not in r.stdout + r.stderr
    assert told(r) == ('relaybay is not what answers at %s: the listener on 127.0.0.1 port %s belongs to another '
                       'account (uid 65534). Nothing was sent to it and nothing it says reaches this session; events '
                       'are kept in %s until relaybay answers there.' % (url, url.rsplit(':', 1)[1], spool))
    again = run_hook(url, spool, event(2))  # said once while it lasts
    assert again.stdout == b'' and b'INJECTED' not in again.stderr
    assert accepted() and set(accepted()) == {''}  # connections taken, not a byte received
    assert [e['payload'].encode() for e in spool_entries(spool)] == [prompt, event(2)]
    # relaybay back: the kept events reach it, and the next impostor is told of again
    s = stub()
    assert run_hook(s.url, spool, event(3)).stdout == b'{}'
    assert [q['body'] for q in s.requests] == [event(3), prompt, event(2)]
    assert 'not what answers' in told(run_hook(url, spool, event(4)))


def test_the_wake_up_hook_hands_nothing_of_another_accounts_listener_to_the_model(impostor, spool):
    url, accepted = impostor
    r = run_hook(url, spool, stop_payload(), 'wait', RELAYBAY_WAIT='2', CLAUDE_CODE_SESSION_ATTENDED='1')
    assert (r.returncode, r.stdout) == (0, b'')
    assert b'INJECTED' not in r.stderr
    assert accepted() and set(accepted()) == {''}


def test_relaybay_of_the_same_account_or_of_root_is_reached(shared_tmp, stub):
    # The client as uid 65534: a listener of its own account, and one of root (the stub).
    home = shared_tmp / 'home'
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    log = home / 'log.jsonl'
    own = subprocess.Popen(AS_NOBODY + [SYSTEM_PYTHON, str(IMPOSTOR), str(log)], stdout=subprocess.PIPE, cwd='/')
    try:
        own_url = 'http://127.0.0.1:%d' % int(own.stdout.readline())
        s = stub()
        for url in (own_url, s.url):
            r = subprocess.run(AS_NOBODY + [SYSTEM_PYTHON, '-S', str(HOOK)], input=event(1), capture_output=True,
                               timeout=30, cwd='/', env=hook_env(url, home / '.relaybay' / 'spool.jsonl', HOME=home))
            assert r.stdout == (b'{}' if url == s.url else IMPOSTOR_ANSWER)
        assert b'Authorization: Bearer' in log.read_bytes() and s.requests
    finally:
        own.kill()
        own.wait(10)
        own.stdout.close()


def test_the_socket_tables_in_proc_name_the_same_owner_as_netlink(impostor):
    url, _ = impostor
    port = int(url.rsplit(':', 1)[1])
    with socket.create_connection(('127.0.0.1', port)) as sock:
        assert peer.owner(sock) == NOBODY
        assert peer._owner_by_proc(sock.family, sock.getpeername(), sock.getsockname()) == NOBODY
        with pytest.raises(peer.NotRelaybay, match='belongs to another account'):
            peer.check(sock)
