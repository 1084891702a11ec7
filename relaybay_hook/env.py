"""The hook client's settings, read from the environment without importing `os`."""
try:  # the C module behind `os`; importing `os` itself costs ~1 ms
    import posix as _px

    def getenv(name, default=None):
        v = _px.environ.get(name.encode())
        if v is None:
            return default
        return v.decode('utf-8', 'surrogateescape')

    stat = _px.stat
except ImportError:  # pragma: no cover - non-POSIX platforms
    import os as _px

    def getenv(name, default=None):
        return _px.environ.get(name, default)

    stat = _px.stat

DEFAULT_URL = 'http://127.0.0.1:8000'
DEFAULT_SPOOL = '~/.relaybay/spool.jsonl'


def float_env(name, default):
    try:
        v = float(getenv(name) or default)
    except ValueError:
        return float(default)
    return v if v == v and abs(v) != float('inf') else float(default)  # NaN, inf -> default


def clean(value):
    """One header-safe line."""
    return str(value).replace('\r', '').replace('\n', '').strip()


def base_url():
    return getenv('RELAYBAY_URL') or DEFAULT_URL


def token():
    return getenv('RELAYBAY_TOKEN') or _token_from_file()


def _token_from_file():
    # claude_config names a file instead of writing the token into the hook command: Claude
    # Code repeats a wake-up hook's command line to the model.
    path = getenv('RELAYBAY_TOKEN_FILE')
    if not path:
        return None
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except OSError:
        return None


def spool_path():
    path = getenv('RELAYBAY_SPOOL') or DEFAULT_SPOOL
    if path.startswith('~'):
        home = getenv('HOME')
        if home and (path == '~' or path.startswith('~/')):
            path = home.rstrip('/') + path[1:]
        else:
            import os.path
            path = os.path.expanduser(path)
    return path


def session_name():
    return getenv('RELAYBAY_SESSION')
