"""relaybay's urls plus an empty bearer-auth django-ninja API at /bench/ (benchmarks only)."""

from django.urls import path
from ninja import NinjaAPI

from relaybay.auth import TokenAuth
from relaybay.urls import urlpatterns as relaybay_urlpatterns

bench_api = NinjaAPI(title="relaybay bench", version="bench", auth=TokenAuth(), urls_namespace="bench", docs_url=None)


@bench_api.post("/empty", response=dict)
def empty(request):
    return {}


@bench_api.post("/empty_async", response=dict)
async def empty_async(request):
    return {}


urlpatterns = [path("bench/", bench_api.urls), *relaybay_urlpatterns]
