"""The search's model step as one TorchScript graph (`policy.actor_inference: frozen | traced`).

Runs in: collector, evaluator, driver (reanalysis). A search calls the network once per
simulation; with a small network almost all of that call is per-op Python and dispatch
overhead, not arithmetic (issue 26: a 50-simulation, B=8 CartPole search was 22 ms, nearly all
network calls). Tracing `recurrent_inference`, the transition reward and the value's scalar
conversion into one graph runs the same ops without the Python in between.

An earlier measurement (CartPole MuZero, B=8, one thread, a busy machine): eager 2.0 ms, traced
0.77 ms, traced and frozen 0.54 ms per step; ONNX Runtime was about the frozen graph's speed.
The plain trace keeps the module's parameters (the same tensors), so a `load_state_dict` or an
optimizer step is seen by the next call with nothing redone.
`torch.jit.trace` is deprecated in torch 2.13 (a warning we silence here): if a later torch
drops it, or any network's trace fails or disagrees with eager, the step runs eagerly and says
so once.

`policy.actor_inference: frozen` (the default) also freezes the trace once the weights stay put:
`torch.jit.freeze` makes the parameters constants and folds each batch norm into the linear or conv
before it, which drops the graph's ~70 attribute reads and its batch norms (CartPole MuZero, B=8,
one thread, quiet: 136 µs per step traced, 91 µs frozen; freezing took 18 ms, and 39 ms for Pong
MuZero, whose step it did not speed up). A frozen graph does not see later weight changes, so every
search starts by comparing a mark of the weights (each parameter's and buffer's identity, storage
and version counter, which every in-place write bumps: an optimizer step, `load_state_dict`, batch
norm's running statistics) with the frozen graph's: on a change the search runs on the live trace,
and the graph is frozen again at the next search that finds the same weights. A run whose weights
change before every search (reanalysis under a soft target update) so never pays for a freeze.

Only networks that declare `TRACEABLE_STEP = True` are traced: their step must be a pure
function of (latent, action) — no caches (UniZero's KV cache, the history network's state).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import torch
from torch import Tensor

from zeropipe.mcts import StepOutput
from zeropipe.models import Network, logits_to_scalar

log = logging.getLogger("zeropipe.search")

# |traced - eager| allowed at the check, relative to the output's scale (same ops, same order:
# in practice the two agree to the last bit or within float32 rounding)
CHECK_TOLERANCE = 1e-4


class _Step(torch.nn.Module):
    """(latent, action) -> (next latent, reward, value, policy logits): the search's step."""

    def __init__(self, network: Network) -> None:
        super().__init__()
        self.network = network

    def forward(self, latent: Tensor, action: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        net = self.network
        out = net.recurrent_inference(latent, action)
        reward = _float(net.transition_reward(latent, out))
        value = logits_to_scalar(_float(out.value_logits), net.value_support)
        return out.latent, reward, value, _float(out.policy_logits)


def _float(x: Tensor) -> Tensor:
    """`x` as float32, recording no op in the trace where it is float32 already."""
    return x if x.dtype == torch.float32 else x.float()


class TracedStep:
    """The step, traced at its first call (in eval mode, under no_grad) and checked against
    eager on that call's inputs and on a batch of another size; with `freeze`, frozen per
    weights version as the module docstring says.

    Args:
        network: the search's network; only `TRACEABLE_STEP` networks are traced.
        freeze: freeze the trace while the weights stay put (`actor_inference: frozen`).
    """

    def __init__(self, network: Network, freeze: bool = False) -> None:
        self.step = _Step(network)
        self.graph: torch.jit.ScriptModule | None = None
        self.enabled = bool(getattr(network, "TRACEABLE_STEP", False))
        self.freeze = freeze
        self.frozen: torch.jit.ScriptModule | None = None
        self._mark: tuple | None = None  # the weights seen at the last search's start
        self._checked = False  # the first frozen graph is checked against the live trace

    def begin_search(self) -> None:
        """A search starts: drop a frozen graph whose weights changed; freeze the trace when
        the weights are those the previous search started with."""
        if not (self.freeze and self.enabled):
            return
        mark = _weights_mark(self.step)
        if mark != self._mark:
            self.frozen, self._mark = None, mark
        elif self.frozen is None and self.graph is not None:
            self.frozen = self._freeze()

    def __call__(self, latent: Tensor, action: Tensor) -> StepOutput | None:
        """The step's output, or None where it runs eagerly (not traceable, or the trace
        failed its check)."""
        if not self.enabled or not isinstance(latent, Tensor):
            return None
        if self.graph is None:
            self.graph = self._trace(latent, action)
            if self.graph is None:
                self.enabled = False
                return None
        if self.frozen is not None and not self._checked:
            self._check_frozen(latent, action)
        graph = self.frozen if self.frozen is not None else self.graph
        next_latent, reward, value, logits = graph(latent, action)
        return StepOutput(
            latent=next_latent,
            reward=reward.cpu().numpy(),
            value=value.cpu().numpy(),
            policy_logits=logits.cpu().numpy(),
        )

    def _trace(self, latent: Tensor, action: Tensor) -> torch.jit.ScriptModule | None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecation, and the tracer's own notes
                graph = torch.jit.trace(self.step, (latent, action), check_trace=False)
            # another batch size: a size baked into the graph would show here
            other = (torch.cat([latent, latent[:1]]), torch.cat([action, action[:1]]))
            for args in ((latent, action), other):
                _check(graph(*args), self.step(*args))
        except Exception as exc:  # any failure means: run eagerly
            log.warning("the search step runs eagerly: tracing it failed (%s)", exc)
            return None
        return graph

    def _freeze(self) -> torch.jit.ScriptModule | None:
        assert self.graph is not None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return torch.jit.freeze(self.graph.eval())
        except Exception as exc:  # the live trace still works: keep it
            log.warning("the search step is not frozen: freezing it failed (%s)", exc)
            self.freeze = False
            return None

    def _check_frozen(self, latent: Tensor, action: Tensor) -> None:
        """The first frozen graph must agree with eager (folding only rounds differently)."""
        assert self.frozen is not None
        self._checked = True
        try:
            _check(self.frozen(latent, action), self.step(latent, action))
        except Exception as exc:
            log.warning("the search step is not frozen: the frozen graph failed a check (%s)", exc)
            self.frozen, self.freeze = None, False


def _weights_mark(module: torch.nn.Module) -> tuple:
    """Identity, storage and version counter of every parameter and buffer: equal marks mean
    the same weights (an in-place write bumps the version; a replaced tensor or `.data` changes
    the identity or the storage)."""
    return tuple(
        (id(t), t.data_ptr(), t._version) for t in (*module.parameters(), *module.buffers())
    )


def _check(traced: tuple[Tensor, ...], eager: tuple[Tensor, ...]) -> None:
    """Raise where the traced outputs differ from eager's (shape, or beyond the tolerance)."""
    for got, want in zip(traced, eager, strict=True):
        if got.shape != want.shape:
            raise ValueError(f"traced shape {tuple(got.shape)} != eager {tuple(want.shape)}")
        scale = float(want.abs().max()) + 1.0
        diff = float((got.float() - want.float()).abs().max())
        if not np.isfinite(diff) or diff > CHECK_TOLERANCE * scale:
            raise ValueError(f"traced output differs from eager by {diff:.3g}")
