from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from core.api import api, no_such_route

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers and tools ask for /favicon.ico whatever the page's <link rel="icon"> says.
    path("favicon.ico", RedirectView.as_view(url=static("board/favicon.svg"), permanent=True)),
    # Any /api/ address that is no route answers the API's JSON 404, /api/ itself included.
    path("api/", no_such_route),
    path("api/", api.urls),
    re_path(r"^api/", no_such_route),
    path("", include("board.urls")),
]

# A request for a host relaybay is not served as (core/hosts.py): under the WSGI layout /api/
# passes the board's chain, whose refusal then answers the API's JSON.
handler400 = "core.hosts.bad_request"
