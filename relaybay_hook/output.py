"""What the hook prints: the answer on stdout, its own troubles on stderr, and its end. Never raises."""
import sys


def err(message):
    try:
        sys.stderr.buffer.write(('relaybay: %s\n' % message).encode('utf-8', 'replace'))
        sys.stderr.flush()
    except Exception:
        pass


def out(data):
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except Exception:
        pass


def exit_now(code):
    """End the process at once with `code`, its output flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    try:
        import posix
    except ImportError:  # pragma: no cover - non-POSIX platforms
        sys.exit(code)
    posix._exit(code)
