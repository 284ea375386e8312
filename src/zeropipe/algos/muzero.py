"""The muzero family: representation, dynamics and prediction unrolled K steps (MuZero app. G).

Runs in: any (network building and acting state in every process; the loss in the driver).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import torch
from pydantic import Field

from zeropipe.algos.losses import LossWeights, PolicyTerms, UnrollInputs, UnrollLoss, unroll_loss
from zeropipe.algos.search_settings import search_config
from zeropipe.algos.unroll_inputs import unroll_inputs
from zeropipe.config import PolicyConfig, ProjectionModelConfig
from zeropipe.mcts import SearchConfig
from zeropipe.models import MuZeroNetwork, Network, NetworkOutput

if TYPE_CHECKING:
    from zeropipe.algos.targets import Targets
    from zeropipe.buffer import ReplayBatch


class MuZeroFamilyConfig(PolicyConfig):
    """The options of every MuZero-family type: the unroll loss's term weights and step weighting,
    the SSL consistency term with its projection, and whether states past a true terminal are
    trained."""

    REFERENCE_ADAMW: ClassVar[str | None] = "by_module"  # docs/parity.md S14

    model: ProjectionModelConfig = Field(
        default_factory=ProjectionModelConfig, description="Network settings."
    )
    value_loss_weight: float = Field(0.25, ge=0.0, description="Weight of the value loss.")
    reward_loss_weight: float = Field(1.0, ge=0.0, description="Weight of the reward loss.")
    policy_loss_weight: float = Field(1.0, ge=0.0, description="Weight of the policy loss.")
    ssl_loss_weight: float = Field(
        0.0, ge=0.0, description="Self-supervised consistency loss weight (0 disables)."
    )
    loss_weighting: Literal["reference", "appendix_g"] = Field(
        "reference",
        description="How the unroll's steps are weighted. reference (LightZero, e.g. "
        "policy/muzero.py:592-600): every step k=0..K weighs 1 (reward and SSL k=1..K) and the "
        "gradient of the total is scaled by 1/K; the logged losses are the unscaled sums. "
        "appendix_g (MuZero app. G, zeropipe before this option): the root's terms weigh 1, each "
        "unrolled step's 1/K, SSL is summed over the steps, and the latent's gradient is halved "
        "at the entry of every dynamics step. See docs/parity.md S9.",
    )

    absorbing_terminal: bool = Field(
        False,
        description="Train the unroll steps past a true terminal as absorbing states (value 0, "
        "reward 0 for the step into them; MuZero app. G, the reference's trained zero padding) "
        "instead of masking them.",
    )

    def search_config(self, num_simulations: int) -> SearchConfig:
        """PUCT's settings."""
        return search_config(self, num_simulations)


class MuZeroConfig(MuZeroFamilyConfig):
    """`policy.type: muzero` (MuZero, Schrittwieser et al. 2020)."""

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        "loss_weighting": "appendix_g",
        **PolicyConfig.OLDER_VALUES,
    }

    type: Literal["muzero"] = Field(
        "muzero", description="Policy type; see docs/policies/muzero.md."
    )


class ContextFreeRoots:
    """Roots from the current observation alone; nothing is kept per env."""

    def __init__(self, network: Network) -> None:
        self.network = network

    def root(self, obs: torch.Tensor, env_ids, prev_actions) -> NetworkOutput:
        """The network's initial inference on `obs` [B, *input]."""
        return self.network.initial_inference(obs)

    def reset(self, env_id: int) -> None:
        """Nothing is kept per env."""

    def invalidate(self) -> None:
        """Nothing is cached."""

    def tick(self, env_ids: Sequence[int]) -> None:
        """Nothing is cached."""

    def state_dict(self) -> dict[str, Any]:
        """Nothing is kept."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Nothing is kept."""


class MuZeroFamily:
    """MuZero's h, g, f with the K-step unroll loss; optional SSL consistency (EfficientZero)."""

    network_class: type[torch.nn.Module] = MuZeroNetwork  # a variant may extend MuZero's network

    def build_network(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: MuZeroFamilyConfig
    ) -> torch.nn.Module:
        """`network_class`; the SSL projection only when its loss is on (keeps snapshots small)."""
        return self.network_class(
            input_shape, num_actions, cfg.model, with_projection=cfg.ssl_loss_weight > 0
        )

    def keeps_chance_labels(self, cfg: MuZeroFamilyConfig) -> bool:
        """The loss reads no chance outcomes of the env."""
        return False

    def needs_obs_seq(self, cfg: MuZeroFamilyConfig) -> bool:
        """The consistency loss encodes every unroll step's observation."""
        return cfg.ssl_loss_weight > 0

    def sequence_bootstrap(self, cfg: MuZeroFamilyConfig) -> bool:
        """Each bootstrap observation alone: a MuZero root has no context but its frame stack."""
        return False

    def loss(
        self,
        net: Network,
        target_net: Network,
        inputs: UnrollInputs,
        cfg: MuZeroFamilyConfig,
        train_iter: int,
    ) -> UnrollLoss:
        """`unroll_loss` with the config's term weights."""
        return unroll_loss(net, inputs, loss_weights(cfg), self.policy_terms(cfg))

    def policy_terms(self, cfg: MuZeroFamilyConfig) -> PolicyTerms | None:
        """The unroll's policy loss and entropy per step; None: the cross-entropy against the
        full-A target (`losses.full_policy_terms`). A variant with another policy head (the
        continuous sampled types) returns its own."""
        return None

    def unroll_inputs(
        self, batch: ReplayBatch, targets: Targets, frame_ndim: int, cfg: MuZeroFamilyConfig
    ) -> UnrollInputs:
        """The MuZero default: int64 action indices (`algos/unroll_inputs.py`); the absorbing
        states past a true terminal are trained with `policy.absorbing_terminal`."""
        return unroll_inputs(
            batch,
            targets,
            frame_ndim,
            self.needs_obs_seq(cfg),
            cfg.device,
            absorbing=cfg.absorbing_terminal,
        )

    def root_source(
        self, network: Network, num_envs: int, cfg: MuZeroFamilyConfig
    ) -> ContextFreeRoots:
        """Context-free roots."""
        return ContextFreeRoots(network)


def loss_weights(cfg: MuZeroFamilyConfig) -> LossWeights:
    """The unroll loss's term weights from the policy config (reference names)."""
    return LossWeights(
        value=cfg.value_loss_weight,
        reward=cfg.reward_loss_weight,
        policy=cfg.policy_loss_weight,
        entropy=cfg.policy_entropy_weight,
        ssl=cfg.ssl_loss_weight,
        weighting=cfg.loss_weighting,
    )


MUZERO = MuZeroFamily()
