import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "relaybay.settings")
django_application = get_wsgi_application()

from core.pings import holding_sends, post_in_background  # noqa: E402 - after Django is set up


def application(environ, start_response):
    """Django's WSGI handler. A sync worker has no event loop: the board pings and wake-ups of
    what a request committed are handed to a thread of the process, so no answer waits on the
    channel layer (core/pings.py)."""
    with holding_sends() as held:
        try:
            return django_application(environ, start_response)
        finally:
            post_in_background(held)
