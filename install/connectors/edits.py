"""Changing the person's configuration files so that nothing of theirs can be lost.

`connect` and `disconnect` read a CLI's files, work out each one's new text from its parsed
structure (install/connectors/codex.py, json_settings.py), and hand the changes of one CLI to `apply`:
- a file that is not one relaybay can safely edit (a folder, not UTF-8, read-only, a link to
  something that is not a regular file) is refused with a sentence, before anything is written;
  a symbolic link to a regular file is followed on purpose, and the file it names is changed;
- every new text goes to a temporary file beside its file (same folder: the rename stays on one
  file system), synced, with the file's mode (new files 0600); only when all of them are
  written are they renamed over their files, each rename atomic, so a reader sees the old text
  or the new, never half of one; a file changed by someone else since it was read (the CLI
  itself) stops the whole change; a failure on the way (a full disk) removes the temporary
  files and puts back what was renamed already: all or nothing, across the files of one CLI;
- the first change of a file keeps it, without relaybay's parts, as `<name>.relaybay-backup`,
  once: a later connect never overwrites it, and it never holds the token.
"""

import difflib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from install.connectors import ConnectError

TOKEN_SHOWN = "<the agents' token>"
NEW_FILE_MODE = 0o600


@dataclass
class Edit:
    path: Path  # the file as the CLI names it
    before: str | None  # its text as read (None: no file)
    after: str | None  # the text wanted (None: no file)
    what: str  # what changes, as the person reads it
    clean: str | None = None  # the file without relaybay's parts: what a first backup keeps


def backup_path(path):
    return path.with_name(path.name + ".relaybay-backup")


def refuse(path, why):
    raise ConnectError(f"{path} {why}. Nothing was changed.")


def real_path(path):
    """The file to read and write for `path`: a symbolic link is followed on purpose."""
    path = Path(path)
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def read_text(path):
    """The file's text, or None when there is none; ConnectError when it is not a file relaybay
    can safely edit."""
    real = real_path(path)
    try:
        status = real.stat()
    except FileNotFoundError:
        if Path(path).is_symlink():
            refuse(path, f"is a symbolic link to {real}, which does not exist: make it a file, or take the link out, then run this again")
        return None
    except OSError as error:
        refuse(path, f"cannot be read ({error.strerror})")
    if stat.S_ISDIR(status.st_mode):
        refuse(path, "is a folder, where the CLI reads a file: move it aside, then run this again")
    if not stat.S_ISREG(status.st_mode):
        refuse(path, "is not a regular file")
    try:
        data = real.read_bytes()
    except OSError as error:
        refuse(path, f"cannot be read ({error.strerror})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        refuse(path, f"is not UTF-8 text (byte {error.start}): the CLI cannot read it either; fix it, then run this again")


def _writable(edit):
    real = real_path(edit.path)
    folder = real.parent
    if edit.before is not None and not real.stat().st_mode & stat.S_IWUSR:
        refuse(edit.path, f"is read-only: relaybay leaves it as it is. Make it writable (chmod u+w {real}), then run this again")
    probe = folder
    while not probe.exists():
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        refuse(edit.path, f"cannot be changed: {probe} is not writable by you")


def show(target, edit):
    target.say(f"  would change {edit.path}: {edit.what}")
    diff = difflib.unified_diff(
        (edit.before or "").splitlines(), (edit.after or "").splitlines(), str(edit.path), f"{edit.path} (new)", lineterm=""
    )
    for line in diff:
        target.say("    " + line.replace(target.token, TOKEN_SHOWN))


def _temporary(real, text, mode, kind="new"):
    """`text` in a new file beside `real`, synced, with `mode`: its path."""
    real.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = real.with_name(f".{real.name}.relaybay-{kind}-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        os.fchmod(fd, mode)
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return tmp


def _sync_folder(folder):
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def apply(target, edits):
    """Make each Edit's file hold its `after`, all or nothing; say what changed. Whether
    anything changed."""
    edits = [edit for edit in edits if edit.after != edit.before]
    if not edits:
        return False
    if target.dry_run:
        for edit in edits:
            show(target, edit)
        return True
    for edit in edits:
        _writable(edit)
    staged = []  # (edit, real path, temporary file or None for a removal, mode)
    backups = []  # (backup path, temporary file)
    try:
        for edit in edits:
            real = real_path(edit.path)
            mode = stat.S_IMODE(real.stat().st_mode) if edit.before is not None else NEW_FILE_MODE
            staged.append((edit, real, None if edit.after is None else _temporary(real, edit.after, mode), mode))
            backup = backup_path(real)
            if edit.clean is not None and not os.path.lexists(backup):
                backups.append((backup, _temporary(real, edit.clean, NEW_FILE_MODE, "backup")))
    except OSError as error:
        _discard(staged, backups)
        raise ConnectError(
            f"relaybay could not write beside {edit.path} ({error.strerror or error}): is the disk full? Nothing was changed."
        ) from None
    for edit, real, _, _ in staged:
        try:
            unchanged = read_text(edit.path) == edit.before
        except ConnectError:
            unchanged = False
        if not unchanged:
            _discard(staged, backups)
            raise ConnectError(
                f"{edit.path} changed while relaybay was editing it (the CLI writes it too): run this again. Nothing was changed."
            )
    done = []
    try:
        for backup, tmp in backups:
            os.replace(tmp, backup)
        for edit, real, tmp, mode in staged:
            if tmp is None:
                real.unlink()
            else:
                os.replace(tmp, real)
            done.append((edit, real, mode))
    except OSError as error:
        _discard(staged, [])
        _put_back(done)
        raise ConnectError(f"relaybay could not change {edit.path} ({error.strerror or error}): nothing was changed.") from None
    for folder in {real.parent for _, real, _, _ in staged}:
        _sync_folder(folder)
    for edit, real, _, _ in staged:
        kept = backup_path(real)
        note = f" (the file without relaybay: {kept})" if os.path.lexists(kept) else ""
        link = f" (through the link {edit.path})" if real != Path(edit.path) else ""
        verb = "removed" if edit.after is None else "changed"
        target.say(f"  {verb} {real}{link}: {edit.what}{note}")
    return True


def _discard(staged, backups):
    for *_, tmp, _ in staged:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    for _, tmp in backups:
        tmp.unlink(missing_ok=True)


def _put_back(done):
    for edit, real, mode in reversed(done):
        try:
            if edit.before is None:
                real.unlink(missing_ok=True)
            else:
                os.replace(_temporary(real, edit.before, mode, "old"), real)
        except OSError:
            pass


def forget_token(target, paths):
    """Backups an earlier relaybay made with the token in them are removed (the person's own file
    is what they kept): no file relaybay wrote under HOME keeps the token."""
    for path in paths:
        backup = backup_path(real_path(path))
        try:
            holds = target.token and target.token in backup.read_text(errors="replace")
        except OSError:
            continue
        if holds and not target.dry_run:
            backup.unlink()
            target.say(f"  removed {backup}: an earlier relaybay's copy, with the agents' token in it")
