"""The status endpoint's server in-process: oversized requests, and the warning for an address
other machines can reach. Only loopback addresses are bound here."""

from __future__ import annotations

import asyncio
import logging

import pytest
import uvloop

from zeropipe.outputs import status_server
from zeropipe.outputs.status_server import StatusServer, bind, exposure_warning

LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


def status() -> dict:
    return {"envstep": 1, "train_iter": 2, "workers": {}}


async def exchange(request: bytes) -> list[bytes]:
    """Serve on 127.0.0.1, send `request`, then a plain GET /status; both status lines."""
    server = StatusServer(bind("127.0.0.1", 0), status)
    await server.start()
    lines = []
    try:
        for data in (request, b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n"):
            reader, writer = await asyncio.open_connection(*server.address)
            writer.write(data)
            await writer.drain()
            writer.write_eof()
            lines.append((await reader.read()).split(b"\r\n")[0])
            writer.close()
            await writer.wait_closed()
    finally:
        await server.close()
    return lines


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /" + b"a" * 1_000_000 + b" HTTP/1.1\r\n\r\n",  # a 1 MB request line
        b"GET /status HTTP/1.1\r\nX-Big: " + b"b" * 9_000 + b"\r\n\r\n",  # one long header
        b"GET /status HTTP/1.1\r\n" + (b"X-Many: " + b"c" * 1_000 + b"\r\n") * 40 + b"\r\n",
    ],
    ids=["request-line", "header-line", "all-headers"],
)
def test_an_oversized_request_gets_431_and_no_traceback(
    request_bytes, loop, caplog, capsys: pytest.CaptureFixture
):
    caplog.set_level(logging.INFO)
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        too_large, after = runner.run(exchange(request_bytes))
    assert too_large == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert after == b"HTTP/1.1 200 OK"  # the server serves on
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "Traceback" not in capsys.readouterr().err


# host -> warns? (the address the server reports once bound)
EXPOSURE = [
    ("127.0.0.1", False),
    ("127.0.0.2", False),
    ("::1", False),
    ("::ffff:127.0.0.1", False),
    ("0.0.0.0", True),
    ("::", True),
    ("192.168.1.20", True),
    ("::ffff:10.0.0.1", True),
    ("example.org", True),
]


@pytest.mark.parametrize(("host", "warns"), EXPOSURE)
def test_only_a_loopback_address_goes_without_a_warning(host, warns):
    warning = exposure_warning(host)
    assert (warning is not None) == warns
    if warns:
        assert f"on {host} can be reached from other machines" in warning
        assert "no authentication" in warning and "\n" not in warning


def test_a_server_on_all_interfaces_warns_once_at_start(monkeypatch, caplog):
    """Bound to 127.0.0.1 here, reporting 0.0.0.0: what `--status 0.0.0.0:PORT` would see."""
    monkeypatch.setattr(StatusServer, "address", property(lambda self: ("0.0.0.0", 9100)))
    caplog.set_level(logging.INFO, logger="zeropipe.status")

    async def start_and_close() -> None:
        server = StatusServer(bind("127.0.0.1", 0), status)
        await server.start()
        await server.close()

    asyncio.run(start_and_close())
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [status_server.exposure_warning("0.0.0.0")]
