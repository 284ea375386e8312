"""`LatentStore`: the latents of every node of a batch of search trees, gathered once per
simulation for the model step.

Runs in: any (inside `run_search`). Node s + 1 of every tree is written by simulation s; each
simulation reads the latents of its B parents. On the CPU the store is a numpy array that shares
memory with the tensors the model gets and returns: a numpy gather and `torch.from_numpy` cost
about half of torch's advanced indexing with two index tensors (`store[parents, rows]`), and the
parents, which the tree kernels write as a numpy array, need no conversion. Elsewhere (a GPU) the
store stays a tensor on the model's device.
"""

from __future__ import annotations

import numpy as np
import torch

# dtypes numpy can view without a copy (bfloat16 cannot)
_NUMPY_DTYPES = (torch.float32, torch.float64, torch.float16)


class LatentStore:
    """[N, B, *latent] latents of B trees of N nodes.

    Args:
        root: [B, *latent] the roots' latents (node 0 of every tree).
        num_nodes: N, the nodes per tree.
        allow_numpy: False keeps a CPU store a tensor indexed by torch, as on a GPU.
    """

    def __init__(self, root: torch.Tensor, num_nodes: int, allow_numpy: bool = True) -> None:
        root = root.detach()
        batch_size = root.shape[0]
        self.device = root.device
        cpu = root.device.type == "cpu" and root.dtype in _NUMPY_DTYPES
        self.on_numpy = allow_numpy and cpu
        self.tensor = root.new_empty((num_nodes, *root.shape))  # [N, B, *latent]
        self.tensor[0] = root
        self.array = self.tensor.numpy() if self.on_numpy else None  # the same memory
        self.rows = np.arange(batch_size)
        self._rows = None if self.on_numpy else torch.arange(batch_size, device=root.device)

    def gather(self, parents: np.ndarray) -> torch.Tensor:
        """[B, *latent] the latent of node `parents[b]` of every tree b ([B] int64)."""
        if self.array is not None:
            return torch.from_numpy(self.array[parents, self.rows])
        nodes = torch.from_numpy(parents).to(self.device)  # a copy on GPU
        return self.tensor[nodes, self._rows]

    def put(self, node: int, latent: torch.Tensor) -> None:
        """Store [B, *latent] as node `node` of every tree."""
        if self.array is not None:
            self.array[node] = latent.detach().numpy()
        else:
            self.tensor[node] = latent.detach()
