"""The status endpoint: `GET /metrics` (Prometheus text) and `GET /status` (JSON) of one run.

Runs in: driver (on its event loop, beside the driver coroutine). A small plain-asyncio HTTP/1.1
server (`asyncio.start_server`, one request per connection): two read-only routes need no web
framework, and prometheus_client's `generate_latest` renders the text format. It binds only the
address it is given (`parse_address` defaults the host to 127.0.0.1); port 0 picks a free port,
and `address` says which one. The endpoint has no authentication, so an address other machines can
reach (0.0.0.0, a LAN address) is served with one warning line.

A request whose line or header lines exceed `MAX_LINE_BYTES`, or whose head exceeds
`MAX_HEAD_BYTES`, is answered `431` (never a traceback on the console); the rest of what that
client sends is read and dropped for a moment, so it reads the answer instead of a reset.

Bounded under load: at most `MAX_CONNECTIONS` connections are open at once. One more closes the
oldest open one at once, not the new one: idle clients can neither use up the run's file
descriptors nor keep a scrape out until they time out (the newest connection is the one most
likely to send its request now). A connection is closed `REQUEST_TIMEOUT_S` after it opened,
answered or not. `close` cancels the
connections still open and waits for them, so a shutdown prints nothing about them.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import math
import socket
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from zeropipe.config import ConfigError

log = logging.getLogger("zeropipe.status")

MAX_LINE_BYTES = 8 * 1024  # the request line or one header line (the stream reader's limit)
MAX_HEAD_BYTES = 32 * 1024  # the request line and all headers together
MAX_DISCARD_BYTES = 4 * 1024 * 1024  # dropped after a 431, so the client sees the answer
MAX_CONNECTIONS = 64  # served at once; a Prometheus scrape needs one
REQUEST_TIMEOUT_S = 10.0  # from accept to the answer sent: an idle client is dropped then
TOO_LARGE = (
    "431 Request Header Fields Too Large",
    "text/plain",
    f"request line or headers too large (limits: {MAX_LINE_BYTES} bytes a line, "
    f"{MAX_HEAD_BYTES} in all)\n".encode(),
)

GAUGES = {  # status key -> (metric name, help); exported as NaN until known
    "envstep_per_s_10s": ("zeropipe_envstep_per_second_10s", "Env steps per second, last 10 s"),
    "envstep_per_s_60s": ("zeropipe_envstep_per_second_60s", "Env steps per second, last 60 s"),
    "learner_steps_per_s_10s": (
        "zeropipe_learner_steps_per_second_10s",
        "Learner steps per second, last 10 s",
    ),
    "learner_steps_per_s_60s": (
        "zeropipe_learner_steps_per_second_60s",
        "Learner steps per second, last 60 s",
    ),
    "last_eval": ("zeropipe_eval_reward_mean_last", "reward_mean of the newest eval"),
    "best_eval": ("zeropipe_eval_reward_mean_best", "Best eval reward_mean so far"),
    "policy_lag": ("zeropipe_policy_lag", "train_iter minus the newest collect's policy version"),
    "budget_queue_len": ("zeropipe_budget_queue_length", "Train budgets waiting"),
    "publish_s_last": ("zeropipe_publish_seconds_last", "Seconds of the newest snapshot publish"),
    "time_s": ("zeropipe_run_seconds", "Seconds since the run started (its time_s)"),
    "learner_busy_fraction": (
        "zeropipe_learner_busy_fraction",
        "Share of this process's wall time spent in learner steps",
    ),
    "overlap_bound_s": (
        "zeropipe_overlap_bound_seconds",
        "max(train + driver, collect + eval) seconds so far: the perfect-overlap wall time",
    ),
}
COUNTERS = {  # exported with the _total suffix
    "envstep": ("zeropipe_envsteps", "Env steps collected"),
    "train_iter": ("zeropipe_learner_steps", "Learner steps (train_iter, the policy version)"),
    "collects": ("zeropipe_collects", "Collects absorbed"),
    "evals": ("zeropipe_evals", "Evals recorded"),
    "publishes": ("zeropipe_publishes", "Snapshots published"),
    "restarts": ("zeropipe_restarts", "Worker restarts"),
    "publish_s_total": ("zeropipe_publish_seconds", "Seconds spent publishing snapshots"),
    "events_dropped": ("zeropipe_events_dropped", "Events dropped for slow subscribers"),
}
RUN_LABELS = ("type", "env", "pipeline", "version")


def parse_address(text: str) -> tuple[str, int]:
    """`HOST:PORT` or `PORT` (host 127.0.0.1) → (host, port).

    Raises:
        ConfigError: not an address with a port in 0..65535.
    """
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535 or (sep and not host):
        raise ConfigError(f"--status {text!r}: expected HOST:PORT, e.g. 127.0.0.1:9100 (0: any)")
    return host, number


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on exactly (host, port).

    Raises:
        ConfigError: the address cannot be bound (in use, not local).
    """
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
    except OSError as exc:
        raise ConfigError(f"--status {host}:{port}: cannot listen there ({exc})") from None
    sock.listen(16)
    sock.setblocking(False)
    return sock


def exposure_warning(host: str) -> str | None:
    """The warning for an endpoint bound to `host`; None for a loopback address."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None  # not an IP address: cannot tell, so warn
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address is not None and address.is_loopback:
        return None
    return (
        f"the status endpoint on {host} can be reached from other machines and has no "
        "authentication; bind 127.0.0.1 (--status PORT) unless that is intended"
    )


class _StatusCollector:
    """prometheus_client collector reading one status snapshot per scrape."""

    def __init__(self, status: Callable[[], dict[str, Any]]) -> None:
        self.status = status

    def collect(self) -> Iterator[Metric]:
        s = self.status()
        for key, (name, doc) in GAUGES.items():
            value = s.get(key)
            yield GaugeMetricFamily(name, doc, value=math.nan if value is None else value)
        for key, (name, doc) in COUNTERS.items():
            yield CounterMetricFamily(name, doc, value=s.get(key) or 0)
        losses = GaugeMetricFamily(
            "zeropipe_loss", "The newest train line's loss terms", labels=["term"]
        )
        for term, value in sorted(s.get("losses", {}).items()):
            losses.add_metric([term], value)
        yield losses
        info = s.get("info", {})
        run = GaugeMetricFamily("zeropipe_run_info", "The run (1)", labels=list(RUN_LABELS))
        run.add_metric([str(info.get(k, "")) for k in RUN_LABELS], 1.0)
        yield run
        phases = CounterMetricFamily(
            "zeropipe_phase_seconds", "Seconds spent per phase of the run", labels=["phase"]
        )
        for phase, value in sorted(s.get("phase_s", {}).items()):
            phases.add_metric([phase], value)
        yield phases
        busy = GaugeMetricFamily(
            "zeropipe_worker_busy_fraction", "Busy share of a worker's wall time", labels=["worker"]
        )
        for worker, info in sorted(s["workers"].items()):
            if info.get("busy_fraction") is not None:
                busy.add_metric([worker], info["busy_fraction"])
        yield busy


class StatusServer:
    """Serves `/metrics` and `/status` from a status callable on the running loop.

    Args:
        sock: a bound listening socket (see `bind`).
        status: returns the run's status dict (RunMonitor.status).
    """

    def __init__(self, sock: socket.socket, status: Callable[[], dict[str, Any]]) -> None:
        self.sock = sock
        self.status = status
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_StatusCollector(status))
        self._server: asyncio.Server | None = None
        # open connections, oldest first (dicts keep insertion order)
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._warned_full = False

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port)."""
        host, port = self.sock.getsockname()[:2]
        return host, port

    async def start(self) -> None:
        """Start accepting connections."""
        self._server = await asyncio.start_server(self._serve, sock=self.sock, limit=MAX_LINE_BYTES)
        log.info("status endpoint on http://%s:%d/status and /metrics", *self.address)
        warning = exposure_warning(self.address[0])
        if warning is not None:
            log.warning(warning)

    async def close(self) -> None:
        """Stop serving, end the connections still open, and close the socket."""
        if self._server is not None:
            self._server.close()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        self.sock.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # asyncio.start_server runs each connection as a task
        while len(self._connections) >= MAX_CONNECTIONS:
            self._drop_oldest()
        self._connections[task] = writer
        try:
            await self._answer(reader, writer)
        except asyncio.CancelledError:
            pass  # dropped for a newer connection, or close(): the task ends here, quietly
        finally:
            self._connections.pop(task, None)
            writer.close()

    def _drop_oldest(self) -> None:
        """Close the oldest open connection now (its descriptor is freed at once)."""
        task, writer = next(iter(self._connections.items()))
        del self._connections[task]
        writer.transport.abort()
        task.cancel()
        if not self._warned_full:
            self._warned_full = True
            log.warning(
                "status endpoint: more than %d connections open at once; the oldest ones are "
                "closed (this warning is not repeated)",
                MAX_CONNECTIONS,
            )

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                request = await _read_head(reader)
                if request is None:
                    await _reply(writer, *TOO_LARGE)
                    writer.write_eof()
                    await _discard(reader, MAX_DISCARD_BYTES)
                else:
                    await _reply(writer, *self._respond(request.split()))
        except (TimeoutError, ConnectionError):
            pass  # a client that went away or never finished its request

    def _respond(self, parts: list[str]) -> tuple[str, str, bytes]:
        if len(parts) < 2 or parts[0] != "GET":
            return "405 Method Not Allowed", "text/plain", b"only GET /metrics and /status\n"
        path = parts[1].split("?")[0]
        if path == "/metrics":
            return "200 OK", "text/plain; version=0.0.4", generate_latest(self.registry)
        if path == "/status":
            return "200 OK", "application/json", json.dumps(self.status()).encode()
        return "404 Not Found", "text/plain", b"try /metrics or /status\n"


async def _read_head(reader: asyncio.StreamReader) -> str | None:
    """The request line, once the headers are read too; None for a head over the limits."""
    try:
        request = await reader.readline()
        head_bytes = len(request)
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            head_bytes += len(line)  # headers are not needed, only bounded
            if head_bytes > MAX_HEAD_BYTES:
                return None
    except ValueError:  # a line over the reader's limit (how StreamReader.readline says so)
        return None
    return request.decode("latin-1")


async def _reply(writer: asyncio.StreamWriter, code: str, ctype: str, body: bytes) -> None:
    head = (
        f"HTTP/1.1 {code}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()


async def _discard(reader: asyncio.StreamReader, max_bytes: int) -> None:
    """Read and drop up to `max_bytes` or until the client closes its side."""
    while max_bytes > 0 and (chunk := await reader.read(min(max_bytes, 64 * 1024))):
        max_bytes -= len(chunk)
