"""Connecting a coding-agent CLI to relaybay for every session its user starts.

`manage.py connect ENGINE` and `manage.py disconnect ENGINE` (install/management/commands)
check what every engine needs — relaybay answering at its address with the agents' token —
before anything is written, then hand over to the engine's module here. Each module offers:

    connect(target) -> None     install or update relaybay in the CLI's configuration
    disconnect(target) -> None  remove what connect added, and nothing else

and raises ConnectError with a sentence that says what to do when it cannot. `target` is a
Target: where relaybay is, the CLI to drive, whether to only print what would be done, and
where to say what was done.
"""

from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Callable

ENGINES = {
    "claude": "install.connectors.claude",
    "codex": "install.connectors.codex",
    "gemini": "install.connectors.gemini",
}


class ConnectError(Exception):
    """A connect or disconnect that cannot go on; its message says what to do."""


@dataclass
class Target:
    url: str  # relaybay's address as the CLI's hooks and MCP server reach it
    token: str  # the agents' token
    home: Path  # the person's home folder, whose CLI configuration is changed
    cli: str | None  # the CLI's executable (--cli), or None: find it on PATH
    dry_run: bool
    say: Callable[[str], None] = field(default=print)


def engine(name):
    return import_module(ENGINES[name])
