"""Paths as relaybay keeps them (docs/rules.md §7.2): absolute, with `..` and symlinks resolved,
each tied to the root of the working tree that holds it; and the globs reservations name.

A path is only a name: relaybay never reads a file an agent edits. The working tree is the one
the hook client reported (`relaybay_tree`, relaybay_hook/tree.py) when it holds the file, else
the one relaybay finds with the same function from the file's folder (relaybay runs beside its
sessions), else, outside git, the session's folder when it holds the file, or the file's own.
"""

import functools
import hashlib
import os
import re
from dataclasses import dataclass

from core.errors import ErrorCode, InvalidInput
from core.inputs import check_identifier
from relaybay_hook import tree as working_tree

from sessions_app.models import relative_to

# Linux's PATH_MAX: a longer path names no file a tool could write.
PATH_MAX = 4096
PATTERN_MAX = 500
WILDCARDS = frozenset("*?")
LINE_BREAKS = "\r\n\v\f\x85\u2028\u2029"


def digest(text):
    """A short fixed-size key for an index, whatever the text's length."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def is_under(path, root):
    """Whether `path` lies inside the folder `root` (not the folder itself)."""
    return path != root and path.startswith(root if root == "/" else root + "/")


@dataclass(frozen=True)
class Place:
    """Where a file is: its resolved absolute path, its working tree's root, and that tree's
    repository ('' outside git)."""

    path: str
    root: str
    repository: str

    @functools.cached_property
    def relative(self):
        return relative_to(self.path, self.root)

    @functools.cached_property
    def path_key(self):
        return digest(self.path)

    @functools.cached_property
    def file_key(self):
        """The same for the same relative path in every tree of one repository: another
        worktree's or clone's edit of it may conflict when merged."""
        return digest(f"{self.repository}\n{self.relative}") if self.repository else self.path_key


@dataclass(frozen=True)
class Tree:
    root: str
    repository: str


def reported_tree(value):
    """The hook client's `relaybay_tree` when it is one (an object with an absolute root), else None."""
    if not isinstance(value, dict):
        return None
    root, repository = value.get("root"), value.get("repository", "")
    if not (isinstance(root, str) and isinstance(repository, str) and root.startswith("/")):
        return None
    if len(root) > PATH_MAX or len(repository) > PATH_MAX or working_tree.normal(root) != root:
        return None
    return Tree(root, repository)


def tree_of_folder(folder):
    """The working tree of a session's folder (a reservation's paths are relative to it): the
    one holding it, else the folder itself, outside git."""
    found = working_tree.find_tree(folder)
    return Tree(*found) if found else Tree(folder, "")


def place_of(file_path, cwd, reported=None):
    """Where the file a tool names is (`file_path`, relative to the session's `cwd` unless
    absolute), or None when it names none."""
    if not isinstance(file_path, str) or not file_path.strip() or len(file_path) > PATH_MAX or "\x00" in file_path:
        return None
    base = cwd if isinstance(cwd, str) and cwd.startswith("/") and "\x00" not in cwd else None
    if base is None and not file_path.startswith("/"):
        return None
    path = os.path.realpath(os.path.join(base or "/", file_path))
    if len(path) > PATH_MAX:
        return None
    folder = os.path.dirname(path)
    if reported is not None and is_under(path, reported.root):
        # A tree nested in the reported one (a submodule, a vendored checkout) holds it instead.
        found = working_tree.find_tree(folder, stop=reported.root)
        return Place(path, *(found or (reported.root, reported.repository)))
    found = working_tree.find_tree(folder)
    if found is not None:
        return Place(path, *found)
    own = os.path.realpath(base) if base else ""
    return Place(path, own if own and is_under(path, own) else folder, "")


# --- Globs -------------------------------------------------------------------------------------


def _refused(text, why):
    return InvalidInput(f"The path {text!r} {why}", code=ErrorCode.INVALID_PATH)


def check_pattern(text, root):
    """A reservation's path as relaybay keeps it: a glob relative to the working tree `root`,
    `..` and the symlinks of its folders resolved. Refused: a path that is not one line, leaves
    the tree, names the whole tree (`/`, `.`) or matches every file in it (`**`)."""
    check_identifier(text, what="path", max_length=PATTERN_MAX)
    if any(ch in text for ch in LINE_BREAKS):
        raise _refused(text, "is not one line; give one path or glob per item.")
    absolute = working_tree.normal(text.strip(), root)
    if absolute == root or is_under(root, absolute):
        raise _refused(text, f"names your whole working tree ({root}) or more; reserve the files you will change, like src/app.py or src/*.py.")
    if not is_under(absolute, root):
        raise _refused(text, f"is outside your working tree ({root}); name files in it, relative to its root.")
    segments = relative_to(absolute, root).split("/")
    literal = 0
    while literal < len(segments) and not WILDCARDS & set(segments[literal]):
        literal += 1
    if literal:
        # The folders it names are resolved as an edited file's path is, so a reservation made
        # through a symlink holds the file it points to.
        resolved = os.path.realpath(root + "/" + "/".join(segments[:literal]))
        if not is_under(resolved, root):
            raise _refused(text, f"leads outside your working tree ({root}) through a symlink.")
        segments = relative_to(resolved, root).split("/") + segments[literal:]
    if all(segment in ("*", "**") for segment in segments) and "**" in segments:
        raise _refused(text, "matches every file of your working tree; reserve the files you will change, like src/app.py or src/**.")
    return "/".join(segments)


# A pattern is a list of steps: ("char", c), ONE (a character within a folder name), STAR (any
# within a folder name), ANY (anything, a last `**`), FOLDERS (any folders, a `**/`).
ONE, STAR, ANY, FOLDERS = "one", "star", "any", "folders"


def _steps(pattern):
    segments = pattern.split("/")
    steps = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            steps.append(ANY if last else FOLDERS)
            continue
        for ch in segment:
            steps.append(STAR if ch == "*" else ONE if ch == "?" else ("char", ch))
        if not last:
            steps.append(("char", "/"))
    return steps


@functools.lru_cache(maxsize=1024)
def pattern_regex(pattern):
    """The compiled regular expression of a pattern, matched against a relative path: `*` and
    `?` within a folder name, a `**` folder across folders."""
    parts = []
    for step in _steps(pattern):
        if step == ANY:
            parts.append(".*")
        elif step == FOLDERS:
            parts.append("(?:[^/]*/)*")
        elif step == STAR:
            parts.append("[^/]*")
        elif step == ONE:
            parts.append("[^/]")
        else:
            parts.append(re.escape(step[1]))
    return re.compile("".join(parts), re.DOTALL)


def matches(pattern, relative):
    return pattern_regex(pattern).fullmatch(relative) is not None


NOT_SLASH = ("not", "/")


def _automaton(pattern):
    """The pattern as a nondeterministic automaton: per state, its ε moves and its (class,
    state) moves; a class is ("char", c), NOT_SLASH or ANY. The last state accepts."""
    eps, moves = [], []

    def state():
        eps.append([])
        moves.append([])
        return len(eps) - 1

    current = state()
    for step in _steps(pattern):
        following = state()
        if step == STAR:
            eps[current].append(following)
            moves[current].append((NOT_SLASH, current))
        elif step == ANY:
            eps[current].append(following)
            moves[current].append((ANY, current))
        elif step == FOLDERS:
            within = state()
            eps[current].append(following)
            moves[current].append((("char", "/"), current))
            moves[current].append((NOT_SLASH, within))
            moves[within].append((NOT_SLASH, within))
            moves[within].append((("char", "/"), current))
        else:
            moves[current].append((NOT_SLASH if step == ONE else step, following))
        current = following
    return eps, moves, current


def _meet(a, b):
    """Whether two classes share a character."""
    if a == ANY or b == ANY:
        return True
    if a == NOT_SLASH and b == NOT_SLASH:
        return True
    if a == NOT_SLASH:
        return b[1] != "/"
    if b == NOT_SLASH:
        return a[1] != "/"
    return a == b


# Past this many pairs of states two patterns are taken to overlap: only patterns made to be
# slow get there, and a refusal is the safe answer.
OVERLAP_STATES = 20_000


def overlap(first, second):
    """Whether some path matches both patterns: the two automata run side by side, each step
    on a character both moves accept."""
    eps_a, moves_a, end_a = _automaton(first)
    eps_b, moves_b, end_b = _automaton(second)

    def closure(a, b):
        found, stack = {(a, b)}, [(a, b)]
        while stack:
            x, y = stack.pop()
            for pair in [(n, y) for n in eps_a[x]] + [(x, n) for n in eps_b[y]]:
                if pair not in found:
                    found.add(pair)
                    stack.append(pair)
        return found

    seen = closure(0, 0)
    queue = list(seen)
    while queue:
        x, y = queue.pop()
        if (x, y) == (end_a, end_b):
            return True
        if len(seen) > OVERLAP_STATES:
            return True
        for class_a, next_a in moves_a[x]:
            for class_b, next_b in moves_b[y]:
                if _meet(class_a, class_b):
                    for pair in closure(next_a, next_b):
                        if pair not in seen:
                            seen.add(pair)
                            queue.append(pair)
    return False
