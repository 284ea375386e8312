"""A Ctrl-C during a search kernel's first call (numba compiles it then) is held until the call
returns, then raised: an interrupted compile left the kernel half registered and the run's
final checkpoint failed on it."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from zeropipe.interrupts import ctrl_c_held
from zeropipe.mcts.simulate import KernelCall


@pytest.fixture
def default_sigint() -> Iterator[None]:
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_in_a_kernels_first_call_is_raised_after_the_call(default_sigint):
    done: list[tuple] = []

    def compiling_kernel(*args: object) -> None:  # stands in for numba's first compile
        signal.raise_signal(signal.SIGINT)
        done.append(args)

    step = KernelCall(compiling_kernel, ("tree",))  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        step(1, 2)
    assert done == [(1, 2, "tree")]  # the call ran to its end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_where_sigint_is_ignored_nothing_is_held_or_raised(default_sigint):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with ctrl_c_held():
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_an_error_in_the_block_is_raised_and_the_handler_restored(default_sigint):
    with pytest.raises(ValueError), ctrl_c_held():
        signal.raise_signal(signal.SIGINT)
        raise ValueError("the block's own error")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
