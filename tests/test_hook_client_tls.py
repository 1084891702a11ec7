"""The hook client over https (relaybay_hook/conn.py): it verifies relaybay's certificate against
RELAYBAY_CAFILE (or the system's CAs); a certificate that does not verify is said in the
session's terminal at every event, naming what to set, and the event is spooled to be sent once
it verifies, in order, as for an outage."""

import http.server
import json
import ssl
import subprocess
import threading

import pytest

from tests.test_hook_client import event, run_hook, spool, spool_entries  # noqa: F401  (fixture)

pytestmark = pytest.mark.embedded_only


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(folder, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
            "-days", "2", "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    return folder / f"{name}.pem"


@pytest.fixture
def tls_relaybay(tmp_path):
    """An https server on 127.0.0.1 with a certificate of a test CA; the posts it took."""
    ca = make_ca(tmp_path, "test-ca")
    (tmp_path / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\nauthorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=tmp_path)
    openssl("x509", "-req", "-in", "server.csr", "-CA", "test-ca.pem", "-CAkey", "test-ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "san.cnf", cwd=tmp_path)
    posted = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            posted.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.pem", tmp_path / "server.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}", ca, posted
    server.shutdown()


def test_it_posts_over_https_to_a_relaybay_its_ca_file_trusts(tls_relaybay, spool):
    url, ca, posted = tls_relaybay
    ran = run_hook(url, spool, event(1), RELAYBAY_CAFILE=ca)
    assert ran.returncode == 0 and ran.stderr == b"", ran.stderr
    assert [p["n"] for p in posted] == [1] and spool_entries(spool) == []


def test_a_certificate_of_another_ca_is_a_clear_error_and_the_events_spool_until_it_verifies(tls_relaybay, spool, tmp_path):
    url, ca, posted = tls_relaybay
    other = tmp_path / "other"
    other.mkdir()
    wrong = make_ca(other, "other-ca")
    for n in (1, 2):
        ran = run_hook(url, spool, event(n), RELAYBAY_CAFILE=wrong)
        shown = json.loads(ran.stdout)["systemMessage"]
        assert "relaybay at 127.0.0.1" in shown and "is not trusted" in shown and "Set RELAYBAY_CAFILE" in shown
        assert str(wrong) in shown and b"is not trusted" in ran.stderr
    assert posted == [] and [json.loads(e["payload"])["n"] for e in spool_entries(spool)] == [1, 2]
    # Trusted again: its own event first, then the spool in order.
    run_hook(url, spool, event(3), RELAYBAY_CAFILE=ca)
    assert [p["n"] for p in posted] == [3, 1, 2] and spool_entries(spool) == []
