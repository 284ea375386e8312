"""The config of a resumed run: the run's own `config.yaml`, with only the overrides that leave
the run the same run.

Runs in: driver (the CLI, before anything is written). A resumed run continues with the settings
it started with, whatever the YAML file on the command line now says: its model, search, data and
learner settings are in the checkpoint's weights, buffer and optimizer, and changing them would
make a different run (a different model size would not even load). What may change is how long it
runs, when it stops, when it evaluates and saves, and where its workers run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from zeropipe.config.async_pipeline import AsyncPipelineConfig
from zeropipe.config.experiment import ExperimentConfig
from zeropipe.config.loader import (
    ConfigError,
    apply_override,
    config_from_dict,
    load_config,
    read_yaml,
)
from zeropipe.config.overrides import check_known_key
from zeropipe.config.versions import migrate_config

log = logging.getLogger("zeropipe.config")


def _field(key: str) -> tuple[type[BaseModel], FieldInfo] | None:
    """The section class and field a dotted key names (the policy section's base class: a
    type's own options never change on resume), or None."""
    model: type[BaseModel] = ExperimentConfig
    *sections, name = key.split(".")
    for part in sections:
        field = model.model_fields.get(part)
        if field is None or not isinstance(field.annotation, type):
            return None
        model = field.annotation
    field = model.model_fields.get(name)
    return None if field is None else (model, field)


def _rule(key: str) -> str | None:
    """A field's rule on resume (config/section.py): "may_change", "collect_rule" or None."""
    found = _field(key)
    if found is None:
        return None
    model, field = found
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    rule = extra.get("on_resume")
    if rule is None and getattr(model, "resume_may_change", False):
        return "may_change"
    return rule if isinstance(rule, str) else None


def resumable(key: str) -> bool:
    """Whether `--set key=...` may change a run on `--resume` (its field says so)."""
    return _rule(key) == "may_change"


def _collect_rule(key: str) -> str | None:
    """The collect rule `key` sets (a COLLECT_RULE field of the async section), or None."""
    return key.rsplit(".", 1)[-1] if _rule(key) == "collect_rule" else None


def _collect_rule_names() -> list[str]:
    """The async section's collect rules, in declaration order."""
    return [
        name
        for name in AsyncPipelineConfig.model_fields
        if _rule(f"policy.async_pipeline.{name}") == "collect_rule"
    ]


def run_directory(target: str | Path, overrides: Sequence[str]) -> Path:
    """The run a `--resume` names: a run directory, or the `exp_name` of a YAML file (after an
    `exp_name=` override)."""
    target = Path(target)
    if target.is_dir():
        return target
    for item in overrides:
        key, _, value = item.partition("=")
        if key.strip() == "exp_name":
            return Path(value.strip())
    raw = read_yaml(target)
    if "exp_name" not in raw:
        raise ConfigError(f"{target}: no exp_name, so no run to resume; pass the run directory")
    return Path(str(raw["exp_name"]))


def load_resume_config(
    target: str | Path, overrides: Sequence[str]
) -> tuple[ExperimentConfig, list[str]]:
    """The resumed run's config and what to tell the user about it.

    Args:
        target: the run directory, or a YAML file whose `exp_name` is the run.
        overrides: `--set` items; each must be `resumable` (`exp_name` may only name the run).

    Returns:
        The run's own config with the overrides applied, and one note per override applied and
        per setting of `target` (a YAML file) that differs from the run's and is ignored.

    Raises:
        ConfigError: no run there, or an override that would change the run.
    """
    run = run_directory(target, overrides)
    saved_path = run / "config.yaml"
    if not saved_path.is_file():
        if Path(target).is_dir():
            if any((run / "ckpt").glob("ckpt_latest*.pth.tar")):
                raise ConfigError(
                    f"--resume: {run} has a checkpoint but no config.yaml (deleted?), and the "
                    "run's config is needed to continue it: put config.yaml back, or pass the "
                    f"config the run was trained with: zeropipe train CONFIG --resume --set "
                    f"exp_name={run}"
                )
            raise ConfigError(f"--resume: {run} holds no run (no config.yaml, no checkpoint)")
        # a directory without the run's own config (not written by zeropipe): the file given
        # is all there is; the checkpoint's own checks follow
        return load_config(target, overrides), []
    saved = read_yaml(saved_path)
    notes = [] if Path(target).is_dir() else _ignored(read_yaml(Path(target)), saved, target)
    raw = yaml.safe_load(yaml.safe_dump(saved))  # a copy
    notes += _resume_in_place(raw, run)
    notes += migrate_config(raw)
    saved_raw = yaml.safe_load(yaml.safe_dump(raw))  # the run's config, before the overrides
    applied = []
    for item in overrides:
        key = item.partition("=")[0].strip()
        if key == "exp_name":
            continue
        check_known_key(item, raw)  # a typo is named as one, not as a change of the run
        if not (resumable(key) or _collect_rule(key)):  # a rule: refused below if it changes
            raise ConfigError(
                f"--set {key}: it would change the run, so --resume refuses it (a resume may "
                "change the budget, stop value, eval and checkpoint cadence, device and worker "
                "settings); start a new run from its weights with --init-from instead"
            )
        before = _get(raw, key)
        applied.append(apply_override(raw, item))
        notes.append(f"--resume: {key} {before!r} -> {_get(raw, key)!r}")
    cfg = config_from_dict(raw, source=str(saved_path), overrides=applied)
    if applied:
        _check_collect_rules(config_from_dict(saved_raw, source=str(saved_path)), cfg, overrides)
    return cfg, notes


def _collect_rules(cfg: ExperimentConfig) -> dict[str, Any]:
    """The async settings that decide which data is collected when, resolved."""
    pipeline = cfg.policy.async_pipeline
    rules = {name: getattr(pipeline, name) for name in _collect_rule_names()}
    rules["max_train_budget_queue_size"] = pipeline.resolved_max_train_budget_queue_size
    rules["max_collect_inflight"] = pipeline.resolved_max_collect_inflight
    return rules


def _check_collect_rules(
    saved: ExperimentConfig, resumed: ExperimentConfig, overrides: Sequence[str]
) -> None:
    """Refuse overrides that change a collect rule, set directly or through the key it follows
    (the budget queue and the collects in flight follow `num_collector_actors` when unset);
    setting one to the value it has is allowed.

    Raises:
        ConfigError: naming the first rule that would change and the key that changes it.
    """
    before, after = _collect_rules(saved), _collect_rules(resumed)
    changed = [name for name in _collect_rule_names() if before[name] != after[name]]
    if not changed:
        return
    name = changed[0]
    keys = [item.partition("=")[0].strip() for item in overrides]
    direct = [k for k in keys if _collect_rule(k) == name]
    if direct:
        raise ConfigError(
            f"--set {direct[0]}: it would change the run ({before[name]} -> {after[name]}): it "
            "decides what is collected when, so --resume refuses it; start a new run from its "
            "weights with --init-from instead"
        )
    others = ", ".join(k for k in keys if k.startswith("policy.async_pipeline."))
    follows = ", ".join(
        f"policy.async_pipeline.{n} follows it ({before[n]} -> {after[n]})" for n in changed
    )
    keep = " ".join(f"policy.async_pipeline.{n}={before[n]}" for n in changed)
    raise ConfigError(
        f"--set {others}: it would change the run: {follows}, and "
        f"{'they decide' if len(changed) > 1 else 'it decides'} what is collected when; set "
        f"{keep} too to keep {'them' if len(changed) > 1 else 'it'}"
    )


def _resume_in_place(raw: dict[str, Any], run: Path) -> list[str]:
    """Point `exp_name` at the directory being resumed (in place): a copied or moved run, or
    one named by an absolute path from another working directory, continues where it is, never
    in the directory its config.yaml was first written for.

    Returns:
        One note if `exp_name` changed.
    """
    before = raw.get("exp_name")
    raw["exp_name"] = str(run)
    if before is None or Path(str(before)) == run:
        return []
    return [f"--resume: exp_name {before!r} -> {str(run)!r} (the run directory resumed)"]


def load_run_config(
    path: Path, overrides: Sequence[str] = ()
) -> tuple[ExperimentConfig, list[str]]:
    """A run directory's own config.yaml as the run trained with it: the behaviour of its time
    for options it predates (config/versions.py's migrations), then `overrides`. `zeropipe eval`
    scores a run's checkpoint this way: an option that changes the network's forward pass (the MLP
    dynamics' residual, the Gumbel root's prior term) must not take its new default under old
    weights.

    Returns:
        The config, and one note per option filled in.
    """
    raw = read_yaml(path)
    notes = migrate_config(raw, "eval")
    applied = [apply_override(raw, item) for item in overrides]
    return config_from_dict(raw, source=str(path), overrides=applied), notes


def _ignored(given: dict[str, Any], saved: dict[str, Any], target: str | Path) -> list[str]:
    """A note naming the settings of `given` that differ from the run's own."""
    differ = sorted(
        key for key in _flatten(given) if key != "exp_name" and _get(saved, key) != _get(given, key)
    )
    if not differ:
        return []
    shown = ", ".join(differ[:6]) + (", ..." if len(differ) > 6 else "")
    return [f"--resume: the run's own config.yaml is used; {target} differs in {shown} (ignored)"]


def _flatten(raw: dict[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        keys += _flatten(value, dotted + ".") if isinstance(value, dict) else [dotted]
    return keys


def _get(raw: dict[str, Any], key: str) -> Any:
    node: Any = raw
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
