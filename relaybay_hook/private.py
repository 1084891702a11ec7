"""The client's own files (the spool, what was set aside, the printed records): folders 0700 and
files 0600 whichever is made first, no symbolic link followed, nothing read or written that
belongs to another account. Imported by the writes only (it imports `os`).
"""
import os
import stat
import time

FOLDER_MODE = 0o700
FILE_MODE = 0o600
NOFOLLOW = getattr(os, 'O_NOFOLLOW', 0)
CLOEXEC = getattr(os, 'O_CLOEXEC', 0)


class Unusable(Exception):
    """A file or folder of the client's that is not one it may use: its sentence says why."""


def problem(st):
    """Why a file with this lstat is not one the client may read or write, or None."""
    if stat.S_ISLNK(st.st_mode):
        return 'is a symbolic link'
    if stat.S_ISDIR(st.st_mode):
        return 'is a directory'
    if not stat.S_ISREG(st.st_mode):
        return 'is not a regular file'
    if st.st_uid != os.getuid():
        return 'belongs to another account (uid %d)' % st.st_uid
    return None


def folder(path, own=True):
    """Make `path` and any missing folder above it, each 0700 (os.makedirs gives the folders
    above the last the umask's mode). `own`: the folder is one the client writes in, so one that
    is another account's, or a symbolic link, is refused."""
    path = os.path.abspath(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if parent != path:
            folder(parent, own=False)
        try:
            os.mkdir(path, FOLDER_MODE)
        except FileExistsError:
            pass
        st = os.lstat(path)
    if not own:
        return path
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise Unusable('%s is not a folder' % path)
    if st.st_uid != os.getuid():
        raise Unusable('%s belongs to another account (uid %d)' % (path, st.st_uid))
    return path


def open_file(path, flags):
    """os.open of one of the client's files (0600 when made), refusing a symbolic link or a
    file that is not this account's regular file."""
    fd = os.open(path, flags | NOFOLLOW | CLOEXEC, FILE_MODE)
    try:
        why = problem(os.fstat(fd))
    except OSError:
        os.close(fd)
        raise
    if why:
        os.close(fd)
        raise Unusable('%s %s' % (path, why))
    return fd


def read(path, limit):
    """The file's bytes, at most `limit` of them; b'' when there is none."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return b''
    try:
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b''.join(chunks)
    finally:
        os.close(fd)


def append(path, data):
    """One O_APPEND write (it lands whole against other appenders)."""
    folder(os.path.dirname(os.path.abspath(path)))
    fd = open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def replace(path, data):
    """Replace the file with `data`: a new 0600 file beside it, synced, renamed over it."""
    tmp = '%s.tmp.%d' % (path, os.getpid())
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, FILE_MODE)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def stamp():
    return time.strftime('%Y%m%dT%H%M%S', time.gmtime())


def set_aside(path):
    """Move the file (whatever it is: a folder, a link, another account's) out of the way, as
    `<path>.aside-<time>`, and return that name."""
    aside = '%s.aside-%s' % (path, stamp())
    n = 1
    while os.path.lexists(aside):
        n += 1
        aside = '%s.aside-%s-%d' % (path, stamp(), n)
    os.rename(path, aside)
    return aside


def prune(folder_path, prefix, older_than):
    """Remove the files in `folder_path` whose name starts with `prefix`, untouched for longer
    than `older_than` seconds (the client's own leftovers; never a folder or a link's target)."""
    cutoff = time.time() - older_than
    try:
        entries = list(os.scandir(folder_path))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and st.st_mtime < cutoff:
                os.unlink(entry.path)
        except OSError:
            pass
