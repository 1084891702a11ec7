"""relaybay's urls plus an empty bearer-auth django-ninja API at /bench/ (benchmarks only).

`empty` is the reference view (sync, as most routes); `empty_async` is the same view as an
`async def` with the async bearer check that the hook route uses."""

from django.urls import path
from ninja import NinjaAPI

from core.auth import AgentAuth, AsyncAgentAuth
from relaybay.urls import urlpatterns as relaybay_urlpatterns

bench_api = NinjaAPI(title="relaybay bench", version="bench", auth=AgentAuth(), urls_namespace="bench", docs_url=None)


@bench_api.post("/empty", response=dict)
def empty(request):
    return {}


@bench_api.post("/empty_async", response=dict, auth=AsyncAgentAuth())
async def empty_async(request):
    return {}


urlpatterns = [path("bench/", bench_api.urls), *relaybay_urlpatterns]
