from django.contrib import admin
from django.urls import include, path, re_path

from .api import api, no_such_route

urlpatterns = [
    path("admin/", admin.site.urls),
    # Any /api/ address that is no route answers the API's JSON 404, /api/ itself included.
    path("api/", no_such_route),
    path("api/", api.urls),
    re_path(r"^api/", no_such_route),
    path("", include("board.urls")),
]
