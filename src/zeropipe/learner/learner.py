"""The learner: one optimisation step per sampled batch, target-network updates, state for resume.

Runs in: driver. `Learner.step(batch)` computes targets with the target network, the K-step
unroll loss weighted per sample by the PER importance weights, clips the gradient, scales the
weights the loss asks to scale (`UnrollLoss.weight_scales`: UniZero's output clips), takes the
optimizer step, updates the target network, and returns metrics and new priorities. Every 500
steps it checks that the network in eval mode (what acts and bootstraps) still computes the
trained one (`mode_check`: BatchNorm's running statistics).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zeropipe.algos.losses import WeightScale
from zeropipe.algos.observation import to_tensor
from zeropipe.algos.registry import algorithm
from zeropipe.algos.targets import PolicyWriteback, TargetComputer
from zeropipe.buffer import ReplayBatch
from zeropipe.config import PolicyConfig
from zeropipe.learner.mode_check import ModeCheck
from zeropipe.learner.param_groups import reference_groups
from zeropipe.learner.precision import resolve_autocast
from zeropipe.models import Network
from zeropipe.models.non_finite import NonFiniteError


@dataclass(frozen=True)
class StepResult:
    """What one learner step returns to the pipeline."""

    metrics: dict[str, float]
    priorities: np.ndarray  # [B] new priorities for the sampled roots
    writeback: PolicyWriteback | None  # reanalysed policy targets for the buffer


def build_optimizer(network: torch.nn.Module, cfg: PolicyConfig) -> torch.optim.Optimizer:
    """SGD / Adam / AdamW from the policy config; AdamW in the reference's parameter groups
    where `optimizer_groups` is 'reference' and the type has a rule (learner/param_groups.py)."""
    params = network.parameters()
    if cfg.optim_type == "SGD":
        return torch.optim.SGD(
            params, lr=cfg.learning_rate, momentum=cfg.momentum, weight_decay=cfg.weight_decay
        )
    if cfg.optim_type == "Adam":
        return torch.optim.Adam(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    rule = type(cfg).REFERENCE_ADAMW
    if cfg.optimizer_groups == "reference" and rule is not None:
        return torch.optim.AdamW(
            lr=cfg.learning_rate, **reference_groups(network, rule, cfg.weight_decay)
        )
    return torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)


def lr_factor(cfg: PolicyConfig, train_iter: int) -> float:
    """Multiplier of the initial learning rate at `train_iter`."""
    thr = cfg.threshold_training_steps_for_final_lr
    if cfg.lr_schedule == "piecewise":
        # Reference piecewise decay: ×1 until half the threshold, ×0.1 until it, ×0.01 after.
        return 1.0 if train_iter < 0.5 * thr else 0.1 if train_iter < thr else 0.01
    if cfg.lr_schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * min(train_iter, thr) / thr))
    return 1.0


class Learner:
    """Owns the network, its target copy, the optimizer and `train_iter`.

    Args:
        network: the model to train (moved to `cfg.device`).
        cfg: policy settings.
        frame_ndim: axes of one observation frame.
        seed: seed of the reanalysis noise.
    """

    def __init__(self, network: Network, cfg: PolicyConfig, frame_ndim: int, seed: int) -> None:
        self.cfg = cfg
        self.device = torch.device(cfg.device)
        self.network = network.to(self.device)
        self.target_network = copy.deepcopy(self.network).eval()
        self.target_network.requires_grad_(False)
        self.optimizer = build_optimizer(self.network, cfg)
        self.frame_ndim = frame_ndim
        self.algorithm = algorithm(cfg.type)
        self.needs_obs_seq = self.algorithm.family.needs_obs_seq(cfg)
        self.train_iter = 0
        self.autocast = resolve_autocast(cfg.learner_autocast, self.device)  # 'none' | 'bf16'
        self.targets = TargetComputer(
            self.target_network,
            frame_ndim,
            reanalysis_search_config(cfg),
            self.algorithm.search_policy,
            cfg.reanalyze_ratio,
            seed,
            cfg.device,
            inference=cfg.actor_inference,
            bf16=self.autocast == "bf16",
            sequence_bootstrap=self.algorithm.family.sequence_bootstrap(cfg),
        )
        self.mode_check = ModeCheck(self.network)

    def step(self, batch: ReplayBatch) -> StepResult:
        """One optimisation step on a sampled batch."""
        targets = self.targets.compute(batch)
        inputs = self.algorithm.family.unroll_inputs(batch, targets, self.frame_ndim, self.cfg)
        self.network.train()
        with self._autocast():
            loss = self.algorithm.family.loss(
                self.network, self.target_network, inputs, self.cfg, self.train_iter
            )
        weights = to_tensor(batch.weights, self.device)
        total = (weights * loss.per_sample.float()).mean()
        self._check_finite(total, loss.terms)
        self._set_lr()
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(
            self.network.parameters(), self.cfg.grad_clip_value
        )
        if not torch.isfinite(grad_norm):  # before the weights change: they stay the last good
            raise NonFiniteError(
                f"learner step {self.train_iter + 1}: the gradient norm is {float(grad_norm)} "
                "(the loss was finite); the weights were not updated"
            )
        _scale_weights(loss.weight_scales)
        self.optimizer.step()
        self.train_iter += 1
        self._update_target()
        self.mode_check.after_step(self.network, inputs.root_obs, self.train_iter)
        td = loss.priority_td
        if td is None:
            td = (loss.root_value.float() - targets.value[:, 0]).abs()
        priorities = td.float().cpu().numpy() + 1e-6
        metrics = {name: float(v) for name, v in loss.terms.items()}
        metrics.update(
            total_loss=float(total.detach()),
            grad_norm=float(grad_norm),
            lr=self.optimizer.param_groups[0]["lr"],
            target_value_mean=float(targets.value[:, 0].mean()),
            predicted_value_mean=float(loss.root_value.float().mean()),
        )
        return StepResult(metrics=metrics, priorities=priorities, writeback=targets.writeback)

    def _check_finite(self, total: torch.Tensor, terms: dict[str, torch.Tensor]) -> None:
        """Raise NonFiniteError naming the first non-finite loss term (before any update)."""
        if torch.isfinite(total):
            return
        bad = [f"{name} = {float(v)}" for name, v in terms.items() if not torch.isfinite(v)]
        what = bad[0] if bad else f"total_loss = {float(total)} (the PER weights)"
        raise NonFiniteError(
            f"learner step {self.train_iter + 1}: {what} is not finite; the weights were not "
            "updated (a learning rate too high for this model, or bad rewards or observations?)"
        )

    def check_weights(self) -> None:
        """Raise NonFiniteError if any weight of the network is not finite (before a save)."""
        for name, param in self.network.state_dict().items():
            if param.is_floating_point() and not torch.isfinite(param).all():
                raise NonFiniteError(
                    f"after learner step {self.train_iter}: weight {name} is not finite"
                )

    def _autocast(self) -> torch.autocast:
        """bfloat16 autocast of the unroll and loss when `learner_autocast` resolved to it."""
        enabled = self.autocast == "bf16"
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=enabled)

    def _set_lr(self) -> None:
        lr = self.cfg.learning_rate * lr_factor(self.cfg, self.train_iter)
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    @torch.no_grad()
    def _update_target(self) -> None:
        if self.cfg.target_update_type == "ema":
            theta = self.cfg.target_update_theta
            for tp, p in zip(
                self.target_network.parameters(), self.network.parameters(), strict=True
            ):
                tp.mul_(1.0 - theta).add_(p, alpha=theta)
        elif self.train_iter % self.cfg.target_update_freq == 0:
            # Hard copy including BN running statistics (reference: load_state_dict).
            self.target_network.load_state_dict(self.network.state_dict())

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume learning exactly (user_lessons: resume)."""
        return {
            "model": self.network.state_dict(),
            "target_model": self.target_network.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "train_iter": self.train_iter,
            "reanalysis_rng": self.targets.rng.bit_generator.state,
            "target_graphs": self.targets.graphs_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a `state_dict()`."""
        self.network.load_state_dict(state["model"])
        self.target_network.load_state_dict(state["target_model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.train_iter = int(state["train_iter"])
        self.targets.rng.bit_generator.state = state["reanalysis_rng"]
        if "target_graphs" in state:  # a checkpoint before it: the graphs start live
            self.targets.load_graphs_state(state["target_graphs"])


@torch.no_grad()
def _scale_weights(scales: tuple[WeightScale, ...]) -> None:
    """Multiply each `WeightScale`'s parameters by its factor, between the backward pass and the
    optimizer step (where the reference's UniZero scales them, policy/unizero.py:1571-1620)."""
    for scale in scales:
        for param in scale.params:
            param.mul_(scale.factor)


def reanalysis_search_config(cfg: PolicyConfig):
    """Search settings for reanalysis with the target network."""
    return cfg.search_config(cfg.reanalyze_num_simulations or cfg.num_simulations)
