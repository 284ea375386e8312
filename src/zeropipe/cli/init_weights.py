"""`train --init-from CKPT`: whether a checkpoint's weights fit the network a config builds.

Runs in: driver (the CLI, before anything is written). The config's network is built on the meta
device (shapes only: no memory, no draw from the seeded RNG) and compared with the weights
tensor by tensor. A mismatch is one line naming the first tensor that differs and, where the
checkpoint sits in a run directory (`<run>/ckpt/`), the settings of that run's config.yaml that
differ from this config's, in full (`policy.model.latent_dim 16 there, 24 here`): the tensor
names the module, the setting names what to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from zeropipe.config import ConfigError, ExperimentConfig

# Settings outside `policy`'s sections that shape the network (the observation's shape).
ENV_SHAPING = ("env.env_id", "env.frame_stack", "env.gray_scale", "env.obs_size")
# `policy` sections that shape no network.
NOT_SHAPING = ("policy.eps.", "policy.async_pipeline.")
MAX_NAMED = 4  # settings named in the one line; the rest are counted
ABSENT = object()  # a key one config's policy type does not have


def check_init_weights(
    cfg: ExperimentConfig, checkpoint: Path, weights: Mapping[str, torch.Tensor]
) -> None:
    """Refuse weights of another network than `cfg` builds.

    Args:
        cfg: the new run's config.
        checkpoint: the file the weights were read from (its run's config.yaml is read, if any).
        weights: the checkpoint's network state dict.

    Raises:
        ConfigError: one line, naming the first tensor that differs and the differing settings.
    """
    from zeropipe.algos.registry import build_network
    from zeropipe.envs import env_spec

    spec = env_spec(cfg.env)
    try:
        with torch.device("meta"):
            own = build_network(cfg, spec).state_dict()
    except (RuntimeError, NotImplementedError):
        # a network whose construction needs real data: the runner's load checks it instead
        return
    problem = _first_difference(own, weights)
    if problem is None:
        return
    raise ConfigError(
        f"--init-from: the weights in {checkpoint} do not fit this config's network "
        f"({problem}){_settings_note(cfg, checkpoint)}"
    )


def _first_difference(
    own: Mapping[str, torch.Tensor], saved: Mapping[str, torch.Tensor]
) -> str | None:
    """The first tensor of another shape, or the tensors one side lacks; None if they fit."""
    for name, tensor in own.items():
        if name in saved and tuple(saved[name].shape) != tuple(tensor.shape):
            return f"{name} is {tuple(saved[name].shape)} there, {tuple(tensor.shape)} here"
    missing, extra = sorted(own.keys() - saved.keys()), sorted(saved.keys() - own.keys())
    if missing:
        return f"it lacks {', '.join(missing[:3])}" + (" ..." if len(missing) > 3 else "")
    if extra:
        return f"it has {', '.join(extra[:3])}" + (" ..." if len(extra) > 3 else "") + " besides"
    return None


def _settings_note(cfg: ExperimentConfig, checkpoint: Path) -> str:
    """`: X a there, b here; ...; set them as there, ...` from the checkpoint's run's config, or
    a pointer where there is none to compare with."""
    from zeropipe.cli.evaluation import run_config_path
    from zeropipe.config.resume import load_run_config

    if checkpoint.resolve().parent.name != "ckpt":
        return ""  # not in a run directory: no run config to compare with
    path = run_config_path(checkpoint)
    try:
        theirs, _notes = load_run_config(path, [])
    except (ConfigError, OSError):
        return f"; no readable run config at {path} to name the settings that differ"
    diffs = [
        f"{key} {_text(there)} there, {_text(here)} here"
        for key, (there, here) in _shaping_differences(theirs, cfg).items()
    ]
    if not diffs:
        return f"; its run's config ({path}) shapes the network as this one does"
    more = f" and {len(diffs) - MAX_NAMED} more" if len(diffs) > MAX_NAMED else ""
    return (
        f": {'; '.join(diffs[:MAX_NAMED])}{more} (its run's config, {path}); set them as "
        "there, or start without --init-from"
    )


def _shaping_differences(theirs: ExperimentConfig, ours: ExperimentConfig) -> dict[str, tuple]:
    """Dotted key -> (their value, ours) for the settings that may shape the network."""
    a, b = _flat(theirs.model_dump(mode="json")), _flat(ours.model_dump(mode="json"))
    keys = [*ENV_SHAPING, "policy.type"]
    keys += [k for k in b if k.count(".") >= 2 and k.startswith("policy.")]
    keys += [k for k in a if k not in b and k.count(".") >= 2 and k.startswith("policy.")]
    return {
        key: (a.get(key, ABSENT), b.get(key, ABSENT))
        for key in dict.fromkeys(keys)
        if a.get(key, ABSENT) != b.get(key, ABSENT) and not key.startswith(NOT_SHAPING)
    }


def _flat(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _text(value: Any) -> str:
    return "(no such key)" if value is ABSENT else str(value)
