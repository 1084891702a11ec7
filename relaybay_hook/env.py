"""The hook client's settings: the environment first, then the configuration file.

`claude_config` writes the file (NAME=value lines, the names below) and names it in the
session's environment as RELAYBAY_HOOK_CONFIG, so hook command lines hold no configuration:
Claude Code repeats a wake-up hook's command line to the model. Read without importing `os`.
"""
try:  # the C module behind `os`; importing `os` itself costs ~1 ms
    import posix as _px

    def getenv(name, default=None):
        v = _px.environ.get(name.encode())
        if v is None:
            return default
        return v.decode('utf-8', 'surrogateescape')

    stat, lstat, getuid, unlink = _px.stat, _px.lstat, _px.getuid, _px.unlink
except ImportError:  # pragma: no cover - non-POSIX platforms
    import os as _px

    def getenv(name, default=None):
        return _px.environ.get(name, default)

    stat, lstat, getuid, unlink = _px.stat, _px.lstat, _px.getuid, _px.unlink


def open_nofollow(path):
    """A read-only fd of one of the client's own files: not through a symbolic link."""
    return _px.open(path, _px.O_RDONLY | getattr(_px, 'O_NOFOLLOW', 0))


def read_fd(fd, limit):
    return _px.read(fd, limit)


def close_fd(fd):
    _px.close(fd)

DEFAULT_URL = 'http://127.0.0.1:8000'
DEFAULT_SPOOL = '~/.relaybay/spool.jsonl'
SPOOL_MAX_BYTES = 16 * 1024 * 1024  # a spool past this is moved aside whole (spool.py)
CONFIG_ENV = 'RELAYBAY_HOOK_CONFIG'

_file_settings = None


def _read_file_settings():
    """NAME=value lines of the file RELAYBAY_HOOK_CONFIG names ({} when unset or unreadable)."""
    found = {}
    path = getenv(CONFIG_ENV)
    if not path:
        return found
    try:
        with open(path, 'rb') as f:
            text = f.read().decode('utf-8', 'surrogateescape')
    except OSError:
        return found
    for line in text.splitlines():
        name, sep, value = line.partition('=')
        name = name.strip()
        if sep and name and not name.startswith('#'):
            found[name] = value.strip()
    return found


def setting(name, default=None):
    """The environment's value of `name`, else the configuration file's, else `default`."""
    global _file_settings
    value = getenv(name)
    if value:
        return value
    if _file_settings is None:
        _file_settings = _read_file_settings()
    return _file_settings.get(name) or default


def flag(name):
    return (setting(name) or '').strip().lower() in ('1', 'true', 'yes', 'on')


def float_env(name, default):
    try:
        v = float(setting(name) or default)
    except ValueError:
        return float(default)
    return v if v == v and abs(v) != float('inf') else float(default)  # NaN, inf -> default


def clean(value):
    """One header-safe line."""
    return str(value).replace('\r', '').replace('\n', '').strip()


# The values `manage.py connect claude` gives the Claude Code plugin (its userConfig), which
# Claude Code hands to the plugin's hooks as CLAUDE_PLUGIN_OPTION_<NAME>.
PLUGIN_URL = 'CLAUDE_PLUGIN_OPTION_URL'
PLUGIN_TOKEN = 'CLAUDE_PLUGIN_OPTION_TOKEN'


def base_url():
    return setting('RELAYBAY_URL') or getenv(PLUGIN_URL) or DEFAULT_URL


def token():
    return setting('RELAYBAY_TOKEN') or getenv(PLUGIN_TOKEN) or _token_from_file()


def reconnect_hint():
    """What the person runs to give this session's hooks relaybay's current address and token."""
    if getenv(PLUGIN_URL):
        return 'Run `manage.py connect claude` again'
    return 'Print a new config with `manage.py claude_config`'


def _token_from_file():
    path = setting('RELAYBAY_TOKEN_FILE')
    if not path:
        return None
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except OSError:
        return None


def spool_path():
    path = setting('RELAYBAY_SPOOL') or DEFAULT_SPOOL
    if path.startswith('~'):
        home = getenv('HOME')
        if home and (path == '~' or path.startswith('~/')):
            path = home.rstrip('/') + path[1:]
        else:
            import os.path
            path = os.path.expanduser(path)
    return path


def session_name():
    return setting('RELAYBAY_SESSION')
