"""The agent CLIs relaybay hears (docs/rules.md §1.6), one module each: engines/claude_code.py,
codex.py and gemini.py, each making one engines.base.Engine that declares what differs.

Which CLI calls is what the hook client says (`relaybay-hook --engine NAME` in the hook commands
`manage.py connect` writes, spliced into the payload as `relaybay_engine`); a payload that says
nothing is the CLI's whose own events name it, else Claude Code's. Everything else (linking,
state, delivery, the budget, the Stop cap, what is stored) is one path for all, in
sessions_app/hooks/ingest.py, which asks the payload's engine.
"""

from dataclasses import dataclass

from core.errors import InvalidInput

from . import claude_code, codex, gemini
from .base import Engine, Wake

ENGINE_FIELD = "relaybay_engine"
# Every engine, the first the one a payload naming none belongs to unless its event is another's own.
ENGINES = [claude_code.ENGINE, codex.ENGINE, gemini.ENGINE]
DEFAULT = ENGINES[0]


# Payload fields of every CLI that hold the model's own words: never stored.
MODEL_TEXT = set()


def _declared():
    MODEL_TEXT.clear()
    MODEL_TEXT.update(field for engine in ENGINES for field in engine.model_text)


def register(engine):
    """Add an engine (a CLI relaybay hears from now on): its module's ENGINE."""
    if all(known.name != engine.name for known in ENGINES):
        ENGINES.append(engine)
        _declared()


def unregister(engine):
    ENGINES.remove(engine)
    _declared()


_declared()


def names():
    return tuple(engine.name for engine in ENGINES)


def of(name):
    """The engine a session row names (Session.engine); the default for one relaybay no longer hears."""
    return next((engine for engine in ENGINES if engine.name == name), DEFAULT)


def unwakeable():
    """Which sessions relaybay cannot wake while idle, in words: the CLIs with no wake-up, and
    those woken only through a waiter, without it."""
    parts = [engine.label for engine in ENGINES if engine.wake == Wake.NEVER]
    parts += [f"{engine.label} without its waiter" for engine in ENGINES if engine.wake == Wake.WAITER]
    return ", or ".join(parts)


def is_wake_prompt(prompt):
    """Whether a prompt is a CLI's wake-up of an idle session (its engine's), not what a person typed."""
    return isinstance(prompt, str) and any(engine.is_wake_prompt(prompt) for engine in ENGINES)


def wakes_by_hook(name):
    """Whether an idle session of this engine has a wake-up hook of its CLI's own."""
    return of(name).wake == Wake.HOOK


@dataclass(frozen=True)
class Dialect:
    """One payload's CLI and event: `name` as the CLI calls it, `event` as relaybay handles it."""

    engine: Engine
    name: str
    event: str
    delivers_context: bool  # its answer can carry context to the model


def engine_of(payload):
    """The CLI a checked payload comes from (see the module's docstring); a declared engine
    relaybay does not know is refused."""
    declared = payload.get(ENGINE_FIELD)
    if declared is None:
        event = payload["hook_event_name"]
        return next((engine for engine in ENGINES if event in engine.own_events), DEFAULT)
    found = next((engine for engine in ENGINES if engine.name == declared), None)
    if found is None:
        known = ", ".join(names())
        raise InvalidInput(f"The hook payload's {ENGINE_FIELD} must be one of {known}; the hook client sets it from --engine.")
    return found


def dialect_of(payload):
    engine = engine_of(payload)
    name = payload["hook_event_name"]
    event = engine.event_of(name)
    return Dialect(engine=engine, name=name, event=event, delivers_context=event in engine.context_events)


def mcp_caller(meta):
    """The engine and session id a CLI wrote in an MCP call's `_meta`, or (None, None)."""
    for engine in ENGINES:
        found = engine.mcp_session(meta)
        if found is not None:
            return engine, found
    return None, None
