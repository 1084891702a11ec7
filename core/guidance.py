"""What relaybay tells a model, in words shared by its SessionStart answer and its MCP server's
instructions (docs/rules.md §4.9): one sentence, said once."""

CHANNELS = (
    "Two ways to write to another session: Claude Code's own SendMessage reaches only live sessions "
    "on this machine and keeps nothing (relaybay records that it was sent, never its text); relaybay's "
    "message_send also waits for idle and ended sessions, and the owner sees it on the board."
)

# The same for a session of a CLI without Claude Code's SendMessage.
ONE_CHANNEL = (
    "To write to another session, use relaybay's message_send: it reaches the sessions of every CLI relaybay "
    "hears alike, waits for idle and ended ones, and the owner sees it on the board."
)
