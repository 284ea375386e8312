"""Message endpoints over one duplex ``multiprocessing`` connection per worker.

Runs in: driver (``DriverEndpoint``), collector | evaluator (``WorkerEndpoint``)

Framing is exactly ``Connection.send_bytes``: a big-endian int32 length (or -1 then a uint64
length for frames over 2 GiB), then the frame that ``codec.encode`` made from ``to_wire(msg)``.
The worker side therefore just uses the blocking ``send_bytes``/``recv_bytes``.

The driver side must never block the event loop, so ``DriverEndpoint`` takes over the
connection's file descriptor, makes it non-blocking and does raw fd I/O on the loop thread:

- reads: ``loop.add_reader`` wakes ``_on_readable``, which reads what the kernel has (at most
  ``max_read_bytes_per_wakeup``) straight into the pre-sized frame buffer (``os.readv``, no
  intermediate copies) and returns. A 50 MB frame arrives over many wake-ups while other tasks run;
  ``codec.decode`` then views the arrays in that buffer without copying (they are writable).
- writes: ``send`` appends the frame to an outgoing queue and writes as much as the socket takes;
  the rest is written from an ``add_writer`` callback as the worker drains its end. Chosen over a
  writer thread: everything stays on the loop thread (no locks, no cross-thread future
  completion, nothing to join at close), it works the same under uvloop, and a partial write costs
  nothing but a memoryview slice. A frame, once queued, is always written whole: cancelling the
  awaiting ``send`` only stops the wait, so the stream never desynchronises.

EOF, ``ECONNRESET`` or ``EPIPE`` make every pending and future ``recv``/``send`` raise
``WorkerGone``. A frame that does not decode to a valid message makes ``recv`` raise a
``ProtocolError`` naming the worker (once; the stream stays usable because framing is intact).

The driver must close its copy of the worker's end of the pipe right after ``Process.start()``;
otherwise the kernel never reports EOF when the worker dies. POSIX only (``add_reader`` needs a
selector-based loop).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import struct
from multiprocessing.connection import Connection

from zeropipe.transport.codec import decode, encode
from zeropipe.transport.errors import DriverGone, ProtocolError, TransportError, WorkerGone
from zeropipe.transport.messages import Hello, Message, from_wire, to_wire

logger = logging.getLogger("zeropipe.transport.pipe")

_SHORT = struct.Struct("!i")
_LONG = struct.Struct("!Q")
_PEER_GONE_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def frame_header(num_bytes: int) -> bytes:
    """Length prefix of a frame, as ``Connection.send_bytes`` writes it."""
    if num_bytes > 0x7FFFFFFF:
        return _SHORT.pack(-1) + _LONG.pack(num_bytes)
    return _SHORT.pack(num_bytes)


class _FrameAssembler:
    """Reassembles length-prefixed frames from a non-blocking fd, one wake-up at a time."""

    def __init__(self, max_frame_bytes: int) -> None:
        self._max_frame_bytes = max_frame_bytes
        self._header = bytearray()
        self._payload: bytearray | None = None
        self._filled = 0

    def read(self, fd: int, budget_bytes: int) -> tuple[list[bytearray], bool]:
        """Reads until the fd would block or ``budget_bytes`` were read.

        Returns:
            The frames completed, and whether EOF was reached.

        Raises:
            ProtocolError: On a length prefix no peer could have sent.
            OSError: On a read error other than "would block".
        """
        frames: list[bytearray] = []
        read_bytes = 0
        try:
            while read_bytes < budget_bytes:
                if self._payload is None:
                    chunk = os.read(fd, self._header_bytes_missing())
                    if not chunk:
                        return frames, True
                    self._header += chunk
                    self._maybe_start_payload(frames)
                    continue
                view = memoryview(self._payload)[self._filled :]
                num = os.readv(fd, [view])
                if num == 0:
                    return frames, True
                read_bytes += num
                self._filled += num
                if self._filled == len(self._payload):
                    frames.append(self._payload)
                    self._payload = None
        except BlockingIOError:
            pass
        return frames, False

    def _header_bytes_missing(self) -> int:
        if len(self._header) >= 4 and _SHORT.unpack_from(self._header)[0] == -1:
            return 12 - len(self._header)
        return 4 - len(self._header)

    def _maybe_start_payload(self, frames: list[bytearray]) -> None:
        if self._header_bytes_missing() > 0:
            return
        (size,) = _SHORT.unpack_from(self._header)
        if size == -1:
            (size,) = _LONG.unpack_from(self._header, 4)
        if size < 0 or size > self._max_frame_bytes:
            raise ProtocolError(f"frame length {size} is outside [0, {self._max_frame_bytes}]")
        self._header.clear()
        self._filled = 0
        if size == 0:
            frames.append(bytearray())
        else:
            # bytearray(n) is calloc'd: pages are only touched as data arrives.
            self._payload = bytearray(size)


class DriverEndpoint:
    """Driver side of one worker's pipe: async, never blocks the event loop.

    Must be created inside a running loop; takes ownership of ``conn`` (do not use it directly
    afterwards) and closes it in :meth:`close`.

    Args:
        conn: The driver's end of ``multiprocessing.Pipe(duplex=True)``.
        worker_name: Name used in errors, e.g. ``"collector-0"``.
        max_read_bytes_per_wakeup: Read budget per reader callback (keeps each callback short).
        max_frame_bytes: Larger length prefixes are a protocol error.
    """

    def __init__(
        self,
        conn: Connection,
        worker_name: str,
        *,
        max_read_bytes_per_wakeup: int = 4 << 20,
        max_frame_bytes: int = 16 << 30,
    ) -> None:
        self.worker_name = worker_name
        self._loop = asyncio.get_running_loop()
        self._conn = conn
        self._fd = conn.fileno()
        self._read_budget_bytes = max_read_bytes_per_wakeup
        self._assembler = _FrameAssembler(max_frame_bytes)
        self._inbox: asyncio.Queue[Message | TransportError] = asyncio.Queue()
        self._outbox: collections.deque[tuple[memoryview, asyncio.Future[None] | None]] = (
            collections.deque()
        )
        self._writer_registered = False
        self._gone: TransportError | None = None
        self._closed = False
        os.set_blocking(self._fd, False)
        self._loop.add_reader(self._fd, self._on_readable)

    async def recv(self, timeout: float | None = None) -> Message:
        """Waits for the next message from the worker.

        Args:
            timeout: Seconds to wait; ``None`` waits forever.

        Returns:
            The message.

        Raises:
            WorkerGone: The worker closed its end or died (raised again on every later call).
            ProtocolError: A frame did not decode to a valid message (names the worker).
            TimeoutError: Nothing arrived within ``timeout``.
        """
        async with asyncio.timeout(timeout):
            item = await self._inbox.get()
        if isinstance(item, Message):
            return item
        if item is self._gone:
            self._inbox.put_nowait(item)  # terminal: every later recv sees it too
        raise item

    async def send(self, msg: Message) -> None:
        """Queues ``msg`` and waits until it is written to the pipe.

        Raises:
            WorkerGone: The pipe is broken or the endpoint closed.
            CodecError: ``msg`` holds something that cannot be encoded.
        """
        if self._gone is not None:
            raise self._gone
        payload = encode(to_wire(msg))
        done: asyncio.Future[None] = self._loop.create_future()
        self._outbox.append((memoryview(frame_header(len(payload))), None))
        self._outbox.append((memoryview(payload), done))
        if not self._writer_registered:
            self._flush()
        await done

    async def expect_hello(self, timeout: float | None = None) -> Hello:
        """Receives the worker's first message and checks it is a hello of this protocol.

        Raises:
            ProtocolError: The first message is not a hello, or speaks another protocol version.
            WorkerGone: The worker died before saying hello.
            TimeoutError: No message within ``timeout`` seconds.
        """
        msg = await self.recv(timeout)
        if not isinstance(msg, Hello):
            raise ProtocolError(
                f"worker {self.worker_name!r}: first message must be 'hello', got {msg.TYPE!r}"
            )
        return msg

    def close(self) -> None:
        """Removes the fd callbacks, fails pending sends and receives, closes the connection."""
        if self._closed:
            return
        self._closed = True
        self._fail(WorkerGone(self.worker_name, "its endpoint was closed by the driver"))
        self._conn.close()

    def _on_readable(self) -> None:
        try:
            frames, eof = self._assembler.read(self._fd, self._read_budget_bytes)
        except ProtocolError as exc:
            self._fail(ProtocolError(f"worker {self.worker_name!r}: {exc}"))
            return
        except OSError as exc:
            frames, eof = [], True
            logger.debug("read from %s failed: %s", self.worker_name, exc)
        for frame in frames:
            self._deliver(frame)
        if eof:
            self._fail(WorkerGone(self.worker_name, "its pipe reached EOF (process exited?)"))

    def _deliver(self, frame: bytearray) -> None:
        try:
            self._inbox.put_nowait(from_wire(decode(frame)))
        except ProtocolError as exc:
            self._inbox.put_nowait(ProtocolError(f"worker {self.worker_name!r}: {exc}"))

    def _flush(self) -> None:
        while self._outbox:
            view, done = self._outbox[0]
            try:
                num = os.write(self._fd, view)
            except BlockingIOError:
                break
            except OSError as exc:
                self._fail(WorkerGone(self.worker_name, f"writing to its pipe failed: {exc}"))
                return
            if num < len(view):
                self._outbox[0] = (view[num:], done)
                continue
            self._outbox.popleft()
            if done is not None and not done.done():
                done.set_result(None)
        self._set_writer(bool(self._outbox))

    def _set_writer(self, wanted: bool) -> None:
        if wanted and not self._writer_registered:
            self._loop.add_writer(self._fd, self._flush)
        elif not wanted and self._writer_registered:
            self._loop.remove_writer(self._fd)
        self._writer_registered = wanted

    def _fail(self, error: TransportError) -> None:
        """Makes ``error`` terminal: stops fd callbacks and wakes every waiter with it."""
        if self._gone is not None:
            return
        self._gone = error
        if not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
            self._set_writer(False)
        while self._outbox:
            _, done = self._outbox.popleft()
            if done is not None and not done.done():
                done.set_exception(error)
                # Its sender may be gone (a KeyboardInterrupt raised inside it): marked as seen,
                # or asyncio logs "never retrieved" with a traceback as the process exits. A
                # sender still waiting gets the error all the same.
                done.exception()
        self._inbox.put_nowait(error)


class WorkerEndpoint:
    """Worker side of the pipe: plain blocking calls (the worker has nothing else to do).

    Args:
        conn: The worker's end of ``multiprocessing.Pipe(duplex=True)``.
    """

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def send(self, msg: Message) -> None:
        """Sends one message, blocking until the pipe took it.

        Raises:
            DriverGone: The driver closed its end.
            CodecError: ``msg`` holds something that cannot be encoded.
        """
        payload = encode(to_wire(msg))
        try:
            self._conn.send_bytes(payload)
        except (*_PEER_GONE_ERRORS, OSError) as exc:
            raise DriverGone(f"the driver's end of the pipe is closed: {exc}") from exc

    def recv(self, timeout: float | None = None) -> Message:
        """Receives one message; its arrays are read-only views of the received bytes.

        Args:
            timeout: Seconds to wait; ``None`` waits forever.

        Raises:
            DriverGone: The driver closed its end (or died).
            ProtocolError: The frame is not a valid message.
            TimeoutError: Nothing arrived within ``timeout``.
        """
        try:
            if timeout is not None and not self._conn.poll(timeout):
                raise TimeoutError(f"no message from the driver within {timeout} s")
            data = self._conn.recv_bytes()
        except (EOFError, *_PEER_GONE_ERRORS) as exc:
            raise DriverGone("the driver's end of the pipe is closed") from exc
        try:
            return from_wire(decode(data))
        except ProtocolError as exc:
            raise ProtocolError(f"from the driver: {exc}") from exc

    def close(self) -> None:
        """Closes the worker's end of the pipe."""
        self._conn.close()
