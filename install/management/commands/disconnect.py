from install.management.commands.connect import ConnectCommand


class Command(ConnectCommand):
    help = (
        "Remove what `connect` added to a coding-agent CLI's configuration, and nothing else: for Claude Code "
        "the relaybay plugin, its marketplace entry and its kept values, the token among them."
    )
    step = "disconnect"
