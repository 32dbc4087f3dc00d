"""The source reader's guard against DNS rebinding, across a real socket: in a network namespace
with no way out (``unshare -n``), a host name that resolves to a public address when checked and
to loopback afterwards must not make the reader fetch from loopback. Skipped where a namespace
cannot be made (not root, no ``unshare``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    import asyncio, socket, sys, tempfile
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading
    from claire.settings import ResolveConfig
    from claire.sources.reading import SourceReader

    hits = []
    class Internal(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = b"<html><body><p>" + b"The internal secret page says the answer is forty two. " * 5 + b"</p></body></html>"
            self.send_response(200); self.send_header("Content-Type", "text/html"); self.end_headers(); self.wfile.write(body)
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Internal)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    real = socket.getaddrinfo
    asked = []
    def rebinding(host, *args, **kwargs):
        if (host.decode() if isinstance(host, bytes) else host) == "rebind.example":
            asked.append(host)
            address = "93.184.216.34" if len(asked) == 1 else "127.0.0.1"  # public when checked, loopback after
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, *args, **kwargs)
    socket.getaddrinfo = rebinding
    reader = SourceReader(ResolveConfig(cache_dir=tempfile.mkdtemp(), fetch_timeout=5))
    page = asyncio.run(reader.read(f"http://rebind.example:{port}/internal"))
    print("hits", len(hits), "readable", page.readable, "error", page.error)
    sys.exit(0 if not hits and not page.readable else 1)
''')


def _namespace_works() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _namespace_works(), reason="needs unshare -n (root) and ip")
def test_a_rebinding_name_cannot_make_the_reader_fetch_from_loopback():
    result = subprocess.run(["unshare", "-n", "sh", "-c", f"ip link set lo up && {sys.executable} -c \"$0\"", SCRIPT],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hits 0" in result.stdout and "could not read" in result.stdout
