"""The owner adds and revokes machines (manage.py machine)."""

import re
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import ErrorCode, InvalidInput, NotFound, Refused

from .models import Machine
from .reads import token_digest

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass
class AddedMachine:
    machine: Machine
    token: str
    command: str


def connect_command(url):
    """What to run on the machine: the token goes into a file readable by its user only
    (pasted on stdin, never on a command line), which the hook client reads."""
    return (
        "mkdir -p ~/.relaybay && (umask 077 && cat > ~/.relaybay/token)  # paste the token, then Ctrl-D; "
        f"the hook client then runs with RELAYBAY_URL={url} RELAYBAY_TOKEN_FILE=~/.relaybay/token"
    )


def do_add_machine(*, name):
    name = (name or "").strip()
    if not NAME.fullmatch(name):
        raise InvalidInput(f'"{name}" is not a machine name: letters, digits, ".", "_" and "-", at most 64.')
    token = secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            machine = Machine.objects.create(name=name, token_digest=token_digest(token))
    except IntegrityError:
        raise Refused(f'A machine is named "{name}" already: choose another name.', code=ErrorCode.NAME_IN_USE) from None
    return AddedMachine(machine, token, connect_command(settings.RELAYBAY_URL))


def do_revoke_machine(*, name):
    """Its credential is refused (401) from the next request on; its sessions' rows stay."""
    with transaction.atomic():
        machine = Machine.objects.select_for_update().filter(name=name).first()
        if machine is None:
            raise NotFound(f'There is no machine "{name}"; manage.py machine list shows them.')
        if machine.revoked_at is None:
            machine.revoked_at = timezone.now()
            machine.save(update_fields=["revoked_at"])
    return machine
