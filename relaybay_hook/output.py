"""What the hook prints: the answer on stdout, its own troubles on stderr. Never raises."""
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
