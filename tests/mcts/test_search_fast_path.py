"""The search's per-simulation fast path (the numpy latent store on the CPU and the kernel's
compiled entry point after the first call) searches exactly as the plain path (torch indexing
into the store and numba's dispatch on every call) on fixed roots."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import zeropipe.mcts.search as search_module
from zeropipe.mcts import SearchConfig, SearchRoots, StepOutput, run_search
from zeropipe.mcts.latent_store import LatentStore
from zeropipe.mcts.simulate import KernelCall

A = 3


class _LinearModel:
    """A fixed random model over [B, 4] latents: next = tanh(W_a · latent)."""

    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(0)
        self.weights = torch.randn(A, 4, 4, generator=gen)

    def __call__(self, latent: torch.Tensor, actions: np.ndarray) -> StepOutput:
        w = self.weights[torch.from_numpy(actions)]  # [B, 4, 4]
        nxt = torch.tanh(torch.einsum("bij,bj->bi", w, latent))
        return StepOutput(
            latent=nxt,
            reward=nxt[:, 0].numpy().astype(np.float32),
            value=nxt[:, 1].numpy().astype(np.float32),
            policy_logits=nxt[:, 1 : 1 + A].numpy().astype(np.float32),
        )


def _roots(batch: int) -> SearchRoots:
    rng = np.random.default_rng(batch)
    mask = rng.random((batch, A)) < 0.8
    mask[:, 0] = True
    return SearchRoots(
        latent=torch.from_numpy(rng.normal(size=(batch, 4)).astype(np.float32)),
        value=rng.normal(size=batch).astype(np.float32),
        policy_logits=rng.normal(size=(batch, A)).astype(np.float32),
        action_mask=mask,
    )


class _PlainStore(LatentStore):
    """The store as a tensor indexed by torch (the path a GPU takes)."""

    def __init__(self, root: torch.Tensor, num_nodes: int) -> None:
        super().__init__(root, num_nodes, allow_numpy=False)


class _DispatchedCall(KernelCall):
    """Every call through numba's dispatcher."""

    def __call__(self, *args) -> None:
        self.kernel(*args, *self.tree)


@pytest.mark.parametrize("batch", [1, 3, 8, 64])
def test_the_fast_path_searches_as_the_plain_path(batch, monkeypatch) -> None:
    cfg = SearchConfig(num_simulations=30, discount=0.997)
    roots = _roots(batch)
    calls: list[KernelCall] = []
    stores: list[LatentStore] = []

    class SpyCall(KernelCall):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            calls.append(self)

    class SpyStore(LatentStore):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            stores.append(self)

    monkeypatch.setattr(search_module, "KernelCall", SpyCall)
    monkeypatch.setattr(search_module, "LatentStore", SpyStore)
    fast = run_search(roots, _LinearModel(), cfg, np.random.default_rng(0), add_noise=True)
    assert stores[0].array is not None  # the numpy store, and the entry point were used
    assert calls[0].entry is not None
    monkeypatch.setattr(search_module, "KernelCall", _DispatchedCall)
    monkeypatch.setattr(search_module, "LatentStore", _PlainStore)
    plain = run_search(roots, _LinearModel(), cfg, np.random.default_rng(0), add_noise=True)
    np.testing.assert_array_equal(fast.visit_counts, plain.visit_counts)
    np.testing.assert_array_equal(fast.root_value, plain.root_value)
    np.testing.assert_array_equal(fast.q_values, plain.q_values)
    assert fast.visit_counts.sum() == batch * cfg.num_simulations


def test_the_store_gathers_each_trees_parent() -> None:
    root = torch.arange(6, dtype=torch.float32).reshape(3, 2)  # [B=3, 2]
    for store in (LatentStore(root, 4), _PlainStore(root, 4)):
        store.put(1, root + 10)
        store.put(2, root + 20)
        got = store.gather(np.array([2, 0, 1], dtype=np.int64))
        want = torch.tensor([[20.0, 21.0], [2.0, 3.0], [14.0, 15.0]])
        torch.testing.assert_close(got, want)
