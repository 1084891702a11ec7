import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "relaybay.settings")
# Build the Django app before importing anything that touches models. Static files (htmx,
# the board's script) are served from where they lie: no collectstatic step, every
# middleware stays async so a long poll holds no thread.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from sessions_app.hooks import runner  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402

runner.use_hook_threads()

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
