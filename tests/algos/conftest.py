"""Fixtures of the algos tests: tiny networks on one torch thread (tests/learner/conftest.py)."""

from tests.learner.conftest import one_torch_thread

__all__ = ["one_torch_thread"]
