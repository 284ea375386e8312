"""Work during which a Ctrl-C is held, then raised once the work is done.

Runs in: any process; it holds only in the main thread (the only one Python's handlers run in).
Two kinds of work must not be cut by a KeyboardInterrupt: torch's first import (Python run from
C++ through pybind11: an exception crossing C++ that does not expect it aborts the process) and
numba's first compile of a kernel (an interrupted compile leaves the kernel's dispatcher half
registered: the next call, the final checkpoint's or the evaluation's, raised a KeyError naming
the kernel's signature, and a stopped run ended as a failed one). A SIGTERM is held too where the
CLI turns it into a Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Run the block with SIGINT recorded instead of raised; raise KeyboardInterrupt after it.

    Where SIGINT is ignored (a process started with it ignored, a worker) or handled by someone
    else's handler (an embedding application), or off the main thread, the block runs as it is.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if held:
        raise KeyboardInterrupt
