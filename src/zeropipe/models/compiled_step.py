"""The MLP MuZero network's search step as plain arrays and a numba kernel.

Runs in: collector, evaluator (inside the compiled search loop, algos/compiled_search.py). With a
small MLP, a step through torch is mostly per-op dispatch (CartPole MuZero, B = 8, one thread:
~43 µs for a frozen graph of 37 ops, of which eight linears cost ~5 µs each in dispatch alone);
the same arithmetic in a numba kernel, called from a numba search loop, has no per-op or
per-simulation crossing at all.

`export_mlp_step` reads a `MuZeroNetwork` with vector latents, discrete actions and the base
class's step (dynamics MLP, reward head, value and policy heads, categorical supports) into an
`MlpStep` of float32 arrays: eval-mode batch norms folded into the linear before them, each
weight stored transposed ([in, out]) so that the kernel's inner loop runs over contiguous
outputs. `mlp_step` computes what `recurrent_inference` and the search's reward and value
decoding compute, in float32, one output row at a time (each output element sums its inputs
in index order, so the result does not depend on the batch size). It rounds differently from
torch's matrix kernels; the search built on it is checked against the eager step's visit counts
and root values in the tests.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from numba import njit
from torch import nn

# a layer without a LayerNorm: `_norm_relu` tells one by its norm weight's length
NO_NORM = np.zeros(0, dtype=np.float32)


class Layer(NamedTuple):
    """Linear (batch norm folded in), then an optional LayerNorm.

    Attributes:
        weight: [out, in] float32.
        bias: [out] float32.
        norm_weight: [out] float32 LayerNorm scale, or empty (no LayerNorm).
        norm_bias: [out] float32 LayerNorm shift, or empty.
        norm_eps: the LayerNorm's ε.
    """

    weight: np.ndarray
    bias: np.ndarray
    norm_weight: np.ndarray
    norm_bias: np.ndarray
    norm_eps: float


class MlpStep(NamedTuple):
    """The arrays of one MLP MuZero step (`export_mlp_step`).

    Attributes:
        dynamics: the dynamics' layers: hidden layers, each followed by ReLU, then the output
            layer (its norm, the residual, then ReLU); the first reads concat(latent, one-hot
            action).
        residual: add the input latent before the final ReLU.
        state_norm: min-max normalise the next latent.
        reward: the reward head's hidden layer (ReLU) and final layer.
        value: the value head's.
        policy: the policy head's.
        reward_atoms: [S_r] float32.
        value_atoms: [S_v] float32.
    """

    dynamics: tuple[Layer, ...]
    residual: bool
    state_norm: bool
    reward: tuple[Layer, Layer]
    value: tuple[Layer, Layer]
    policy: tuple[Layer, Layer]
    reward_atoms: np.ndarray
    value_atoms: np.ndarray


def export_mlp_step(network: nn.Module) -> MlpStep | None:
    """`network`'s step as arrays, or None where the kernel cannot compute it: another class's
    step (EfficientZero's value prefix, a history or world model), image latents, continuous
    actions, or a layer of another kind than this module knows."""
    from zeropipe.models.dynamics import VectorDynamics
    from zeropipe.models.heads import VectorHead
    from zeropipe.models.network import MuZeroNetwork

    if not _base_step(network, MuZeroNetwork):
        return None
    dynamics, prediction = network.dynamics, network.prediction
    heads = (network.reward_head, prediction.value, prediction.policy)
    if not isinstance(dynamics, VectorDynamics) or dynamics.continuous:
        return None
    if not all(isinstance(h, VectorHead) for h in heads):
        return None
    if not isinstance(prediction.trunk, nn.Identity):
        return None
    try:
        body = _stack_layers(list(dynamics.body))
        out = _layer(dynamics.out, dynamics.out_norm)
        reward, value, policy = (_export_head(h) for h in heads)
    except _Unsupported:
        return None
    return MlpStep(
        (*body, out),
        bool(dynamics.residual),
        bool(network.state_norm),
        reward,
        value,
        policy,
        _array(network.reward_support.atoms),
        _array(network.value_support.atoms),
    )


def _base_step(network: nn.Module, base: type) -> bool:
    """Whether `network` is a `base` whose step methods are the base class's own."""
    if not isinstance(network, base) or len(network.latent_shape) != 1:
        return False
    names = ("recurrent_inference", "next_latent", "transition_reward", "search_scalars")
    return all(getattr(type(network), n) is getattr(base, n) for n in names)


class _Unsupported(Exception):
    """A layer the kernel does not compute."""


def _export_head(head: nn.Module) -> tuple[Layer, Layer]:
    """A `VectorHead`: Linear → norm → ReLU → Linear."""
    layers = list(head.layers)
    if len(layers) != 4 or not isinstance(layers[2], nn.ReLU):
        raise _Unsupported
    return _layer(layers[0], layers[1]), _layer(layers[3], None)


def _stack_layers(layers: list[nn.Module]) -> list[Layer]:
    """An `mlp_stack`: (Linear → norm → ReLU) repeated."""
    if len(layers) % 3:
        raise _Unsupported
    out = []
    for i in range(0, len(layers), 3):
        if not isinstance(layers[i + 2], nn.ReLU):
            raise _Unsupported
        out.append(_layer(layers[i], layers[i + 1]))
    return out


def _layer(linear: nn.Module, norm: nn.Module | None) -> Layer:
    """A linear and the norm after it (eval mode: a batch norm folds into the linear)."""
    if not isinstance(linear, nn.Linear):
        raise _Unsupported
    weight = linear.weight.detach().double()
    bias = (
        linear.bias.detach().double()
        if linear.bias is not None
        else weight.new_zeros(weight.shape[0])
    )
    norm_weight = norm_bias = NO_NORM
    eps = 0.0
    if isinstance(norm, nn.BatchNorm1d):
        if norm.running_mean is None or norm.running_var is None or not norm.affine:
            raise _Unsupported
        scale = norm.weight.detach().double() / torch.sqrt(norm.running_var.double() + norm.eps)
        weight = weight * scale[:, None]
        bias = (bias - norm.running_mean.double()) * scale + norm.bias.detach().double()
    elif isinstance(norm, nn.LayerNorm):
        if not norm.elementwise_affine or norm.bias is None:
            raise _Unsupported
        norm_weight, norm_bias, eps = _array(norm.weight), _array(norm.bias), float(norm.eps)
    elif norm is not None:
        raise _Unsupported
    return Layer(
        np.ascontiguousarray(weight.float().numpy()),
        bias.float().numpy().copy(),
        norm_weight,
        norm_bias,
        eps,
    )


def _array(x: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(x.detach().float().cpu().numpy())


# The sums of the matrix products may be reassociated (vectorised with several accumulators)
# and contracted into fused multiply-adds; nothing else of fast-math (NaN and infinity keep
# their meaning, so a blown-up network still shows as non-finite outputs).
_SUMS = {"reassoc", "contract"}


@njit(cache=True, error_model="numpy", fastmath=_SUMS)
def _linear(layer: Layer, x: np.ndarray, out: np.ndarray, width: int) -> None:
    """out[r] = weight[:, :width] @ x[r, :width] + bias for every row r of `out`."""
    w, bias = layer.weight, layer.bias
    for r in range(out.shape[0]):
        for j in range(w.shape[0]):
            total = np.float32(0.0)
            for k in range(width):
                total += w[j, k] * x[r, k]
            out[r, j] = total + bias[j]


@njit(cache=True, error_model="numpy")
def _norm_relu(layer: Layer, rows: np.ndarray, relu: bool) -> None:
    """The layer's LayerNorm (if it has one) and ReLU, in place on every row."""
    n = rows.shape[1]
    norm = layer.norm_weight.shape[0] == n
    for r in range(rows.shape[0]):
        out = rows[r]
        if norm:
            mean = np.float32(0.0)
            for j in range(n):
                mean += out[j]
            mean /= np.float32(n)
            var = np.float32(0.0)
            for j in range(n):
                d = out[j] - mean
                var += d * d
            var /= np.float32(n)
            inv = np.float32(1.0) / np.sqrt(var + np.float32(layer.norm_eps))
            for j in range(n):
                out[j] = (out[j] - mean) * inv * layer.norm_weight[j] + layer.norm_bias[j]
        if relu:
            for j in range(n):
                out[j] = max(out[j], np.float32(0.0))


@njit(cache=True, error_model="numpy")
def _decoded(logits: np.ndarray, atoms: np.ndarray, out: np.ndarray) -> None:
    """out[r] = h⁻¹ of the expected atom of softmax(logits[r]) (the search's reward and value
    decoding: models.support.logits_to_scalar with its ε, 0.001, in the same rearranged form)."""
    for r in range(logits.shape[0]):
        row = logits[r]
        top = row.max()
        total = np.float32(0.0)
        weighted = np.float32(0.0)
        for j in range(row.shape[0]):
            e = np.exp(row[j] - top)
            total += e
            weighted += e * atoms[j]
        y = weighted / total
        a = abs(y)
        root = np.sqrt(a * np.float32(0.004) + np.float32(1.004004))
        d = (a * np.float32(2.0)) / (root + np.float32(1.002))
        out[r] = np.copysign(d * (d + np.float32(2.0)), y)


@njit(cache=True, error_model="numpy")
def _head(head: tuple[Layer, Layer], x: np.ndarray, work: np.ndarray, out: np.ndarray) -> None:
    """A head's logits of every row: Linear → norm → ReLU → Linear."""
    hidden = _rows(work, x.shape[0], head[0].bias.shape[0])
    _linear(head[0], x, hidden, x.shape[1])
    _norm_relu(head[0], hidden, True)
    _linear(head[1], hidden, out, hidden.shape[1])


@njit(cache=True, error_model="numpy")
def _rows(work: np.ndarray, batch: int, width: int) -> np.ndarray:
    """A C-contiguous [batch, width] view of the flat work row `work`."""
    return work[: batch * width].reshape((batch, width))


@njit(cache=True, error_model="numpy")
def _dynamics(step: MlpStep, latents, actions, out: np.ndarray, scratch: np.ndarray) -> None:
    """The next latents of every row into `out` ([B, E])."""
    layers = step.dynamics
    last = len(layers) - 1
    batch, width = latents.shape
    src = latents
    for i in range(len(layers)):
        layer = layers[i]
        n = layer.bias.shape[0]
        dst = out if i == last else _rows(scratch[i % 2], batch, n)
        _linear(layer, src, dst, src.shape[1] if i else width)
        if i == 0:  # the one-hot action's term: 1·w (the other codes add 0·w)
            for r in range(batch):
                for j in range(n):
                    dst[r, j] += layer.weight[j, width + actions[r]]
        _norm_relu(layer, dst, i < last)
        src = dst
    for r in range(batch):
        row = out[r]
        if step.residual:
            for j in range(width):
                row[j] += latents[r, j]
        for j in range(width):
            row[j] = max(row[j], np.float32(0.0))
        if step.state_norm:
            low, high = row.min(), row.max()
            span = high - low + np.float32(1e-8)
            for j in range(width):
                row[j] = (row[j] - low) / span


@njit(cache=True, error_model="numpy")
def mlp_step(
    step: MlpStep,
    latents: np.ndarray,
    actions: np.ndarray,
    next_latents: np.ndarray,
    rewards: np.ndarray,
    values: np.ndarray,
    logits: np.ndarray,
    scratch: np.ndarray,
) -> None:
    """One search step of B rows: next latents, rewards, values and policy logits.

    Args:
        step: the network's arrays.
        latents: [B, E] float32 parent latents.
        actions: [B] int64 actions.
        next_latents: [B, E] float32, out.
        rewards: [B] float32, out: decoded rewards.
        values: [B] float32, out: decoded values.
        logits: [B, A] float32, out: policy logits.
        scratch: [3, B·W] float32 work rows, W at least every layer's width (`scratch_rows`).
    """
    _dynamics(step, latents, actions, next_latents, scratch)
    batch = latents.shape[0]
    for head, atoms, out in ((step.reward, step.reward_atoms, rewards),
                             (step.value, step.value_atoms, values)):  # fmt: skip
        head_logits = _rows(scratch[2], batch, atoms.shape[0])
        _head(head, next_latents, scratch[0], head_logits)
        _decoded(head_logits, atoms, out)
    _head(step.policy, next_latents, scratch[0], logits)


def scratch_rows(step: MlpStep, batch: int) -> np.ndarray:
    """`mlp_step`'s work rows for `step` and B = `batch`."""
    layers = (*step.dynamics, *step.reward, *step.value, *step.policy)
    width = max(max(layer.weight.shape) for layer in layers)
    return np.zeros((3, batch * width), dtype=np.float32)
