"""The async segment pipeline's settings (`policy.async_pipeline`; docs/async.md).

Runs in: any. Names and defaults are the contract.

Request deadlines (pipeline/deadline.py): a collect or eval request gets
`request_deadline_factor` × the longest of its role's recent request durations, at least
`min_request_deadline_s`; a worker's first request after each start (model load, env build,
search compile) gets at least `first_request_deadline_s`. A request past its deadline marks its
worker hung: it is killed and replaced under the restart rules (`max_restarts_per_window`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from zeropipe.config.section import COLLECT_RULE, PROCESS_ONLY, RAY_ONLY, Section

# collect_freshness 'refresh': a collect comes back this many times per game segment
REFRESH_PARTS = 5
# options folded into collect_freshness -> what to write instead
RENAMED = {
    "collect_launch": "'just_in_time' for collect_launch: just_in_time, else leave it out",
    "collect_refresh_steps": "'refresh' (every game_segment_length // 5 steps) for a number",
}


class AsyncPipelineConfig(Section):
    """The async segment pipeline (docs/async.md). Names and defaults are the contract."""

    resume_may_change = True  # where and how the workers run; not its COLLECT_RULE fields

    enabled: bool = Field(False, description="Run the async pipeline (CLI: --async-pipeline).")
    num_collector_actors: int = Field(1, ge=1, description="Collector worker processes.")
    num_evaluator_actors: int = Field(1, ge=1, description="Evaluator worker processes.")
    max_collect_inflight: int | None = Field(
        None,
        ge=1,
        description="Collect requests running at once (None: num_collector_actors).",
        json_schema_extra=COLLECT_RULE,
    )
    max_eval_inflight: int = Field(1, ge=1, description="Eval requests running at once.")
    max_train_chunk_steps: int = Field(
        4,
        ge=1,
        description="Learner steps before the driver yields to messages.",
        json_schema_extra=COLLECT_RULE,
    )
    weight_sync_interval: int = Field(
        1,
        ge=1,
        description="Minimum train_iter gap between published snapshots.",
        json_schema_extra=COLLECT_RULE,
    )
    max_policy_lag: int = Field(
        0,
        description="Max collector version lag; exceeding it forces a publish; < 0 never forces.",
        json_schema_extra=COLLECT_RULE,
    )
    max_train_budget_queue_size: int | None = Field(
        None,
        ge=1,
        description="Train-budget queue cap for backpressure, inactive until the buffer is "
        "trainable (None: 2 × num_collector_actors).",
        json_schema_extra=COLLECT_RULE,
    )
    collect_freshness: Literal["reference", "just_in_time", "refresh"] = Field(
        "refresh",
        description="How fresh the collecting policy is kept while the learner trains (the one "
        "lag control beside the reference's weight_sync_interval, max_policy_lag and "
        "max_train_budget_queue_size). 'reference': a collect is launched whenever the budget "
        "queue allows and plays one weights version (LightZero's rule). 'just_in_time': a "
        "collect is launched only once the learner steps still owed would run out within one "
        "collect (recent median collect, average learner step), so its data arrives as training "
        "runs out: the learner no less busy, the collect policy fresher. 'refresh': launched as "
        "the reference's, but a collect in flight comes back every REFRESH_PARTS-th of a game "
        "segment (10 steps of every env for a segment of 50) and goes on with the newest "
        "weights; its segments are pushed and its one train budget queued only when the whole "
        "collect is done. Default 'refresh' (a deliberate difference from the reference): one "
        "run at a time on 2 cores, judged on 16 eval episodes, CartPole UniZero's async wall "
        "time to 195 was 0.96x sync's with it over four seeds and 1.29x with just_in_time "
        "(docs: async_time).",
        json_schema_extra=COLLECT_RULE,
    )
    max_queued_evals: int = Field(
        4,
        ge=1,
        description="policy.eval_grid set: due evals held waiting for an evaluator (past that "
        "a due eval waits for the grid's next point: the next budget end, or learner step).",
    )
    eval_at_start: bool = Field(False, description="Evaluate once before training.")
    collector_num_cpus: int = Field(1, ge=1, description="Torch threads per collector worker.")
    worker_niceness: int = Field(
        0,
        ge=0,
        le=19,
        description="Process backend: niceness each collector and evaluator worker adds to its "
        "own (os.nice) at start, so that on a machine with fewer cores than processes the "
        "learner, which backpressure waits on, wins the cores and the workers use what it "
        "leaves. 0 keeps the driver's. (Ray starts its workers at its own worker_niceness, 15.)",
        json_schema_extra=PROCESS_ONLY,
    )
    collector_niceness: int = Field(
        19,
        ge=0,
        le=19,
        description="Process backend: niceness each collector adds beside worker_niceness, so "
        "that while an eval runs the evaluator and the learner win the cores and a collector "
        "uses what they leave. The eval's result is when a run learns it has reached its goal, "
        "and a collector's data waits in the budget queue anyway; between evals a collector "
        "still has the core the learner leaves. One run at a time on 2 cores, 16 eval "
        "episodes: CartPole UniZero's evals took 36.8 ms per step of their longest episode with "
        "19 against 41 ms with 0 (sync's: 35.7), and a seed that passed at the same eval either "
        "way took 0.92x the wall time; MuZero and sampled MuZero, whose evals are short, did not "
        "move (docs: async_time). 0: a collector at the evaluator's niceness.",
        json_schema_extra=PROCESS_ONLY,
    )
    evaluator_num_cpus: int = Field(1, ge=1, description="Torch threads per evaluator worker.")
    collector_num_gpus: float = Field(0.0, ge=0.0, description="GPU share per collector worker.")
    evaluator_num_gpus: float = Field(0.0, ge=0.0, description="GPU share per evaluator worker.")
    collector_resources: dict[str, float] = Field(
        default_factory=dict,
        description="Ray backend: custom Ray resources each collector actor needs, e.g. "
        "{collector_node: 1}; the actors are placed on the nodes that offer them (`ray start "
        "--resources`).",
        json_schema_extra=RAY_ONLY,
    )
    evaluator_resources: dict[str, float] = Field(
        default_factory=dict,
        description="Ray backend: custom Ray resources each evaluator actor needs (see "
        "collector_resources).",
        json_schema_extra=RAY_ONLY,
    )
    buffer_stats_interval: int = Field(
        100, ge=1, description="Buffer statistics logging interval in train_iter."
    )
    poll_interval_s: float = Field(0.1, gt=0.0, description="Driver idle poll interval.")
    shutdown_timeout_s: float = Field(
        30.0, gt=0.0, description="Time allowed for workers to exit before they are killed."
    )
    backend: Literal["process", "ray"] = Field(
        "process",
        description="Where the workers run: 'process' (worker processes on this machine, pipes, "
        "shared-memory snapshots) or 'ray' (Ray actors anywhere in a Ray cluster, weights in "
        'Ray\'s object store; needs the ray extra: pip install -e ".[ray]").',
    )
    ray_address: str | None = Field(
        None,
        description="Ray backend: the cluster to join ('auto': the one started on this machine "
        "by `ray start`; 'HOST:PORT' or 'ray://HOST:PORT'). None: the run starts a private Ray "
        "on this machine and stops it at the end.",
        json_schema_extra=RAY_ONLY,
    )
    ray_local_mode: bool = Field(
        False,
        description="Ray backend, LightZero's name: keep the run on this machine. The Ray this "
        "extra installs (2.60) no longer has ray.init(local_mode=True), which ran every task "
        "serially in the driver process; the nearest honest behaviour is what it does here: a "
        "private single-node Ray started and stopped by the run (the same as leaving ray_address "
        "unset), with the actors as separate processes. Cannot be combined with ray_address.",
        json_schema_extra=RAY_ONLY,
    )
    max_restarts_per_window: int = Field(
        3,
        ge=0,
        description="Restarts allowed per worker within restart_window_s; one more death inside "
        "the window ends the run (a worker that keeps dying is a bug to report).",
    )
    restart_window_s: float = Field(
        3600.0,
        gt=0.0,
        description="Sliding window (seconds) over which a worker's restarts are counted, so a "
        "long run survives occasional unrelated crashes.",
    )

    request_deadline_factor: float | None = Field(
        10.0,
        ge=1.0,
        description="A collect or eval request that gets no reply within this multiple of the "
        "longest of its role's last 16 request durations (and at least min_request_deadline_s, "
        "or first_request_deadline_s) marks its worker hung: it is killed and replaced under the "
        "restart rules, its request lost. None: no deadline (a stopped worker is never noticed).",
    )
    min_request_deadline_s: float = Field(
        300.0,
        gt=0.0,
        description="The least time a request of a worker that already answered one is allowed "
        "before the worker counts as hung (generous: a false alarm costs the request's work and "
        "a restart, a late one only idle time).",
    )
    first_request_deadline_s: float = Field(
        900.0,
        gt=0.0,
        description="The least time the first request of each worker start is allowed (it also "
        "loads the model, builds its envs and compiles the search, which no measured request "
        "shows); also the least for any request before its role has a measured one.",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_lag_control(cls, data: Any) -> Any:
        """The two options it replaces are answered with the one to use."""
        if isinstance(data, dict):
            for old, use in RENAMED.items():
                if old in data:
                    raise ValueError(f"{old} is now part of collect_freshness: {use}")
        return data

    def refresh_steps(self, game_segment_length: int) -> int | None:
        """Steps of every env after which a collect in flight takes the newest weights
        (`collect_freshness: refresh`), else None (one weights version per collect)."""
        if self.collect_freshness != "refresh":
            return None
        return max(1, game_segment_length // REFRESH_PARTS)

    @property
    def resolved_max_collect_inflight(self) -> int:
        """`max_collect_inflight`, defaulting to the number of collector actors."""
        if self.max_collect_inflight is None:
            return self.num_collector_actors
        return self.max_collect_inflight

    @property
    def resolved_max_train_budget_queue_size(self) -> int:
        """`max_train_budget_queue_size`, defaulting to max(1, 2 × num_collector_actors)."""
        if self.max_train_budget_queue_size is None:
            return max(1, 2 * self.num_collector_actors)
        return self.max_train_budget_queue_size
