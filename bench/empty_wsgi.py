"""Benchmark-only WSGI entry (gunicorn bench.empty_wsgi:application): relaybay's JSON API
through Django's WSGI handler, with the same /bench/empty reference view as bench/empty_asgi.py."""

import os

os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"

from relaybay.wsgi import application  # noqa: E402,F401

from bench.experiments import apply_app  # noqa: E402

apply_app()
