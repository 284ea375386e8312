"""Does the network that acts compute the function the learner trains? BatchNorm's two modes.

Runs in: driver, every `CHECK_EVERY` learner steps of a network with BatchNorm layers. The
learner runs the network in train mode: each BatchNorm normalises with the statistics of the
batch in front of it, separately at the root and at every unroll step. Actors, evaluators and
the bootstrap values run it in eval mode, on running statistics averaged over all those calls.
Where the unrolled latents drift away from the encoded ones, that average fits neither, and the
acting network stops being the trained one. Pong MuZero with BatchNorm (docs/policies/muzero.md), at
learner step 7,989: root values 0.00 ± 0.00 in eval mode against −0.13 ± 0.27 in train mode,
policies 0.96 nats apart; its bootstrap values stayed near 0, so its value targets never grew past
the 5-step rewards. CartPole and MinAtar MuZero with BatchNorm stay within a few percent.

The check compares the two modes' root values on the batch's observations, leaves the running
statistics and the torch RNG as they were (the run's trajectory does not change), and warns
once per run when they disagree.
"""

from __future__ import annotations

import logging

import torch

from zeropipe.models.blocks import has_batch_norm
from zeropipe.models.support import logits_to_scalar

log = logging.getLogger(__name__)

CHECK_EVERY = 500  # learner steps
WARN_GAP = 0.5  # mean |v_train - v_eval| over mean |v_train|


@torch.no_grad()
def value_mode_gap(network: torch.nn.Module, obs: torch.Tensor) -> float:
    """Mean |train-mode − eval-mode root value| over the mean |train-mode root value| (plus
    1e-3), on observations `obs` [B, *input]; 0 for a network whose modes agree.

    The train-mode pass would move the running statistics and a dropout layer would draw from
    the torch RNG: both are put back as they were.
    """
    was_training = network.training
    buffers = {name: b.clone() for name, b in network.named_buffers()}
    rng = torch.get_rng_state()
    # dropout on a GPU draws from that device's generator (not testable on a CPU-only machine)
    cuda_rng = torch.cuda.get_rng_state(obs.device) if obs.device.type == "cuda" else None
    try:
        values = []
        for train in (True, False):
            network.train(train)
            out = network.initial_inference(obs)
            values.append(logits_to_scalar(out.value_logits.float(), network.value_support))
    finally:
        for name, b in network.named_buffers():
            b.copy_(buffers[name])
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state(cuda_rng, obs.device)
        network.train(was_training)
    trained, acting = values
    return float((trained - acting).abs().mean() / (trained.abs().mean() + 1e-3))


class ModeCheck:
    """Every `CHECK_EVERY` learner steps, the value gap of a BatchNorm network; one warning."""

    def __init__(self, network: torch.nn.Module, every: int = CHECK_EVERY) -> None:
        self.enabled = has_batch_norm(network)
        self.every = every
        self.warned = False
        self.last_gap: float | None = None

    def after_step(self, network: torch.nn.Module, obs: torch.Tensor, train_iter: int) -> None:
        """Check at every `every`-th learner step (does nothing on other steps)."""
        if not self.enabled or train_iter % self.every:
            return
        self.last_gap = gap = value_mode_gap(network, obs)
        log.debug("learner step %d: train/eval-mode value gap %.3f", train_iter, gap)
        if gap > WARN_GAP and not self.warned:
            self.warned = True
            log.warning(
                "learner step %d: the network in eval mode (what acts, evaluates and computes "
                "the bootstrap values) gives root values %.0f%% off the train-mode ones the "
                "learner fits: its BatchNorm running statistics no longer fit the batches. "
                "model.norm_type: LN has no running statistics (docs/policies/muzero.md)",
                train_iter,
                100 * gap,
            )
