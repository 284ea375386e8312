"""The algorithm seam: what a policy type is made of (docs/design.md; after mctx `policies.py`).

Runs in: any. `policy.type` names one registered `Algorithm` (see `registry.py`): its config
section (a `PolicyConfig` subclass declared beside the algorithm), a *family* that builds the
network, computes the loss and keeps per-env acting state, and the name of the *search policy*
(`mcts/policies.py`) that acts and makes policy targets. The Collector, Evaluator,
TargetComputer, Learner and `pipeline/build.py` ask the algorithm instead of branching on names;
a new policy type is its module(s), its config section and one `registry.register` call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

from zeropipe.algos.losses import UnrollInputs, UnrollLoss
from zeropipe.algos.network_search import RootSource
from zeropipe.config import PolicyConfig
from zeropipe.mcts import SearchPolicy, search_policy
from zeropipe.models import Network

if TYPE_CHECKING:
    from zeropipe.algos.targets import Targets
    from zeropipe.buffer import ReplayBatch


class Family(Protocol):
    """The network-side half of an algorithm: model, loss and acting state."""

    def build_network(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: PolicyConfig
    ) -> torch.nn.Module:
        """A fresh network for stacked inputs of `input_shape` and `num_actions` actions."""
        ...

    def needs_obs_seq(self, cfg: PolicyConfig) -> bool:
        """Whether the loss reads every unroll step's observation (`UnrollInputs.obs_seq`)."""
        ...

    def sequence_bootstrap(self, cfg: PolicyConfig) -> bool:
        """Whether the n-step bootstrap values come from one teacher-forced pass of the target
        network over each sample's bootstrap observations and actions
        (`TargetComputer.sequence_bootstrap_values`), not from each observation alone."""
        ...

    def loss(
        self,
        net: Network,
        target_net: Network,
        inputs: UnrollInputs,
        cfg: PolicyConfig,
        train_iter: int,
    ) -> UnrollLoss:
        """Per-sample training loss of one batch."""
        ...

    def unroll_inputs(
        self, batch: ReplayBatch, targets: Targets, frame_ndim: int, cfg: PolicyConfig
    ) -> UnrollInputs:
        """The loss's tensors from a sampled batch and its targets (`algos/unroll_inputs.py`
        is the MuZero default: int64 action indices)."""
        ...

    def root_source(self, network: Network, num_envs: int, cfg: PolicyConfig) -> RootSource:
        """Per-env acting state for `num_envs` envs (`cfg` holds the type's acting options)."""
        ...

    def keeps_chance_labels(self, cfg: PolicyConfig) -> bool:
        """Whether the loss reads the env's chance outcomes, so collectors store them."""
        ...


@dataclass(frozen=True)
class Algorithm:
    """One policy type.

    Attributes:
        config: its `policy` section; the default of its `type` field is the type's name.
        family: network, loss and acting state.
        search: name of its search policy in `mcts.SEARCH_POLICIES`.
    """

    config: type[PolicyConfig]
    family: Family
    search: str

    @property
    def name(self) -> str:
        """The `policy.type` it answers to."""
        return self.config.model_fields["type"].default

    @property
    def search_policy(self) -> SearchPolicy:
        """The search policy function."""
        return search_policy(self.search)
