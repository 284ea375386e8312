"""An import during which a Ctrl-C is held, then raised (the CLI's first import of torch).

Runs in: the CLI's process, main thread.
"""

from __future__ import annotations

import importlib

from zeropipe.interrupts import ctrl_c_held


def import_holding_ctrl_c(name: str) -> None:
    """Import module `name` with a Ctrl-C held until the import is done, then raised as
    KeyboardInterrupt. torch's import runs Python from C++ (pybind11): a KeyboardInterrupt raised
    in there can cross C++ that does not expect it, and the process aborts ("terminate called
    after throwing an instance of 'pybind11::error_already_set'", SIGABRT; seen in about one of
    a hundred Ctrl-Cs sent 0.3-1.0 s after start). Where SIGINT is ignored (a process started
    with it ignored) or handled by someone else's handler, the import runs as it is."""
    with ctrl_c_held():
        importlib.import_module(name)
