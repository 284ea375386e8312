"""Scalar ↔ categorical support: the invertible value scaling h(x) and two-hot encodings.

Runs in: any. Values and rewards are predicted as distributions over a discrete support of
*scaled* values (MuZero app. F): targets are `h(x)` spread over the two nearest atoms, and a
prediction's scalar is `h⁻¹(Σ softmax(logits)·atoms)`. h is Pohlen et al. 2018 ("Observe and Look
Further"), eq. 4: `h(x) = sign(x)(sqrt(|x| + 1) − 1) + εx`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class DiscreteSupport(nn.Module):
    """The atoms `arange(start, stop, step)` of a categorical value or reward head.

    A module only so that the atoms are a (non-persistent) buffer: they follow the network across
    `.to(device)` and never appear in a checkpoint.

    Attributes:
        start: the smallest atom.
        stop: exclusive upper end, as in `range`.
        step: spacing between atoms.
        size: number of atoms S.
        atoms: the atom values, float32.  # [S]
    """

    atoms: Tensor

    def __init__(self, start: int, stop: int, step: int = 1) -> None:
        """Create `arange(start, stop, step)` atoms (LightZero `DiscreteSupport`).

        Args:
            start: the smallest atom.
            stop: exclusive upper end.
            step: spacing between atoms (> 0).

        Raises:
            ValueError: the range holds fewer than two atoms or step is not positive.
        """
        super().__init__()
        if step <= 0:
            raise ValueError(f"DiscreteSupport step must be positive, got {step}")
        atoms = torch.arange(start, stop, step, dtype=torch.float32)  # [S]
        if atoms.numel() < 2:
            raise ValueError(
                f"DiscreteSupport({start}, {stop}, {step}) has {atoms.numel()} atoms; "
                "a categorical head needs at least 2 — widen the range"
            )
        self.start, self.stop, self.step = start, stop, step
        self.size = int(atoms.numel())
        self.register_buffer("atoms", atoms, persistent=False)

    @property
    def min(self) -> float:
        """The smallest atom."""
        return float(self.start)

    @property
    def max(self) -> float:
        """The largest atom."""
        return float(self.start + (self.size - 1) * self.step)

    def extra_repr(self) -> str:
        """Shown by `print(module)`."""
        return f"start={self.start}, stop={self.stop}, step={self.step}, size={self.size}"


def scalar_transform(x: Tensor, eps: float = 0.001) -> Tensor:
    """h(x) = sign(x)(sqrt(|x| + 1) − 1) + εx (Pohlen et al. 2018; MuZero app. F).

    `sqrt(|x|+1) − 1` is computed as `|x| / (sqrt(|x|+1) + 1)`, which is the same number without
    the cancellation that costs float32 digits for small |x|.

    Args:
        x: values of any shape.
        eps: the linear term ε that keeps h invertible with a Lipschitz inverse.

    Returns:
        h(x), same shape as x.
    """
    a = x.abs()
    return torch.sign(x) * (a / (torch.sqrt(a + 1.0) + 1.0)) + eps * x


def inverse_scalar_transform(y: Tensor, eps: float = 0.001) -> Tensor:
    """h⁻¹(y), the exact inverse of `scalar_transform`.

    With u = sqrt(|x|+1), h is the quadratic εu² + u − (1 + ε + |y|) = 0; its root gives
    `d = u − 1 = 2|y| / (sqrt(1 + 4ε(1 + ε + |y|)) + 1 + 2ε)` and `|x| = u² − 1 = d(d + 2)`. This is
    algebraically LightZero's `(((sqrt(1 + 4ε(|y|+1+ε)) − 1)/(2ε))² − 1)`, rearranged so that
    float32 keeps its relative precision near zero; it also holds for ε = 0. Written in ten tensor
    ops with one-element constants (`_const`): the search runs it twice per simulation on a few
    values, where each op's dispatch costs more than its arithmetic.

    Args:
        y: scaled values of any shape.
        eps: the ε used by the forward transform.

    Returns:
        x with h(x) = y, same shape as y.
    """
    a = y.abs()
    root = torch.sqrt(a * _const(4.0 * eps, y) + _const(1.0 + 4.0 * eps * (1.0 + eps), y))
    d = (a * _const(2.0, y)) / (root + _const(1.0 + 2.0 * eps, y))
    return torch.copysign(d * (d + _const(2.0, y)), y)


_CONSTANTS: dict[tuple[float, torch.dtype, torch.device], Tensor] = {}


def _const(value: float, like: Tensor) -> Tensor | float:
    """`value` as a one-element tensor of `like`'s dtype and device, made once per kind.

    A Python float (or any 0-dim tensor) in a binary op is a "CPU scalar" that the op casts to
    its dtype at every call: three more dispatches (`to`, `_to_copy`, `copy_`), ~2 µs each on a
    small batch, which a trace or frozen graph repeats per call. A broadcast one-element tensor
    of the right dtype needs none; a trace records it as a constant. A 0-dim `like` gets the
    float, so the result keeps its 0-dim shape. Made outside inference mode, so that autograd
    may save it.
    """
    if like.dim() == 0:
        return value
    key = (value, like.dtype, like.device)
    const = _CONSTANTS.get(key)
    if const is None:
        with torch.inference_mode(False):
            const = torch.tensor([value], dtype=like.dtype, device=like.device)
        _CONSTANTS[key] = const
    return const


def logits_to_scalar(logits: Tensor, support: DiscreteSupport, eps: float = 0.001) -> Tensor:
    """The scalar a categorical head predicts: h⁻¹ of the expected atom.

    Args:
        logits: unnormalised log-probabilities over the support.  # [..., S]
        support: the head's support.
        eps: the ε of h.

    Returns:
        Unscaled scalar values.  # [...]
    """
    return inverse_scalar_transform(_expected(logits, support), eps)


def _expected(logits: Tensor, support: DiscreteSupport) -> Tensor:
    """The expected atom of the logits' distribution.  # [...]"""
    atoms = support.atoms  # [S]
    if atoms.dtype != logits.dtype or atoms.device != logits.device:  # no op in a trace if not
        atoms = atoms.to(device=logits.device, dtype=logits.dtype)
    return torch.softmax(logits, dim=-1) @ atoms


def scalar_to_two_hot(
    x: Tensor, support: DiscreteSupport, label_smoothing: float = 0.0, eps: float = 0.001
) -> Tensor:
    """Two-hot target of clamp(h(x)) on the support (LightZero `phi_transform`).

    The probability mass goes to the two atoms around h(x) in proportion to closeness, so the
    expectation over atoms equals h(x) whenever h(x) lies inside the support. With
    `label_smoothing = ε_s` the result is `(1 − ε_s)·p + ε_s/S` (UniZero uses 0.1).

    Args:
        x: unscaled scalar targets (float).  # [...]
        support: the target head's support.
        label_smoothing: ε_s in [0, 1].
        eps: the ε of h.

    Returns:
        Probabilities summing to 1 along the last axis.  # [..., S]
    """
    size = support.size
    scaled = scalar_transform(x.float(), eps).clamp(support.min, support.max)  # [...]
    position = (scaled - support.min) / support.step  # [...] fractional atom index
    low = position.floor().clamp(0, size - 1)  # [...]
    high_weight = (position - low).unsqueeze(-1)  # [..., 1]
    low_index = low.long().unsqueeze(-1)  # [..., 1]
    high_index = (low_index + 1).clamp(max=size - 1)  # [..., 1]; at the top, weight is 0
    target = x.new_zeros((*x.shape, size), dtype=torch.float32)  # [..., S]
    target.scatter_add_(-1, low_index, 1.0 - high_weight)
    target.scatter_add_(-1, high_index, high_weight)
    if label_smoothing > 0.0:
        target = target * (1.0 - label_smoothing) + label_smoothing / size
    return target


def logits_to_scalars(
    first: Tensor, first_support: DiscreteSupport, second: Tensor, second_support: DiscreteSupport
) -> tuple[Tensor, Tensor]:
    """`logits_to_scalar` of two heads' logits of one shape but the last (a step's reward and
    value), with one inverse transform over both: its ten elementwise ops dispatch once for the
    pair, which on a small batch costs more than their arithmetic. Each element goes through the
    same ops as alone, so the scalars are the same.

    Args:
        first: the first head's logits.  # [..., S_1]
        first_support: its support.
        second: the second head's logits.  # [..., S_2]
        second_support: its support.

    Returns:
        The two heads' scalars.  # [...], [...]
    """
    expected = torch.stack([_expected(first, first_support), _expected(second, second_support)])
    both = inverse_scalar_transform(expected)
    return both[0], both[1]
