"""The board's Files page (docs/rules.md §7.4): files edited by more than one live session, the same
relative path edited in several trees of one repository, the reservations in force with the
owner's Break, and the warnings and denials over time. Reads of collisions/files.py; the one
write is its action."""

from django.conf import settings
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from collisions import files
from sessions_app.models import Event, FileReservation

from . import pages
from .pages import owner_required, render_board

# What the page lists as "over time": the feed rows of the edit check and of reservations.
FILE_EVENTS = ("file.warned", "file.denied", "file.reserved", "file.released", "file.reservation_broken", "file.reservations_ended")


@owner_required
def files_page(request):
    now = timezone.now()

    def shared():
        return {"shared": files.shared(now, "path_key")}

    def merging():
        return {"merging": files.shared(now, "file_key")}

    def reservations():
        return {"reservations": list(files.in_force(now).select_related("session").order_by("root", "pattern")[: files.LISTED_MAX * 2])}

    def history():
        page = pages.keyset_page(
            [Event.objects.filter(name__in=FILE_EVENTS)],
            lambda ids: Event.objects.filter(pk__in=ids).select_related("session"),
            before=request.GET.get("before"),
            after=request.GET.get("after"),
        )
        return {"event_page": page}

    parts = {"files-shared": shared, "files-merging": merging, "files-reservations": reservations, "files-events": history}
    context = {"section": "files", "window": settings.RELAYBAY_COLLISION_MINUTES}
    return render_board(request, "board/files.html", parts, context)


@owner_required
@require_POST
def break_reservation(request, pk):
    reservation = get_object_or_404(FileReservation.objects.select_related("session"), pk=pk)
    if files.do_break_reservation(reservation=reservation):
        messages.success(request, f"Reservation of {reservation.pattern} broken; {reservation.session.public_name} hears so at its next hook.")
    else:
        messages.error(request, f"The reservation of {reservation.pattern} had already ended.")
    return redirect("files")
