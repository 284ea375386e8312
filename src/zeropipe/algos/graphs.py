"""A module's forward pass as a TorchScript graph: traced at its first call and checked against
eager, frozen while the weights stay put (`policy.actor_inference`).

Runs in: collector, evaluator, driver (the search's step, algos/traced_step.py; the learner's
bootstrap values, algos/targets.py). With small tensors almost all of a forward pass is per-op
Python and dispatch overhead; a trace runs the same ops without the Python in between. Freezing
it (`torch.jit.freeze`) makes the parameters constants and folds each batch norm into the
linear or conv before it, and under autocast it casts the weights once instead of per call.

A frozen graph does not see later weight changes, so the owner calls `begin()` before each use
(a search, a learner step): it compares a mark of the weights (each parameter's and buffer's
identity, storage and version counter, which every in-place write bumps: an optimizer step,
`load_state_dict`, batch norm's running statistics) with the last one. On a change the live
trace runs (it shares the module's parameters, so it is always current), and the graph is
frozen again at the next `begin()` that finds the same weights: weights that change before
every use (a soft target update) never pay for a freeze. Frozen and live graphs round
differently, so which one a use runs is part of a run's state: `state_dict()` says whether the
next use would run frozen (its weights unchanged since the last `begin()`), and a resumed run
freezes as soon as it has traced, so a resume is the run never stopped. `torch.jit.trace` is
deprecated in torch 2.13 (a warning silenced here): if a trace or freeze fails or disagrees
with eager, the module runs eagerly (the call returns None) and says so once.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

log = logging.getLogger("zeropipe.search")


class FrozenGraph:
    """`module`'s forward pass as a checked trace, frozen per weights version with `freeze`.

    Args:
        module: a pure function of its tensor arguments (no caches), returning a tuple of
            tensors; batched along the first axis of every argument.
        freeze: freeze the trace while the weights stay put.
        tolerance: |graph − eager| allowed at the checks, relative to the output's scale + 1.
        what: names the module in the log.
    """

    def __init__(self, module: torch.nn.Module, freeze: bool, tolerance: float, what: str) -> None:
        self.module = module
        self._modules = tuple(module.modules())  # whose tensors `weights_mark` reads
        self.freeze = freeze
        self.tolerance = tolerance
        self.what = what
        self.enabled = True
        self.graph: torch.jit.ScriptModule | None = None
        self.frozen: torch.jit.ScriptModule | None = None
        self._mark: tuple | None = None  # the weights seen at the last begin()
        self._checked = False  # the first frozen graph is checked against eager
        self._restored_frozen = False  # a checkpoint's next use ran frozen (load_state_dict)
        self._freeze_at_trace = False  # freeze as soon as the first trace exists

    def begin(self) -> tuple | None:
        """Before a use: drop a frozen graph whose weights changed; freeze the trace when the
        weights are those the previous use started with. Returns the weights' mark it took
        (`weights_mark`), or None where it took none (not freezing, or disabled)."""
        if not (self.freeze and self.enabled):
            return None
        mark = weights_mark(self._modules)
        if self._restored_frozen:  # the weights just restored are those of the saved last use
            self._restored_frozen, self._mark = False, mark
            self._freeze_at_trace = self.graph is None
        if mark != self._mark:
            self.frozen, self._mark, self._freeze_at_trace = None, mark, False
        elif self.frozen is None and self.graph is not None:
            self.frozen = self._freeze()
        return mark

    def state_dict(self) -> dict[str, bool]:
        """Whether the next use runs the frozen graph (the weights unchanged since the last
        `begin()`, and traced), as plain data for a checkpoint."""
        if not (self.freeze and self.enabled):
            return {"frozen_next": False}
        if self._restored_frozen:  # restored and not used since
            return {"frozen_next": True}
        unchanged = self._mark is not None and self._mark == weights_mark(self._modules)
        traced = self.graph is not None or self._freeze_at_trace
        return {"frozen_next": unchanged and traced}

    def load_state_dict(self, state: dict[str, bool]) -> None:
        """Restore a `state_dict()`, after the module's weights: the first use after it runs
        frozen where the saved run's next use would have (a graph frozen from the same weights
        computes the same; a live trace rounds differently)."""
        self._restored_frozen = bool(state["frozen_next"])

    def __call__(self, *args: Tensor) -> tuple[Tensor, ...] | None:
        """The module's outputs, or None where it runs eagerly (the trace failed its check)."""
        if not self.enabled:
            return None
        if self.graph is None:
            self.graph = self._trace(args)
            if self.graph is None:
                self.enabled = False
                return None
            if self._freeze_at_trace:
                self._freeze_at_trace = False
                self.frozen = self._freeze()
        if self.frozen is not None and not self._checked:
            self._check_frozen(args)
        graph = self.frozen if self.frozen is not None else self.graph
        return graph(*args)

    def _trace(self, args: tuple[Tensor, ...]) -> torch.jit.ScriptModule | None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecation, and the tracer's own notes
                graph = torch.jit.trace(self.module, args, check_trace=False)
            # another batch size: a size baked into the graph would show here
            other = tuple(torch.cat([a, a[:1]]) for a in args)
            for inputs in (args, other):
                self._check(graph(*inputs), self.module(*inputs))
        except Exception as exc:  # any failure means: run eagerly
            log.warning("%s runs eagerly: tracing it failed (%s)", self.what, exc)
            return None
        return graph

    def _freeze(self) -> torch.jit.ScriptModule | None:
        assert self.graph is not None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return torch.jit.freeze(self.graph.eval())
        except Exception as exc:  # the live trace still works: keep it
            log.warning("%s is not frozen: freezing it failed (%s)", self.what, exc)
            self.freeze = False
            return None

    def _check_frozen(self, args: tuple[Tensor, ...]) -> None:
        """The first frozen graph must agree with eager (folding only rounds differently)."""
        assert self.frozen is not None
        self._checked = True
        try:
            self._check(self.frozen(*args), self.module(*args))
        except Exception as exc:
            log.warning("%s is not frozen: the frozen graph failed a check (%s)", self.what, exc)
            self.frozen, self.freeze = None, False

    def _check(self, got: tuple[Tensor, ...], want: tuple[Tensor, ...]) -> None:
        """Raise where the graph's outputs differ from eager's (shape, or beyond tolerance)."""
        for a, b in zip(got, want, strict=True):
            if a.shape != b.shape:
                raise ValueError(f"graph shape {tuple(a.shape)} != eager {tuple(b.shape)}")
            scale = float(b.abs().max()) + 1.0
            diff = float((a.float() - b.float()).abs().max())
            if not np.isfinite(diff) or diff > self.tolerance * scale:
                raise ValueError(f"graph output differs from eager by {diff:.3g}")


def weights_mark(modules: Sequence[torch.nn.Module]) -> tuple:
    """Identity, storage and version counter of every parameter and buffer of `modules` (a
    module's `modules()`, listed once): equal marks mean the same weights (an in-place write
    bumps the version; a replaced tensor or `.data` changes the identity or the storage).

    Reads each module's own tensors rather than `Module.parameters()`, whose recursive walk
    of the submodules cost about 3/4 of the mark (CartPole MuZero: ~240 µs against ~65 µs a
    search, a busy machine), and the mark is taken at every search; the list of submodules is
    fixed when the graph is traced, so a module's replaced tensor still shows."""
    return tuple(
        (id(t), t.data_ptr(), t._version)
        for m in modules
        for t in (*m._parameters.values(), *m._buffers.values())
        if t is not None
    )
