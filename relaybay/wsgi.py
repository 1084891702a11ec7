import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "relaybay.settings")
application = get_wsgi_application()

from core.pings import send_in_background  # noqa: E402 - after Django is set up

# A sync worker has no event loop of its own: board pings and wake-ups go to a thread of the
# process, so no answer waits on the channel layer (core/pings.py).
send_in_background()
