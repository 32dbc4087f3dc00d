"""``claire serve`` as a subprocess: it starts, answers, needs its token, and refuses to listen
beyond loopback without one (a one-line message, exit 2)."""

from __future__ import annotations

import signal
import socket
import time

import httpx

from claire.testing.cli import run_claire, start_claire


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_refuses_a_public_address_without_a_token(tmp_path):
    result = run_claire("serve", "--host", "0.0.0.0", cache=tmp_path / "cache", timeout=120)
    assert result.returncode == 2 and "refusing to listen on 0.0.0.0 without a token" in result.stderr
    assert "Traceback" not in result.stderr
    from_env = run_claire("serve", cache=tmp_path / "cache", env={"CLAIRE_SERVE_HOST": "0.0.0.0"}, timeout=120)
    assert from_env.returncode == 2 and "refusing to listen on 0.0.0.0 without a token" in from_env.stderr
    bad = run_claire("serve", cache=tmp_path / "cache", env={"CLAIRE_SERVE_PORT": "eighty"}, timeout=120)
    assert bad.returncode == 2 and "invalid server settings" in bad.stderr and "field port" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_serve_start_problems_are_one_line_before_anything_listens(tmp_path):
    wikichat = ["--set", 'retrieval.backend="wikichat"', "--data-dir", str(tmp_path / "web")]
    no_key = run_claire("serve", "--port", str(_free_port()), *wikichat, cache=tmp_path / "cache", timeout=120)
    assert no_key.returncode == 2 and "no API key" in no_key.stderr and "Traceback" not in no_key.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = run_claire("serve", "--port", str(busy.getsockname()[1]), *wikichat, cache=tmp_path / "cache",
                           env={"OPENAI_API_KEY": "sk-x"}, timeout=120)
    assert taken.returncode == 2 and "cannot listen on 127.0.0.1" in taken.stderr and "Traceback" not in taken.stderr


def test_serve_starts_answers_with_its_token_and_stops_cleanly(tmp_path):
    port = _free_port()
    # The WikiChat backend opens nothing at start-up, so this test needs no index.
    server = start_claire("serve", "--data-dir", str(tmp_path / "web"), "--set", 'retrieval.backend="wikichat"',
                          cache=tmp_path / "cache", env={"CLAIRE_SERVE_TOKEN": "s3cret", "CLAIRE_SERVE_PORT": str(port),
                                                         "OPENAI_API_KEY": "sk-cli-secret-987654321"})
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                refused = httpx.get(url + "/api/health", timeout=2)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read()
                assert time.monotonic() < deadline, "claire serve did not start"
                time.sleep(0.3)
        assert refused.status_code == 401
        health = httpx.get(url + "/api/health", headers={"Authorization": "Bearer s3cret"}, timeout=10)
        assert health.status_code == 200 and health.json()["token_required"] is True
        assert "sk-cli-secret" not in health.text + httpx.get(url + "/", timeout=10).text
        assert (tmp_path / "web" / "jobs.sqlite").exists()
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    assert server.returncode == 130, err  # stopped by Ctrl-C: the conventional exit code, after a clean shutdown
    assert "Traceback" not in err and "token required" in err
    assert err.index("starting CLAIRE") < err.index("CLAIRE on http")  # the address is printed once it answers


