"""The search's model step as one TorchScript graph (`policy.actor_inference: frozen | traced`).

Runs in: collector, evaluator, driver (reanalysis). A search calls the network once per
simulation; with a small network almost all of that call is per-op Python and dispatch
overhead, not arithmetic (measured: a 50-simulation, B=8 CartPole search was 22 ms, nearly all
network calls). Tracing `recurrent_inference`, the transition reward and the value's scalar
conversion into one graph runs the same ops without the Python in between (algos/graphs.py).

An earlier measurement (CartPole MuZero, B=8, one thread, a busy machine): eager 2.0 ms, traced
0.77 ms, traced and frozen 0.54 ms per step; ONNX Runtime was about the frozen graph's speed.
`frozen` (also what `compiled`, the default, runs wherever its compiled loop cannot:
algos/compiled_search.py) freezes the trace while the weights stay put, which drops the graph's ~70
attribute reads and its batch norms (CartPole MuZero, B=8, one thread, quiet: 136 µs per step
traced, 91 µs frozen; freezing took 18 ms, and 39 ms for Pong MuZero, whose step it did not
speed up); every search starts by asking whether the weights changed (`FrozenGraph.begin`).

Only networks that declare `TRACEABLE_STEP = True` are traced: their step must be a pure
function of (latent, action) — no caches (UniZero's KV cache, the history network's state).
"""

from __future__ import annotations

import torch
from torch import Tensor

from zeropipe.algos.graphs import FrozenGraph
from zeropipe.mcts import StepOutput
from zeropipe.models import Network, logits_to_scalar

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
        if hasattr(net, "search_scalars"):  # the reward and value decoded together
            reward, value = net.search_scalars(latent, out)
        else:
            reward = net.transition_reward(latent, out)
            value = logits_to_scalar(as_float(out.value_logits), net.value_support)
        return out.latent, as_float(reward), as_float(value), as_float(out.policy_logits)


def as_float(x: Tensor) -> Tensor:
    """`x` as float32, recording no op in a trace where it is float32 already."""
    return x if x.dtype == torch.float32 else x.float()


class TracedStep:
    """The step as a `FrozenGraph`, traced at its first call (in eval mode, under no_grad).

    Args:
        network: the search's network; only `TRACEABLE_STEP` networks are traced.
        freeze: freeze the trace while the weights stay put (`actor_inference: frozen`).
    """

    def __init__(self, network: Network, freeze: bool = False) -> None:
        self.step = _Step(network)
        self.graph = FrozenGraph(self.step, freeze, CHECK_TOLERANCE, "the search step")
        self.graph.enabled = bool(getattr(network, "TRACEABLE_STEP", False))

    @property
    def enabled(self) -> bool:
        """False where the step runs eagerly (not traceable, or the trace failed its check)."""
        return self.graph.enabled

    @property
    def frozen(self) -> torch.jit.ScriptModule | None:
        """The frozen graph in use, if any."""
        return self.graph.frozen

    def state_dict(self) -> dict[str, bool]:
        """Whether the next search runs the frozen graph (`FrozenGraph.state_dict`)."""
        return self.graph.state_dict()

    def load_state_dict(self, state: dict[str, bool]) -> None:
        """Restore a `state_dict()`, after the network's weights."""
        self.graph.load_state_dict(state)

    def begin_search(self) -> tuple | None:
        """A search starts (see `FrozenGraph.begin`); returns the weights' mark it took."""
        return self.graph.begin()

    def tensors(self, latent: Tensor, action: Tensor) -> tuple[Tensor, ...] | None:
        """(next latent, reward, value, policy logits) as float32 tensors, or None where the
        step runs eagerly (a `mcts.contract.TensorStep`)."""
        return self.graph(latent, action)

    def __call__(self, latent: Tensor, action: Tensor) -> StepOutput | None:
        """The step's output, or None where it runs eagerly."""
        if not isinstance(latent, Tensor):
            return None
        out = self.graph(latent, action)
        if out is None:
            return None
        return step_output(*out)


def step_output(latent: Tensor, reward: Tensor, value: Tensor, logits: Tensor) -> StepOutput:
    """The graph's outputs as the search's `StepOutput`: the scalars and logits as numpy arrays
    (on the CPU views of the same memory, with no `.cpu()` call: that call alone costs about
    as much as the view, three times per simulation)."""
    if latent.is_cpu:
        return StepOutput(latent, reward.numpy(), value.numpy(), logits.numpy())
    return StepOutput(latent, reward.cpu().numpy(), value.cpu().numpy(), logits.cpu().numpy())
