"""The working tree a folder belongs to, found without git (docs/rules.md §7.2).

A checkout's root holds a `.git` folder; a linked worktree's (`git worktree add`) and a
submodule's root hold a `.git` file naming its git dir (`gitdir: …`), where a `commondir` file
names the repository's shared git dir. Worktrees of one repository share that dir, clones of one
remote share their `origin` URL: `repository_key` makes one name of either, so relaybay tells
two trees of one repository (the same relative path may conflict when merged) from two
repositories. A few stat calls and two small reads, no git process: the hook client runs it for
every PreToolUse, relaybay for a file no report covers. Stdlib only and without `os` (the hook
client's hot path, docs/hook-client.md); nothing is cached beyond one call.
"""
try:
    import posix as _px
except ImportError:  # pragma: no cover - non-POSIX platforms
    import os as _px

getcwd = _px.getcwd
_TYPE = 0o170000
_DIR = 0o040000
_FILE = 0o100000
# A .git file, a commondir file and a config are a few hundred bytes; a larger one is not git's.
_READ_MAX = 65536


def normal(path, base='/'):
    """`path` made absolute against the folder `base`, with `.`, `..` and repeated slashes taken
    out (symlinks are the caller's to resolve)."""
    if not path.startswith('/'):
        path = base.rstrip('/') + '/' + path
    parts = []
    for part in path.split('/'):
        if part == '..':
            if parts:
                parts.pop()
        elif part and part != '.':
            parts.append(part)
    return '/' + '/'.join(parts)


def _kind(path):
    try:
        return _px.stat(path).st_mode & _TYPE
    except (OSError, ValueError):
        return None


def _read(path):
    """A small regular file's text ('' for anything else: a FIFO named .git must not block)."""
    if _kind(path) != _FILE:
        return ''
    try:
        with open(path, 'rb') as f:
            return f.read(_READ_MAX).decode('utf-8', 'replace')
    except (OSError, ValueError):
        return ''


def _common_dir(dot_git, folder):
    """The repository's shared git dir for a root whose `.git` is `dot_git`, or None."""
    kind = _kind(dot_git)
    if kind == _DIR:
        git_dir = dot_git
    elif kind == _FILE:
        first = _read(dot_git).split('\n', 1)[0].strip()
        if not first.startswith('gitdir:'):
            return None
        git_dir = normal(first[len('gitdir:'):].strip(), folder)
    else:
        return None
    common = _read(git_dir + '/commondir').split('\n', 1)[0].strip()
    return normal(common, git_dir) if common else git_dir


def find_tree(start, stop=None):
    """(root, repository key) of the working tree holding the folder `start`: the nearest folder
    from it up holding `.git`. None when there is none up to `/`, or up to `stop` (a folder
    known to be a tree's root, not looked at again)."""
    folder = normal(start)
    while folder != stop:
        common = _common_dir(folder.rstrip('/') + '/.git', folder)
        if common is not None:
            return folder, repository_key(common)
        if folder == '/':
            return None
        folder = folder.rpartition('/')[0] or '/'
    return None


def origin_url(common_dir):
    """The `url` of `[remote "origin"]` in the repository's config, or ''."""
    section = ''
    for line in _read(common_dir + '/config').splitlines():
        line = line.strip()
        if line.startswith('['):
            section = ' '.join(line.strip('[]').split()).lower()
        elif section == 'remote "origin"':
            name, sep, value = line.partition('=')
            if sep and name.strip().lower() == 'url':
                return value.strip().strip('"')
    return ''


def _without_git_suffix(path):
    path = path.rstrip('/')
    if path.endswith('/.git'):
        return path[:-5] or '/'
    return path[:-4] if path.endswith('.git') and len(path) > 4 else path


def repository_key(common_dir):
    """One name for every tree of a repository: its `origin` as host/path without user,
    password or `.git` (clones of one remote), else the folder of its shared git dir
    (worktrees of one repository, and a clone whose origin is that folder)."""
    url = origin_url(common_dir)
    if not url:
        return _without_git_suffix(common_dir)
    if url.startswith('file://'):
        url = url[len('file://'):]
    if url.startswith(('/', '.')):
        return _without_git_suffix(normal(url, common_dir.rpartition('/')[0] or '/'))
    scheme, sep, rest = url.partition('://')
    if sep:
        host, _, path = rest.partition('/')
    else:  # scp-like: [user@]host:path
        host, _, path = url.partition(':')
    host = host.rpartition('@')[2].lower()
    return _without_git_suffix(host + '/' + path.strip('/'))


def _json_safe(text):
    """Whether `text` goes into JSON between quotes as it is (the client writes no escapes)."""
    return all(ch >= ' ' and ch not in '"\\' and not '\ud800' <= ch <= '\udfff' for ch in text)


def report(folder):
    """The hook client's `relaybay_tree` for a hook run in `folder`, as JSON bytes, or None
    (outside any working tree, or a name the client would have to escape: relaybay finds the
    tree itself then)."""
    found = find_tree(folder)
    if found is None:
        return None
    root, repository = found
    if not (_json_safe(folder) and _json_safe(root) and _json_safe(repository)):
        return None
    text = '{"cwd":"%s","root":"%s","repository":"%s"}' % (folder, root, repository)
    return text.encode('utf-8')
