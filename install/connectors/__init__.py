"""Connecting a coding-agent CLI to relaybay for every session its user starts.

`manage.py connect NAME` and `manage.py disconnect NAME` (install/management/commands)
check what every engine needs — relaybay answering at its address with the agents' token —
before anything is written, then hand over to the module here its engine names (NAME is the
engine's `connect_name`, the module its `connector`). Each module offers:

    connect(target) -> None     install or update relaybay in the CLI's configuration
    disconnect(target) -> None  remove what connect added, and nothing else

or, written for any CLI of one kind, the same two taking the engine as well (json_settings.py).

and raises ConnectError with a sentence that says what to do when it cannot. `target` is a
Target: where relaybay is, the CLI to drive, whether to only print what would be done, and
where to say what was done.
"""

from dataclasses import dataclass, field
import functools
import inspect
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import engines


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


def names():
    """The CLIs `connect` takes, by their engines' connect_name."""
    return sorted(engine.connect_name for engine in engines.ENGINES if engine.connector)


def engine(name):
    """The connect and disconnect of the CLI `manage.py connect` calls `name`."""
    declared = next(engine for engine in engines.ENGINES if engine.connect_name == name and engine.connector)
    module = import_module(f"{__name__}.{declared.connector}")
    steps = {step: getattr(module, step) for step in ("connect", "disconnect")}
    if "engine" in inspect.signature(steps["connect"]).parameters:
        steps = {step: functools.partial(function, engine=declared) for step, function in steps.items()}
    return SimpleNamespace(**steps)
