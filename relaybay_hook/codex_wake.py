"""Waking an idle Codex CLI session (docs/rules.md §1.6): the waiter of its Stop hook, detached
from the hook, hears from relaybay that mail waits and runs `codex queue --thread ID --message
NUDGE --resume`, which starts a turn in the Codex that runs the session with the fixed NUDGE as
its prompt (seen, Codex CLI 0.171.0); that turn's UserPromptSubmit hook delivers the mail. So
no message text is ever on a command line, where any account of the machine can read it
(/proc/PID/cmdline). Not on the event hooks' hot path: imported by wait mode only.
"""
import os
import subprocess

from relaybay_hook.output import err

QUEUE_TIMEOUT = 60
# The prompt of a wake-up turn; relaybay knows it is not the person's (sessions_app/hooks/ingest.py).
NUDGE = 'relaybay: new items arrived for you while you were idle; they follow.'
# How far up from the hook client the Codex process is: Codex runs hook commands through a
# shell, which may run the client as its child.
ANCESTORS = 4


def _parent(pid):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            stat = f.read().decode('utf-8', 'replace')
    except OSError:
        return 0
    fields = stat.rpartition(')')[2].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0


def _start_time(pid):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            return f.read().decode('utf-8', 'replace').rpartition(')')[2].split()[19]
    except (OSError, IndexError):
        return None


def codex_process():
    """(pid, start time) of the Codex process that runs this hook: the nearest ancestor whose
    executable is named codex, or None."""
    pid = os.getppid()
    for _ in range(ANCESTORS):
        if pid <= 1:
            return None
        try:
            exe = os.readlink('/proc/%d/exe' % pid)
        except OSError:
            exe = ''
        if os.path.basename(exe) == 'codex':
            return pid, _start_time(pid)
        pid = _parent(pid)
    return None


class Waker:
    """Wakes the session with NUDGE while the Codex process that ran its Stop hook runs."""

    def __init__(self, codex, session_id, process):
        self.codex, self.session_id, self.process = codex, session_id, process

    def alive(self):
        """Whether that Codex process still runs (the same pid, started at the same time)."""
        return _start_time(self.process[0]) == self.process[1]

    def __call__(self):
        """Start a turn with NUDGE; whether Codex took it."""
        if not self.alive():
            return False  # that Codex has exited: nobody watches the session any more
        try:
            done = subprocess.run([self.codex, 'queue', '--thread', self.session_id, '--message', NUDGE, '--resume'],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=QUEUE_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            err('codex queue did not run: %s' % exc)
            return False
        if done.returncode != 0:
            err('codex queue failed (exit %d): %s' % (done.returncode, done.stderr.decode('utf-8', 'replace')[-300:]))
        return done.returncode == 0


def waker(codex, session_id):
    """The session's Waker, or None when no Codex process runs this hook."""
    process = codex_process()
    if process is None:
        err('no Codex process above this hook: the session is not woken while idle')
        return None
    return Waker(codex, session_id, process)


def detached():
    """Go on in a process of its own, with no terminal and no pipe to Codex, so the hook ends
    at once: True in that process, False in the hook's."""
    if os.fork():
        return False
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    return True
