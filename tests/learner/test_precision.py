"""`policy.learner_autocast: auto` picks bfloat16 only on a CPU with bf16 instructions."""

from __future__ import annotations

import pytest
import torch

from zeropipe.learner import precision
from zeropipe.learner.precision import resolve_autocast


@pytest.mark.parametrize(
    ("avx512_bf16", "amx", "device", "want"),
    [
        (True, False, "cpu", "bf16"),
        (False, True, "cpu", "bf16"),
        (False, False, "cpu", "none"),  # emulated bf16 is slower than float32
        (True, True, "cuda", "none"),  # not measured on a GPU
    ],
)
def test_auto_is_bf16_on_a_cpu_with_bf16_instructions(monkeypatch, avx512_bf16, amx, device, want):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert resolve_autocast("auto", torch.device(device)) == want


@pytest.mark.parametrize("setting", ["none", "bf16"])
def test_an_explicit_setting_is_kept(monkeypatch, setting):
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: setting == "none")
    assert resolve_autocast(setting, torch.device("cpu")) == setting
