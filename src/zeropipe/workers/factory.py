"""Building the actors: collectors and evaluators with their own network copies and seeds.

Runs in: any (the driver for its learner's network and the sync pipeline's actors; collector and
evaluator workers, process or Ray actor, for their own copies). It sits below `pipeline/` so that a
worker builds its actor without importing the driver's package. Seeds follow the reference's
layout: collector `seed + actor·1000`, evaluator `seed + 100000 + actor·1000`.
"""

from __future__ import annotations

from zeropipe.algos.registry import build_network
from zeropipe.config import ExperimentConfig
from zeropipe.envs import env_spec
from zeropipe.workers.collector import Collector
from zeropipe.workers.evaluator import Evaluator

EVAL_SEED_OFFSET = 100_000
ACTOR_SEED_STRIDE = 1000


def actor_device(cfg: ExperimentConfig, role: str, in_worker: bool) -> str:
    """Device of a collector's or evaluator's network.

    In the sync pipeline the actors live in the driver and share the learner's device; a worker
    (process or Ray actor) uses the GPU only when its `*_num_gpus` share is positive.
    """
    if not in_worker:
        return cfg.policy.device
    ap = cfg.policy.async_pipeline
    share = ap.collector_num_gpus if role == "collector" else ap.evaluator_num_gpus
    return "cuda" if share > 0 else "cpu"


def build_collector(cfg: ExperimentConfig, actor_id: int = 0, in_worker: bool = False) -> Collector:
    """A collector with its own network copy."""
    spec = env_spec(cfg.env)
    device = actor_device(cfg, "collector", in_worker)
    seed = cfg.seed + actor_id * ACTOR_SEED_STRIDE
    return Collector(cfg, build_network(cfg, spec), seed, device)


def build_evaluator(cfg: ExperimentConfig, actor_id: int = 0, in_worker: bool = False) -> Evaluator:
    """An evaluator with its own network copy and fixed seeds."""
    spec = env_spec(cfg.env)
    device = actor_device(cfg, "evaluator", in_worker)
    seed = cfg.seed + EVAL_SEED_OFFSET + actor_id * ACTOR_SEED_STRIDE
    return Evaluator(cfg, build_network(cfg, spec), seed, device)
