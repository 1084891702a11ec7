"""relaybay's data folder is its owner's alone: the folder and every folder in it 0700, every file
0600, whatever the umask.

The folder holds the API token, the secret key, the owner's password, Claude Code configs that
carry the token and the SQLite database with every message. `secure_data_folder` runs as every
relaybay process starts (core's AppConfig.ready: the server, `make run`'s migrate and
setup_owner, every command), before anything opens the database, so an install made under a
looser umask, or by a version that wrote files 0644, is private again at its next start. The
SQLite database is created empty and 0600 when it does not exist yet, because SQLite gives the
-wal and -shm files it makes later the mode of the database file. Files written afterwards go
through `write_private`.
"""

import os
import stat
from pathlib import Path

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


class NotPrivate(RuntimeError):
    """A file or folder in the data folder cannot be made its owner's alone."""


def secure_data_folder(folder, database=None):
    """Make `folder` and all it holds private; create the SQLite `database` empty and private if
    it does not exist yet. Symbolic links are left alone, and so is what they point to."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _make_private(folder, PRIVATE_FOLDER)
    for root, folders, files in os.walk(folder):
        for name in folders:
            _make_private(Path(root, name), PRIVATE_FOLDER)
        for name in files:
            _make_private(Path(root, name), PRIVATE_FILE)
    if database is not None:
        _create_private(Path(database))


def write_private(path, text):
    """Write `text` to `path` readable by its owner only, also when the file existed with
    another mode (opening with a mode sets it only for a new file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    except OSError:
        os.close(fd)
        raise
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def _make_private(path, mode):
    try:
        status = path.lstat()
        if stat.S_ISLNK(status.st_mode) or stat.S_IMODE(status.st_mode) == mode:
            return
        path.chmod(mode)
    except FileNotFoundError:
        return  # gone meanwhile: a -shm file another process's last connection removed
    except OSError as error:
        raise NotPrivate(f"relaybay cannot make {path} readable by its owner only ({error}); its data folder must belong to the user it runs as.") from None


def _create_private(path):
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except (FileExistsError, FileNotFoundError):
        pass  # there already, or in a folder that is not there: SQLite says so when it opens it
