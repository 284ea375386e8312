"""The search's model step as one TorchScript graph (`policy.actor_inference: traced`).

Runs in: collector, evaluator, driver (reanalysis). A search calls the network once per
simulation; with a small network almost all of that call is per-op Python and dispatch
overhead, not arithmetic (issue 26: a 50-simulation, B=8 CartPole search was 22 ms, nearly all
network calls). Tracing `recurrent_inference`, the transition reward and the value's scalar
conversion into one graph runs the same ops without the Python in between.

Measured on the CartPole MuZero network, B=8, one thread, one sitting (issue 26 note): eager
2.0 ms, traced 0.77 ms, traced and frozen 0.54 ms per step; ONNX Runtime was about the frozen
graph's speed. A frozen graph bakes the weights in and would have to be traced again after every
weight load (0.35 s); the plain trace keeps the module's parameters (the same tensors), so a
`load_state_dict` or an optimizer step is seen by the next call with nothing redone.
`torch.jit.trace` is deprecated in torch 2.13 (a warning we silence here): if a later torch
drops it, or any network's trace fails or disagrees with eager, the step runs eagerly and says
so once.

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
        reward = net.transition_reward(latent, out).float()
        value = logits_to_scalar(out.value_logits.float(), net.value_support)
        return out.latent, reward, value, out.policy_logits.float()


class TracedStep:
    """The step, traced at its first call (in eval mode, under no_grad) and checked against
    eager on that call's inputs and on a batch of another size.

    Args:
        network: the search's network; only `TRACEABLE_STEP` networks are traced.
    """

    def __init__(self, network: Network) -> None:
        self.step = _Step(network)
        self.graph: torch.jit.ScriptModule | None = None
        self.enabled = bool(getattr(network, "TRACEABLE_STEP", False))

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
        next_latent, reward, value, logits = self.graph(latent, action)
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


def _check(traced: tuple[Tensor, ...], eager: tuple[Tensor, ...]) -> None:
    """Raise where the traced outputs differ from eager's (shape, or beyond the tolerance)."""
    for got, want in zip(traced, eager, strict=True):
        if got.shape != want.shape:
            raise ValueError(f"traced shape {tuple(got.shape)} != eager {tuple(want.shape)}")
        scale = float(want.abs().max()) + 1.0
        diff = float((got.float() - want.float()).abs().max())
        if not np.isfinite(diff) or diff > CHECK_TOLERANCE * scale:
            raise ValueError(f"traced output differs from eager by {diff:.3g}")
