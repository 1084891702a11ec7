"""Event mode and the entry point: post one hook event, print relaybay's answer."""
import sys

from relaybay_hook import env, printed
from relaybay_hook.conn import HOOKS_PATH, CertificateRefused, NotRelaybay, Unreachable, error_text, http_request, unavailable
from relaybay_hook.output import err, exit_now, out
from relaybay_hook.proof import hook_headers


def with_session_name(payload, name):
    """Add relaybay_session to a SessionStart payload; anything else passes unchanged."""
    import json
    try:
        obj = json.loads(payload.decode('utf-8'))
    except ValueError:
        return payload
    if not isinstance(obj, dict) or obj.get('hook_event_name') != 'SessionStart':
        return payload
    obj['relaybay_session'] = name
    return json.dumps(obj, ensure_ascii=False).encode('utf-8')


def native_names(socket):
    """What Claude Code says of this process for its native messaging (relaybay resolves those
    names, docs/rules.md §4.9): a JSON object of its messaging socket (whose file name is the claude
    process id) and its session file `<config dir>/sessions/<pid>.json` (native name, status,
    tmux pane), spliced in as it is, since the hot path parses no JSON. None when the socket
    is not one Claude Code makes."""
    pid = socket.rpartition('/')[2]
    if not (pid.endswith('.sock') and pid[:-5].isdigit()) or '"' in socket or '\\' in socket:
        return None
    if any(ord(ch) < 32 for ch in socket):
        return None
    base = env.getenv('CLAUDE_CONFIG_DIR') or (env.getenv('HOME') or '') + '/.claude'
    try:
        with open('%s/sessions/%s.json' % (base, pid[:-5]), 'rb') as f:
            data = f.read(65536).strip()
    except OSError:
        data = b''
    if not (data[:1] == b'{' and data[-1:] == b'}'):
        data = b'null'  # missing, or being rewritten: the next hook reads it again
    return b'{"socket":"' + socket.encode('utf-8', 'surrogateescape') + b'","session":' + data + b'}'


def with_native_names(payload, native):
    """Add relaybay_native to a payload object; anything else passes unchanged."""
    return with_field(payload, b'relaybay_native', native)


def with_field(payload, name, value):
    """Add the field `name` (JSON `value`) to a payload object; anything else passes unchanged."""
    body = payload.rstrip()
    if body[:1] != b'{' or body[-1:] != b'}' or body[:-1].rstrip()[-1:] == b'{':
        return payload
    return body[:-1] + b',"' + name + b'":' + value + b'}'


def with_tree(payload):
    """Add relaybay_tree to the payload of a tool call before it runs (a `tool_input` and no
    `tool_response` yet, whatever the CLI calls the event): the working tree the hook runs in,
    its root and repository (relaybay_hook/tree.py), which relaybay ties the file an edit
    names to."""
    if b'"tool_input"' not in payload or b'"tool_response"' in payload:
        return payload
    from relaybay_hook import tree
    try:
        report = tree.report(tree.getcwd())
    except OSError:  # the folder is gone
        return payload
    return with_field(payload, b'relaybay_tree', report) if report else payload


NO_SPOOL, SPOOL_PENDING, SPOOL_TROUBLE = 0, 1, 2


def _spool_state(path):
    """Whether the spool holds events to replay, or is something the client must move aside
    first (not this account's regular file, or past its bound): one lstat, no symlink followed."""
    try:
        st = env.lstat(path)
    except OSError:
        return NO_SPOOL
    if (st.st_mode & 0o170000) != 0o100000 or st.st_uid != env.getuid() or st.st_size > env.SPOOL_MAX_BYTES:
        return SPOOL_TROUBLE
    return SPOOL_PENDING if st.st_size > 0 else NO_SPOOL


NOTICE_MAX = 2000  # characters of notices one call takes to relaybay


def _told(notices, spool_path):
    """The client's notices go to stderr as well as into the answer (systemMessage), and to
    the board: kept in <spool>.notices until a call relaybay answers carries them
    (X-Relaybay-Notice), this call's own post or the next."""
    for notice in notices:
        err(notice)
    if notices:
        try:
            from relaybay_hook import private
            private.append(spool_path + '.notices', ''.join(' '.join(n.split()) + '\n' for n in notices).encode('utf-8'))
        except Exception as exc:
            err('could not keep the notice for the board: %s' % exc)
    return notices


def _notice_headers(spool_path):
    """The notices kept for the board, as a header (one open on the hot path when there are none)."""
    try:
        fd = env.open_nofollow(spool_path + '.notices')
    except OSError:
        return ()
    try:
        data = env.read_fd(fd, 4 * NOTICE_MAX)
    finally:
        env.close_fd(fd)
    text = ' | '.join(line for line in data.decode('utf-8', 'replace').splitlines() if line.strip())
    text = text.encode('ascii', 'backslashreplace').decode('ascii')[:NOTICE_MAX]
    return ('X-Relaybay-Notice: ' + env.clean(text),) if text else ()


def _notices_delivered(spool_path, sent):
    if sent:
        try:
            env.unlink(spool_path + '.notices')
        except OSError:
            pass


def _spool_trouble(path):
    from relaybay_hook import spool
    try:
        why = spool.problem(path)
        return [spool.set_aside_spool(path, why)] if why else []
    except Exception as exc:
        return ['relaybay\'s spool %s cannot be checked (%s): events are sent as usual.' % (path, exc)]


def _keep(path, payload):
    """Spool the event; the sentences for the person (never raises)."""
    from relaybay_hook import spool
    try:
        notice = spool.spool_event(path, payload)
    except Exception as exc:  # a full disk, a folder of another account...
        return ['relaybay is not reachable and this event could not be kept in %s: %s' % (path, exc)]
    return [notice] if notice else []


def _replay(path, timeout):
    """Replay the spool after the call's own event went through; the sentences for the person."""
    from relaybay_hook import spool
    try:
        set_aside = spool.replay_spool(path, timeout)
    except Exception as exc:
        return ['relaybay could not replay the events kept in %s: %s' % (path, exc)]
    return [spool.set_aside_notice(path, set_aside)] if set_aside else []


def _impostor_notice(path, reason):
    """Said once while it lasts (a marker beside the spool, removed by the next call relaybay
    answers): another account's program answers at relaybay's address."""
    marker = path + '.not-relaybay'
    try:
        env.lstat(marker)
        return []
    except OSError:
        pass
    try:
        from relaybay_hook import private
        private.append(marker, b'')
    except Exception:
        pass
    return ['relaybay is not what answers at %s: %s. Nothing was sent to it and nothing it says reaches '
            'this session; events are kept in %s until relaybay answers there.' % (env.base_url(), reason, path)]


def _forget_impostor(path):
    try:
        env.unlink(path + '.not-relaybay')
    except OSError:
        pass


def _is_session_start(payload):
    if b'SessionStart' not in payload:
        return False
    import json
    try:
        obj = json.loads(payload.decode('utf-8'))
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get('hook_event_name') == 'SessionStart'


def _with_system_message(body, notices):
    """relaybay's answer (a JSON object, or nothing) with the client's notices added as
    `systemMessage`, which Claude Code shows to the user."""
    import json
    obj = {}
    if body and body.strip():
        try:
            obj = json.loads(body.decode('utf-8'))
        except ValueError:
            obj = {}
    if not isinstance(obj, dict):
        obj = {}
    text = '\n'.join(notices)
    if isinstance(obj.get('systemMessage'), str) and obj['systemMessage'].strip():
        text = obj['systemMessage'] + '\n' + text
    obj['systemMessage'] = text
    return json.dumps(obj, ensure_ascii=False).encode('utf-8')


def _answer(body, notices):
    if notices:
        out(_with_system_message(body, notices))
    elif body:
        out(body)
    return 0


def engine_of(args):
    """The CLI named by `--engine NAME` (the hook commands `manage.py connect NAME` write; Claude
    Code's name none), or None. Which names relaybay knows is relaybay's to say (engines/): the
    client passes the name on, and a name relaybay does not know is refused with the list."""
    for i, arg in enumerate(args):
        if arg == '--engine' and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith('--engine='):
            return arg[9:]
    return None


def is_name(engine):
    """An engine's name: ASCII letters, digits and hyphens."""
    return engine.isascii() and engine.replace('-', 'a').isalnum()


def event_mode(engine=None):
    payload = sys.stdin.buffer.read()
    if not payload.strip():
        return 0
    if engine is not None and is_name(engine):
        payload = with_field(payload, b'relaybay_engine', b'"' + engine.encode() + b'"')
    elif engine is not None:
        err('--engine %r is not an engine\'s name: the event is posted as Claude Code\'s' % engine)
    name = env.session_name()
    if name and b'SessionStart' in payload:
        payload = with_session_name(payload, name)
    socket = env.getenv('CLAUDE_CODE_MESSAGING_SOCKET')
    native = native_names(socket) if socket else None
    if native:
        payload = with_native_names(payload, native)
    payload = with_tree(payload)
    timeout = max(env.float_env('RELAYBAY_TIMEOUT', 10), 0.1)
    if b'"PermissionRequest"' in payload:
        from relaybay_hook import approval
        if approval.is_permission_request(payload):
            # Held open while the request waits on the owner (approval.py).
            return approval.hold(payload, with_field, timeout)
    spool_path = env.spool_path()
    notices = []
    spool_state = _spool_state(spool_path)
    if spool_state == SPOOL_TROUBLE:
        notices += _told(_spool_trouble(spool_path), spool_path)
    # What this process printed before and relaybay has not taken yet goes with this call.
    printed_file = printed.file_for(spool_path, payload)
    entries = printed.load(printed_file)
    answer_headers = {}
    for_board = _notice_headers(spool_path)
    # The call's own event goes first, whatever the spool holds.
    try:
        status, body = http_request(
            'POST', HOOKS_PATH, payload, hook_headers() + printed.report_headers(entries) + for_board, timeout,
            answer_headers=answer_headers)
    except NotRelaybay as exc:
        err(str(exc))
        notices += _told(_impostor_notice(spool_path, str(exc)), spool_path)
        return _answer(None, notices + _told(_keep(spool_path, payload), spool_path))
    except CertificateRefused as exc:
        # Said at every event, in the terminal: it does not pass by itself, as an outage does.
        notices += _told([str(exc)], spool_path)
        return _answer(None, notices + _told(_keep(spool_path, payload), spool_path))
    except Unreachable:
        status, body = None, None
    if status is None or unavailable(status):
        notices += _told(_keep(spool_path, payload), spool_path)
        if _is_session_start(payload):
            notices.append(
                'relaybay is not reachable at %s: this session\'s events are kept in %s and sent when '
                'it is back; no comments or messages reach this session until then.' % (env.base_url(), spool_path))
        return _answer(None, notices)
    if 200 <= status < 300:
        _forget_impostor(spool_path)
        _notices_delivered(spool_path, for_board)
        if spool_state == SPOOL_PENDING:
            notices += _told(_replay(spool_path, timeout), spool_path)
        if body is None:
            err('%d answer cut short' % status)
            body = None
        elif body.strip() and body.lstrip()[:1] != b'{':
            err('%d answer is not a JSON object' % status)
            body = None
        carried = printed.handles(answer_headers.get('x-relaybay-items')) if body else []
        taken = printed.handles(answer_headers.get('x-relaybay-confirmed'))
        if not carried:
            _answer(body, notices)
            printed.record(printed_file, entries, taken=taken)
            return 0

        def show(repeated):
            if repeated:
                # Offered again while this process's report was on its way: relaybay offers
                # the answer's other items again, and takes the repeated ones with the next report.
                err('an answer repeats %s, printed already: not printed' % ' '.join(repeated))
            _answer(None if repeated else body, notices)

        # Recorded once the answer is out, and the process ends right after: a client killed
        # before the record printed nothing Claude Code keeps, and relaybay offers the items again.
        printed.show_once(printed_file, carried, taken, show)
        exit_now(0)
    err(error_text(status, body))
    if status in (401, 403) and _is_session_start(payload):
        notices.append(
            'relaybay refused this session\'s hooks (%s): its token does not match relaybay\'s. '
            '%s and restart the session.' % (error_text(status, body), _reconnect_hint(engine)))
    return _answer(None, notices)


def _reconnect_hint(engine):
    if engine is not None:
        return 'Run `manage.py connect %s` again' % engine
    return env.reconnect_hint()


def stands_aside(args):
    """A plugin's hook (`--plugin`) in a session whose settings connect it already (their `env`
    names RELAYBAY_HOOK_CONFIG, as every `claude_config` file does): those hooks report this
    session, and two reports of each event would deliver twice."""
    return '--plugin' in args and bool(env.getenv(env.CONFIG_ENV))


def main(argv):
    args = argv[1:]
    try:
        if stands_aside(args):
            code = 0
        elif args[:1] == ['wait']:
            from relaybay_hook import wait
            code = wait.wait_mode(engine_of(args), args)
        else:
            code = event_mode(engine_of(args))
    except Exception as exc:
        err('internal error: %s: %s' % (exc.__class__.__name__, exc))
        code = 0
    # The answer is out and what it carried recorded (printed.py): end the process now, not
    # after the interpreter's teardown (about 1 ms), so that nothing lies between recording
    # an item and the exit whose output Claude Code keeps.
    exit_now(code)
