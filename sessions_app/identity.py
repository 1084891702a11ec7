"""Who a hook or a call is (docs/rules.md §1.5): the Claude Code process behind a link, whether
it still runs, and the name a session started without one goes by.

A session's identity is its Claude Code process, proven by the digest of the process's
messaging token that its hooks and MCP calls carry (`HookLink.process_proof`); names are
labels that a running session holds and a restarted one takes back."""

import os
import re
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from core.auth import machine_of_process
from core.errors import ErrorCode, Refused

from .models import Session

# A live link whose process relaybay cannot see (no messaging socket reported: native messaging
# off, or relaybay on another machine) counts as running while it was heard from this recently:
# a hook, or its wake-up hook's poll (every 50 s while it waits).
HEARD_FROM_RECENTLY = timedelta(minutes=10)
# A waiter's next poll follows its last one within a second; this covers a slow machine.
WAITER_POLL_GRACE = timedelta(seconds=15)
TITLE_MAX = Session._meta.get_field("title").max_length
OTHER_MACHINE = (
    "This names a session of another machine: a machine's token acts for that machine's own sessions only, "
    "and relaybay's own token for the sessions of relaybay's machine. Nothing was changed."
)
PROCESS_NOT_PROVEN = (
    "This names a session whose running Claude Code process proves itself (X-Relaybay-Process): relaybay acts "
    "for it only with that proof, which its own hook client and MCP connection send. Nothing was changed."
)


def _socket_pid(socket):
    """The pid in Claude Code's messaging socket path (`…/cc-socks/<pid>.sock`), or None."""
    match = re.search(r"/([0-9]{1,10})\.sock$", socket or "")
    return int(match.group(1)) if match else None


def process_running(link, now):
    """Whether the Claude Code process behind a live link still runs.

    relaybay runs beside the sessions it serves: the process is the one whose messaging socket
    the link's hooks reported (`…/<pid>.sock`), running while that pid lives and the socket is
    there. Without a socket, a link heard from within HEARD_FROM_RECENTLY counts as running."""
    if not link.live:
        return False
    # A pid means something only in relaybay's own machine: elsewhere, what it reports tells.
    pid = _socket_pid(link.native_socket) if machine_of_process(link.process_proof) is None else None
    if pid is not None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # another user's process: it runs
        return os.path.exists(link.native_socket)
    heard = [moment for moment in (link.last_event_at, link.waiter_polled_at) if moment]
    return bool(heard) and now - max(heard) < HEARD_FROM_RECENTLY


class AnotherProcess(Refused):
    """The link is another running Claude Code process's, and the call carries that other
    process's proof: it may not speak for the link. Each surface words this its own way (a hook
    is recorded and answered with nothing, a read is refused with its own code)."""

    code = ErrorCode.PROCESS_NOT_PROVEN

    def __init__(self):
        super().__init__(PROCESS_NOT_PROVEN)


def access_link(link, process, now=None):
    """The link a hook or call carrying `process` (a proof, or '' for none) speaks for
    (docs/rules.md §1.5): every surface — hooks, the wake-up wait, confirmations, MCP tools over
    both transports, reservations, acks and approvals — asks this one rule. Returns `link` when
    it is the caller's: no process proved it, the caller's process did, or its process has
    exited (a restart, /resume). A running process's link never passes to another:
    `AnotherProcess` for another proof of relaybay's machine; a call without a proof is refused
    (process_not_proven): its hook id alone, which sits in the name of its transcript file,
    proves nothing; a process of another machine than the link's (core.auth.machine_of_process)
    is refused as such (other_machine). Reads only."""
    if not link.process_proof or link.process_proof == process or not process_running(link, now or timezone.now()):
        return link
    if not process:
        raise Refused(PROCESS_NOT_PROVEN, code=ErrorCode.PROCESS_NOT_PROVEN)
    if machine_of_process(link.process_proof) != machine_of_process(process):
        raise Refused(OTHER_MACHINE, code=ErrorCode.OTHER_MACHINE)
    raise AnotherProcess


def renames_its_row(link):
    """Whether a write by `link`'s session naming itself by a name no row goes by renames the
    link's row rather than making one: a running session's own hook row (names are labels)."""
    return link is not None and link.live and link.session.kind == Session.Kind.HOOK


def running_holder(row, process, now, *, besides=None):
    """The row's live exact link held by another running Claude Code process than `process`,
    or None: what keeps a name from being taken."""
    for link in row.links.live_exact():
        if link.pk != getattr(besides, "pk", None) and (not process or link.process_proof != process) and process_running(link, now):
            return link
    return None


def folder_name(cwd):
    return os.path.basename((cwd or "").rstrip("/")) or "session"


def generated_native_name(native_name, cwd):
    """Whether a native name is the one Claude Code makes up (`<folder>-<hex>`), not one the
    person gave with --name or /rename."""
    return bool(re.fullmatch(re.escape(folder_name(cwd)) + r"-[0-9a-f]+", native_name or "", flags=re.IGNORECASE))


def folder_derived_name(title, cwd):
    """Whether a row's title is one relaybay gave it from its folder (`web`, `web-2`,
    `web@laptop`, `web@laptop-2`)."""
    return bool(re.fullmatch(re.escape(folder_name(cwd)[:TITLE_MAX]) + r"(@.+)?(-[0-9]+)?", title or "", flags=re.IGNORECASE))


def default_name(cwd, native_name="", machine=None):
    """The name a session started without RELAYBAY_SESSION goes by: the native name the person
    gave it, else its folder's name; on another machine than relaybay's, followed by
    `@<machine>` (`web@laptop`), so two machines' sessions of one folder name never share a
    name and each keeps its own across restarts, whichever starts first."""
    if native_name and native_name.strip() and not generated_native_name(native_name, cwd):
        name = native_name.strip()
    else:
        name = folder_name(cwd)
    where = f"@{machine}" if machine else ""
    return name[: TITLE_MAX - len(where)] + where


def waiter_connected(link, now):
    """Whether the link's wake-up hook waits right now: one registered, and its last long poll
    began recently enough to be held still (RELAYBAY_MAX_WAIT) or to be followed by the next."""
    if not link.waiter or link.waiter_polled_at is None:
        return False
    return now - link.waiter_polled_at <= timedelta(seconds=settings.RELAYBAY_MAX_WAIT) + WAITER_POLL_GRACE
