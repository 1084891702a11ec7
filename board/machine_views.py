"""The Machines page (docs/rules.md §6): each machine, its sessions, when it was last heard
from, and revoking its token."""

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from core.errors import RelaybayError
from machines.actions import do_revoke_machine
from machines.models import Machine
from sessions_app.models import HookLink

from .pages import owner_required, render_board


def _machines():
    rows = list(Machine.objects.all())
    for machine in rows:
        links = HookLink.objects.live().filter(process_proof__startswith=f"m{machine.pk}:").select_related("session")
        machine.sessions = sorted({link.session for link in links}, key=lambda row: row.public_name)
    return {"machines": rows}


@owner_required
def machines_page(request):
    return render_board(request, "board/machines.html", {"machines-list": _machines}, {"section": "machines"})


@owner_required
@require_POST
def revoke_machine(request, name):
    try:
        machine = do_revoke_machine(name=name)
    except RelaybayError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"{machine.name} is revoked: its token is refused from now on.")
    return redirect("machines")
