"""The hook client's half of "exactly once into the model" (relaybay_hook/printed.py,
docs/hook-client.md): it says it confirms what it prints, records the items it printed once the
answer is out, reports them with its next calls until relaybay takes the report, and prints no
answer that repeats an item printed already — the wake-up hook alike. A client that gives up
or is killed before its answer is out records nothing, so relaybay offers the items again.

Run against the stub server of tests/test_hook_client.py."""
import json
import subprocess
import threading

import pytest

from tests.test_hook_client import HOOK, PYTHON, event, hook_env, run_hook, spool, stop_payload, stub  # noqa: F401

ITEMS = 'X-Relaybay-Items'
TAKEN = 'X-Relaybay-Confirmed'
# The client against the stub server: make test runs the module once (tests/test_hook_client.py).
pytestmark = pytest.mark.embedded_only


def delivery(*handles, text='[relaybay] delivered'):
    return {'body': {'hookSpecificOutput': {'hookEventName': 'PostToolUse', 'additionalContext': text}},
            'headers': {ITEMS: ' '.join(handles)}}


def reported(request):
    return request['headers'].get('x-relaybay-printed', '').split()


def test_each_call_says_it_confirms_and_reports_what_it_printed_until_relaybay_takes_it(stub, spool):
    answers = [delivery('C-3', 'M-7'), {'body': {}}, {'body': {}, 'headers': {TAKEN: 'C-3 M-7'}}, {'body': {}}]
    s = stub(lambda req, i: answers[i])
    first = run_hook(s.url, spool, event(1))
    assert json.loads(first.stdout)['hookSpecificOutput']['additionalContext'] == '[relaybay] delivered'
    for n in (2, 3, 4):
        assert run_hook(s.url, spool, event(n)).returncode == 0
    assert all(req['headers']['x-relaybay-confirming'] == '1' for req in s.requests)
    assert [reported(req) for req in s.requests] == [[], ['C-3', 'M-7'], ['C-3', 'M-7'], []]


def test_an_answer_repeating_an_item_printed_already_is_not_printed(stub, spool):
    answers = [delivery('M-7'), delivery('M-7', 'M-8', text='[relaybay] again'), {'body': {}}]
    s = stub(lambda req, i: answers[i])
    assert run_hook(s.url, spool, event(1)).stdout
    again = run_hook(s.url, spool, event(2))
    assert again.returncode == 0 and again.stdout == b''
    assert b'repeats M-7' in again.stderr
    run_hook(s.url, spool, event(3))
    # M-8 was not printed: relaybay offers it again; M-7 is reported until taken.
    assert reported(s.requests[2]) == ['M-7']


def test_a_client_that_gives_up_before_the_answer_records_nothing(stub, spool):
    answers = {0: dict(delivery('C-3'), delay=2), 1: delivery('M-4')}
    s = stub(lambda req, i: answers.get(i, {'body': {}}))
    gave_up = run_hook(s.url, spool, event(1), RELAYBAY_TIMEOUT='0.3')
    assert gave_up.stdout == b''
    # The next call posts its own event, then replays the one spooled; the one after reports.
    assert run_hook(s.url, spool, event(2)).stdout
    run_hook(s.url, spool, event(3))
    assert [reported(req) for req in s.requests] == [[], [], [], ['M-4']]


def test_a_client_killed_before_its_answer_is_out_records_nothing(stub, spool):
    answers = {0: dict(delivery('C-3'), hang=True), 1: delivery('M-4')}
    s = stub(lambda req, i: answers.get(i, {'body': {}}))
    process = subprocess.Popen([PYTHON, '-S', str(HOOK)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               env=hook_env(s.url, spool))
    process.stdin.write(event(1))
    process.stdin.close()
    while not s.requests:
        threading.Event().wait(0.01)
    process.kill()
    process.wait(10)
    assert run_hook(s.url, spool, event(2)).stdout
    run_hook(s.url, spool, event(3))
    assert [reported(req) for req in s.requests] == [[], [], ['M-4']]


def test_an_item_a_parallel_hook_printed_while_this_one_waited_is_not_printed_again(stub, spool):
    """Two hooks of one process at once: the slow one read the record before the other
    printed the item relaybay then offered again to the slow one."""
    release = threading.Event()

    def answer(req, i):
        if b'"n": 1' in req['body']:
            release.wait(30)
        return delivery('M-7')

    s = stub(answer)
    slow = {}
    waiting = threading.Thread(target=lambda: slow.update(run=run_hook(s.url, spool, event(1))))
    waiting.start()
    while not s.requests:
        threading.Event().wait(0.01)
    assert run_hook(s.url, spool, event(2)).stdout
    release.set()
    waiting.join(30)
    assert slow['run'].returncode == 0 and slow['run'].stdout == b''
    assert b'repeats M-7' in slow['run'].stderr


def test_the_wake_up_hook_records_what_it_printed_for_the_event_hooks_to_report(stub, spool):
    def answer(req, i):
        if req['path'] == '/api/hooks/wait':
            return {'body': {'status': 'delivered', 'text': 'wake up'}, 'headers': {ITEMS: 'C-9'}}
        return {'body': {}}

    s = stub(answer)
    woken = run_hook(s.url, spool, stop_payload('sess-1'), 'wait')
    assert woken.returncode == 2 and woken.stderr == b'wake up'
    run_hook(s.url, spool, event(1))
    assert s.requests[0]['headers']['x-relaybay-confirming'] == '1'
    assert reported(s.requests[1]) == ['C-9']


def test_the_wake_up_hook_prints_no_wake_up_repeating_an_item_printed_already(stub, spool):
    def answer(req, i):
        if req['path'] == '/api/hooks/wait':
            return {'body': {'status': 'delivered', 'text': 'wake up again'}, 'headers': {ITEMS: 'C-3'}}
        return delivery('C-3')

    s = stub(answer)
    run_hook(s.url, spool, event(1))
    repeat = run_hook(s.url, spool, stop_payload('sess-1'), 'wait')
    assert repeat.returncode == 0 and b'wake up again' not in repeat.stderr
    assert reported(s.requests[1]) == ['C-3']


def test_one_process_shares_its_record_across_hook_sessions_by_its_proof(stub, spool):
    """After /clear the process keeps its messaging token under a new session id: what it
    printed under the old one is still reported, and never printed again."""
    answers = [delivery('C-3'), delivery('C-3'), {'body': {}}]
    s = stub(lambda req, i: answers[i])
    run_hook(s.url, spool, event(1), CLAUDE_CODE_MESSAGING_TOKEN='secret')
    cleared = run_hook(s.url, spool, event(2, session_id='sess-after-clear'), CLAUDE_CODE_MESSAGING_TOKEN='secret')
    assert cleared.stdout == b''
    assert reported(s.requests[1]) == ['C-3']


def test_parallel_hooks_of_one_process_each_record_what_they_printed(stub, spool):
    s = stub(lambda req, i: delivery('M-%d' % (100 + i)) if i < 12 else {'body': {}})
    env = {'CLAUDE_CODE_MESSAGING_TOKEN': 'secret'}
    runs = [threading.Thread(target=run_hook, args=(s.url, spool, event(n)), kwargs=env) for n in range(12)]
    for run in runs:
        run.start()
    for run in runs:
        run.join(60)
    run_hook(s.url, spool, event(99), **env)
    assert sorted(reported(s.requests[-1])) == sorted('M-%d' % (100 + i) for i in range(12))


def test_the_record_stays_small_and_keeps_what_is_still_needed(tmp_path):
    """Past a few hundred lines a write rewrites the file with what is still needed: reports
    relaybay has not taken, and taken items, of the last day."""
    import time

    from relaybay_hook import printed

    path = str(tmp_path / 'printed' / 'x')
    (tmp_path / 'printed').mkdir()
    now, old = time.time(), time.time() - 2 * 86400
    lines = ['M-%d c %.3f' % (n, old) for n in range(150)] + ['M-%d p %.3f' % (n, old) for n in range(150, 200)]
    lines += ['M-%d c %.3f' % (n, now) for n in range(200, 250)] + ['M-%d p %.3f' % (n, now) for n in range(250, 300)]
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    printed.record(path, printed.load(path), printed=['M-1000'])
    entries = printed.load(path)
    assert len(open(path).read().splitlines()) == len(entries) == 101
    assert sorted(printed.to_report(entries)) == sorted(['M-1000'] + ['M-%d' % n for n in range(250, 300)])
    assert all(entries['M-%d' % n][0] == 'c' for n in range(200, 250))


def test_the_hot_path_reads_the_record_and_imports_nothing_heavy(stub, spool):
    s = stub(lambda req, i: delivery('M-1') if i == 0 else {'body': {}})
    run_hook(s.url, spool, event(1))
    r = subprocess.run([PYTHON, '-S', '-X', 'importtime', str(HOOK)], input=event(2), capture_output=True, timeout=30,
                       env=hook_env(s.url, spool))
    assert r.stdout == b'{}' and reported(s.requests[1]) == ['M-1']
    imported = {line.split('|')[-1].strip() for line in r.stderr.decode().splitlines() if line.startswith('import time:')}
    heavy = {'socket', 'json', 're', 'os', 'ssl', 'email', 'http', 'http.client', 'urllib', 'urllib.request', 'fcntl', 'hashlib'}
    assert not imported & heavy, imported & heavy
