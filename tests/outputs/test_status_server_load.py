"""The status endpoint under many idle connections: 2,000 loopback connections held open against
a real StatusServer in a child process (its descriptors capped at 1,024) leave it answering
/metrics, with its descriptors bounded, and it shuts down without a traceback. Only 127.0.0.1."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time

import pytest

HELD_CONNECTIONS = 2_000
SERVER_NOFILE = 1_024  # fixed, so the test does not depend on the machine's default

SERVER = f"""
import asyncio, resource, sys
import uvloop
resource.setrlimit(resource.RLIMIT_NOFILE, ({SERVER_NOFILE}, resource.getrlimit(
    resource.RLIMIT_NOFILE)[1]))
from zeropipe.outputs.status_server import StatusServer, bind

async def main():
    server = StatusServer(bind("127.0.0.1", 0), lambda: {{"envstep": 7, "workers": {{}}}})
    await server.start()
    print(server.address[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await server.close()

loop = uvloop.new_event_loop if sys.argv[1] == "uvloop" else asyncio.new_event_loop
with asyncio.Runner(loop_factory=loop) as runner:
    runner.run(main())
print("closed", flush=True)
"""


def open_idle(port: int, count: int) -> list[socket.socket]:
    """`count` connections started without waiting (a bounded loop); none sends a byte."""
    socks = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        socks.append(sock)
    return socks


def get_metrics(port: int, timeout_s: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def scrape(port: int, deadline_s: float) -> bytes:
    """/metrics as a scraper gets it, asking again after a reset: while the kernel still hands the
    server held connections from its backlog (their SYNs retried for seconds), each of them
    closes the oldest open one, which can be the scrape's own."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            return get_metrics(port, timeout_s=5)
        except ConnectionResetError:
            if time.monotonic() > end:
                raise


@pytest.fixture
def enough_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = HELD_CONNECTIONS + 256
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"needs {need} open files (hard limit {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_two_thousand_idle_connections_leave_metrics_answered(loop, enough_descriptors):
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, loop],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    held: list[socket.socket] = []
    try:
        port = int(server.stdout.readline())
        held = open_idle(port, HELD_CONNECTIONS)
        answer = scrape(port, deadline_s=30)
        assert answer.startswith(b"HTTP/1.1 200 OK"), answer[:200]
        assert b"zeropipe_envsteps_total 7.0" in answer
        server_fds = len(os.listdir(f"/proc/{server.pid}/fd"))
        assert server_fds < 200, f"the server holds {server_fds} descriptors"
        server.stdin.write("\n")
        server.stdin.flush()
        out, err = server.communicate(timeout=30)
    finally:
        for sock in held:
            sock.close()
        if server.poll() is None:
            server.kill()
            server.communicate(timeout=30)
    assert server.returncode == 0, err
    assert out.strip() == "closed"
    assert "Traceback" not in err and "Too many open files" not in err, err
    assert "Task was destroyed" not in err, err
