"""UniZero's output clips: the encoder clip and the head clip, by weight scaling, as a mixin of
the unizero section.

Runs in: driver (the learner's loss). Neither clips a tensor. After the loss's forward pass the
largest L2 norm of the batch's observation tokens (encoder clip), or the largest |logit| of one
head's outputs over the batch (head clip), is compared with a threshold; when it is larger, the
parameters that produce it are multiplied by threshold / largest once, after the backward pass
and before the optimizer step (`WeightScale`), as the reference's unizero policy
(policy/unizero.py:1571-1620 at the pinned commit; the head clip:
policy/head_clip_manager.py:184-357). The threshold may anneal from a start to an end value over
learner steps (`annealed_threshold`). Both are off by default, as in the reference.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import Field

from zeropipe.algos.losses import WeightScale
from zeropipe.config import Section

AnnealType = Literal["cosine", "linear"]
HeadName = Literal["policy", "value", "reward"]


def annealed_threshold(
    anneal_type: AnnealType, start: float, end: float, anneal_steps: int, train_iter: int
) -> float:
    """The clip threshold at learner step `train_iter` (counted from 0), with
    p = min(1, train_iter / anneal_steps): cosine end + (start − end)·½(1 + cos πp), linear
    start·(1 − p) + end·p (policy/unizero.py:1573-1586, policy/head_clip_manager.py:150-182)."""
    progress = min(1.0, train_iter / anneal_steps)
    if anneal_type == "cosine":
        return end + (start - end) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return start * (1.0 - progress) + end * progress


class HeadClipSchedule(Section):
    """One head's clip threshold (the reference's `HeadClipConfig`, whose defaults these are,
    policy/head_clip_manager.py:29-54)."""

    clip_threshold: float = Field(
        15.0, gt=0.0, description="The fixed max |logit| when use_annealing is off."
    )
    use_annealing: bool = Field(
        True, description="Anneal the threshold from start_value to end_value."
    )
    anneal_type: AnnealType = Field("cosine", description="Annealing: cosine or linear.")
    start_value: float = Field(30.0, gt=0.0, description="Annealing: the threshold at step 0.")
    end_value: float = Field(
        10.0, gt=0.0, description="Annealing: the threshold from anneal_steps on."
    )
    anneal_steps: int = Field(500000, ge=1, description="Annealing: learner steps it takes.")

    def threshold(self, train_iter: int) -> float:
        """The max |logit| at learner step `train_iter`."""
        if not self.use_annealing:
            return self.clip_threshold
        return annealed_threshold(
            self.anneal_type, self.start_value, self.end_value, self.anneal_steps, train_iter
        )


class HeadClipConfig(Section):
    """Which heads the head clip watches and each one's threshold (the reference's
    `head_clip_config`, policy/unizero.py:604-631)."""

    enabled_heads: list[HeadName] = Field(
        default_factory=list,
        description="The heads clipped when use_head_clip is on: policy, value, reward.",
    )
    policy: HeadClipSchedule = Field(
        default_factory=HeadClipSchedule, description="The policy head's threshold."
    )
    value: HeadClipSchedule = Field(
        default_factory=HeadClipSchedule, description="The value head's threshold."
    )
    reward: HeadClipSchedule = Field(
        default_factory=HeadClipSchedule, description="The reward head's threshold."
    )
    monitor_freq: int = Field(
        1, ge=1, description="The heads are checked at learner steps that are multiples of it."
    )


class OutputClipOptions(Section):
    """A mixin of the unizero section: the encoder clip and the head clip."""

    use_encoder_clip_annealing: bool = Field(
        False,
        description="Encoder clip with an annealed threshold: after the forward pass, when the "
        "largest L2 norm of the batch's observation tokens (every sample and step) exceeds the "
        "threshold c, the tokenizer's final LayerNorm weight and bias (with SimNorm, which has "
        "none: every tokenizer parameter) are multiplied by c / that norm before the optimizer "
        "step, as the reference's unizero policy (policy/unizero.py:1571-1613, :265-290; off "
        "by default, :587-602; its Atari segment config's switch turns it on).",
    )
    encoder_clip_anneal_type: AnnealType = Field(
        "cosine",
        description="Encoder clip annealing: cosine, c = end + (start − end)·½(1 + cos πp), or "
        "linear, c = start·(1 − p) + end·p, with p = min(1, learner step / anneal_steps).",
    )
    encoder_clip_start_value: float = Field(
        30.0, gt=0.0, description="Encoder clip annealing: c at learner step 0 (reference: 30)."
    )
    encoder_clip_end_value: float = Field(
        10.0, gt=0.0, description="Encoder clip annealing: c from anneal_steps on (10)."
    )
    encoder_clip_anneal_steps: int = Field(
        100000, ge=1, description="Encoder clip annealing: learner steps it takes (100,000)."
    )
    latent_norm_clip_threshold: float = Field(
        0.0,
        ge=0.0,
        description="Encoder clip with a fixed threshold c when use_encoder_clip_annealing is "
        "off; 0 (the default) turns the encoder clip off.",
    )
    use_head_clip: bool = Field(
        False,
        description="Head clip: at learner steps that are multiples of head_clip.monitor_freq, "
        "for each head of head_clip.enabled_heads whose largest |logit| over the batch (every "
        "sample, step and output) exceeds its threshold c, every parameter of that head is "
        "multiplied by c / that value before the optimizer step, as the reference's "
        "`HeadClipManager` (policy/head_clip_manager.py:184-357; off by default, "
        "policy/unizero.py:607).",
    )
    head_clip: HeadClipConfig = Field(
        default_factory=HeadClipConfig, description="Head clip: the heads and their thresholds."
    )

    def encoder_clip_threshold(self, train_iter: int) -> float:
        """The encoder clip's c at learner step `train_iter`; 0 when the clip is off."""
        if not self.use_encoder_clip_annealing:
            return self.latent_norm_clip_threshold
        return annealed_threshold(
            self.encoder_clip_anneal_type,
            self.encoder_clip_start_value,
            self.encoder_clip_end_value,
            self.encoder_clip_anneal_steps,
            train_iter,
        )

    def output_clips(
        self, net, tokens: torch.Tensor, out, train_iter: int
    ) -> tuple[tuple[WeightScale, ...], dict[str, torch.Tensor]]:
        """The weight scales of both clips at learner step `train_iter`, and their metrics.

        Args:
            net: the UniZeroNetwork being trained.
            tokens: the observation tokens of the loss's forward pass.  # [B, K, E]
            out: its `SequenceOutput` (policy, value and reward logits [B, K, ...]).
            train_iter: the learner step, from 0.

        Returns:
            The scales to apply (none when nothing exceeds its threshold) and the observed
            maxima and thresholds as metrics.
        """
        scales: list[WeightScale] = []
        metrics: dict[str, torch.Tensor] = {}
        threshold = self.encoder_clip_threshold(train_iter)
        if threshold > 0.0:
            largest = float(tokens.detach().norm(dim=-1).max())
            scales += _scale(_final_norm_params(net.tokenizer), largest, threshold)
            metrics["encoder_clip_max_latent_norm"] = torch.tensor(largest)
            metrics["encoder_clip_threshold"] = torch.tensor(threshold)
        if self.use_head_clip and train_iter % self.head_clip.monitor_freq == 0:
            for name in dict.fromkeys(self.head_clip.enabled_heads):
                head, logits = _HEADS[name](net, out)
                c = getattr(self.head_clip, name).threshold(train_iter)
                largest = float(logits.detach().abs().max())
                scales += _scale(tuple(head.parameters()), largest, c)
                metrics[f"head_clip_{name}_max_logit"] = torch.tensor(largest)
                metrics[f"head_clip_{name}_threshold"] = torch.tensor(c)
        return tuple(scales), metrics


def _scale(
    params: tuple[torch.nn.Parameter, ...], largest: float, threshold: float
) -> list[WeightScale]:
    """[WeightScale(params, threshold / largest)] when `largest` exceeds the threshold, else []."""
    if largest > threshold:
        return [WeightScale(params, threshold / largest)]
    return []


def _final_norm_params(tokenizer: torch.nn.Module) -> tuple[torch.nn.Parameter, ...]:
    """The trainable parameters of the tokenizer's final norm, or, when it has none (SimNorm),
    every trainable tokenizer parameter: the reference's `scale_encoder_final_norm` and its
    fallback `scale_module_weights_vectorized` (policy/unizero.py:244-290, :1608-1613). A
    LayerNorm's weight and bias scaled by s scale its output by exactly s."""
    norm = tuple(p for p in tokenizer.norm.parameters() if p.requires_grad)
    return norm or tuple(p for p in tokenizer.parameters() if p.requires_grad)


# head name -> (its module, its logits in the loss's forward pass); the reference's
# `head_module_mapping` and `logits_key_mapping` (policy/head_clip_manager.py:100-115)
_HEADS = {
    "policy": lambda net, out: (net.policy_head, out.policy_logits),
    "value": lambda net, out: (net.value_head, out.value_logits),
    "reward": lambda net, out: (net.reward_head, out.reward_logits),
}
