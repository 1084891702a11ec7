"""Benchmark-only settings: relaybay's own, with the reference routes of bench/empty_urls.py."""

from relaybay.settings import *  # noqa: F403

ROOT_URLCONF = "bench.empty_urls"

from bench.experiments import apply_settings  # noqa: E402

apply_settings(globals())
