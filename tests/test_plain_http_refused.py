"""Off loopback relaybay does not serve plain HTTP (relaybay/serve.py): an address other than
loopback is served with daphne's TLS endpoint, or behind a reverse proxy that terminates TLS
when told so (--behind-tls-proxy, RELAYBAY_BEHIND_TLS_PROXY=1); otherwise it refuses to start
and says what to do."""

import subprocess
import sys

import pytest

from relaybay.serve import CommandLine, plain_http_addresses
from tests.live_server import REPO_ROOT


def serve(*args, **env):
    return subprocess.run(
        [sys.executable, "-m", "relaybay.serve", *args, "relaybay.asgi:application"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
    )


def addresses(*args, **env):
    return plain_http_addresses(CommandLine().parser.parse_args([*args, "relaybay.asgi:application"]))


def test_it_refuses_to_start_on_an_address_off_loopback_and_says_what_to_do():
    started = serve("-b", "10.9.8.7", "-p", "8123")
    assert started.returncode == 2
    assert "relaybay will not serve plain HTTP on 10.9.8.7" in started.stderr
    assert "--behind-tls-proxy" in started.stderr and "-e ssl:" in started.stderr


@pytest.mark.parametrize(
    "args, plain",
    [
        (["-b", "127.0.0.1", "-p", "8000"], []),
        (["-b", "localhost", "-p", "8000"], []),
        (["-b", "::1", "-p", "8000"], []),
        (["-b", "0.0.0.0", "-p", "8000"], ["0.0.0.0"]),
        (["-b", "relay.example.org", "-p", "8000"], ["relay.example.org"]),
        (["-e", "tcp:8000"], ["0.0.0.0"]),
        (["-e", "tcp:port=8000:interface=192.168.1.5"], ["192.168.1.5"]),
        (["-e", "tcp:port=8000:interface=127.0.0.1"], []),
        (["-e", "ssl:443:privateKey=key.pem:certKey=cert.pem"], []),
        (["-u", "/run/relaybay.sock"], []),
    ],
)
def test_plain_http_is_found_on_each_binding_off_loopback(args, plain):
    assert addresses(*args) == plain


def test_a_proxy_that_terminates_tls_is_said_by_option_or_environment(monkeypatch):
    assert CommandLine().parser.parse_args(["--behind-tls-proxy", "x"]).behind_tls_proxy
    assert not CommandLine().parser.parse_args(["x"]).behind_tls_proxy
    monkeypatch.setenv("RELAYBAY_BEHIND_TLS_PROXY", "1")
    assert CommandLine().parser.parse_args(["x"]).behind_tls_proxy


def test_behind_a_tls_proxy_the_board_takes_its_https_from_x_forwarded_proto(tmp_path):
    # The board's login form is checked against the https:// origin the proxy serves.
    probe = (
        "import django; django.setup(); from django.conf import settings; from django.test import RequestFactory; "
        "r = RequestFactory().get('/', HTTP_X_FORWARDED_PROTO='https'); print(r.is_secure())"
    )
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "relaybay.settings", "RELAYBAY_DATA": str(tmp_path)}

    def run(**more):
        return subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, env={**env, **more}, capture_output=True, text=True, timeout=60)

    behind, alone = run(RELAYBAY_BEHIND_TLS_PROXY="1"), run()
    assert (behind.stdout.strip(), alone.stdout.strip()) == ("True", "False"), behind.stderr + alone.stderr
