"""The learner's float precision: `policy.learner_autocast`, and what `auto` picks.

Runs in: driver. bfloat16 autocast runs the unroll, the loss and the target network's bootstrap
values in bf16 (the targets are read out, and the priorities and the optimizer kept, in float32).
On a CPU with native bf16 instructions (avx512_bf16 or AMX) it is faster; without them bf16 is
emulated and slower; on a GPU it was not measured. So `auto` is bf16 on a CPU that has the
instructions, float32 elsewhere; `none` and `bf16` say it outright. Measured on this project's
2-core AMD EPYC (avx512_bf16), learner steps/s, bf16 against float32: Pong MuZero 1.5-1.6x,
Acrobot MuZero 1.39x, CartPole MuZero 1.05x; learning: docs/results.md, "Inference and precision".
"""

from __future__ import annotations

import logging

import torch

log = logging.getLogger("zeropipe.driver")


def resolve_autocast(setting: str, device: torch.device) -> str:
    """'none' or 'bf16' for `policy.learner_autocast` on `device` ('auto' as the module says)."""
    if setting != "auto":
        return setting
    if device.type == "cpu" and native_cpu_bf16():
        return "bf16"
    return "none"


def native_cpu_bf16() -> bool:
    """Whether this CPU has bf16 arithmetic instructions (torch's own probes; False where this
    torch lacks them)."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    try:
        return any(getattr(torch.cpu, name)() for name in probes if hasattr(torch.cpu, name))
    except RuntimeError:
        return False


def log_choice(setting: str, resolved: str) -> None:
    """Say once which precision the learner runs in, and why."""
    why = (
        "policy.learner_autocast"
        if setting != "auto"
        else (
            "auto: this CPU has bf16 instructions" if resolved == "bf16" else "auto: float32 here"
        )
    )
    log.info(
        "learner precision: %s (%s)", "bfloat16 autocast" if resolved == "bf16" else "float32", why
    )
