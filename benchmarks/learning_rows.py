"""What `python -m benchmarks learning` reads and judges: one run's eval curve (`Curve`) and the
judgement of one (config, pipeline) over its seeds (`Row`, the results files' rows).

Runs in: the benchmark's process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.learning_dirs import RunSpec


@dataclass(frozen=True)
class Curve:
    """The eval curve of one finished run (empty when it logged no eval)."""

    spec: RunSpec
    envsteps: list[int]
    wall_s: list[float]
    rewards: list[float]
    returncode: int
    # per eval: the evaluated weights' learner steps, and the learner steps of collected data
    # they had not yet trained for (the eval lines' owed_learner_steps); NaN where not logged
    learner_steps: list[float] = field(default_factory=list)
    owed: list[float] = field(default_factory=list)
    # the process's wall seconds from start to exit (what a user waits; None: not measured),
    # and its `stop` line (the stop reason and the time accounting's phase seconds)
    process_wall_s: float | None = None
    stop: dict = field(default_factory=dict)
    # learning_time.grid_pace: when the first scored weights were made, and their eval's latency
    pace: tuple[float, float] | None = None


@dataclass(frozen=True)
class Row:
    """The judgement of one (config, pipeline) over its seeds."""

    config: str
    pipeline: str
    threshold: float
    seeds: int
    successes: int
    envsteps_to_threshold: list[int]
    wall_s_to_threshold: list[float]
    best: list[float]
    final: list[float]
    largest_drop_after_success: list[float]
    failed_runs: int
    hold_envsteps: int = 0
    # per successful seed: the lowest eval in (first success, first success + hold_envsteps],
    # None where the run stopped before the end of that window
    lowest_in_hold: list[float | None] = field(default_factory=list)
    # per successful seed where its eval line says (NaN dropped): learner steps at the first
    # success, and the learner steps owed then (data collected and not yet trained for)
    learner_steps_to_threshold: list[float] = field(default_factory=list)
    owed_at_threshold: list[float] = field(default_factory=list)
    # per seed whose run stopped at the threshold (its stop value): the process's wall seconds,
    # start to exit (what a user waits for the goal), its perfect-overlap bound (phases.py) and
    # its learner's busy fraction, from the `stop` line
    process_wall_s_to_goal: list[float] = field(default_factory=list)
    overlap_bound_s: list[float] = field(default_factory=list)
    learner_busy_fraction: list[float] = field(default_factory=list)
    # median seconds per phase over those seeds (collect, train, driver, eval, wait)
    phase_s: dict[str, float] = field(default_factory=dict)
    # per seed (learning_time.grid_pace): process seconds when the first scored weights were
    # made, and seconds from then to their eval's result
    first_grid_version_s: list[float] = field(default_factory=list)
    first_eval_latency_s: list[float] = field(default_factory=list)
    # where the wall fields were computed (benchmarks.learning_pace): the env steps per second
    # of the one-at-a-time pace runs they were divided by; empty for measured walls
    paced_envstep_per_s: list[float] = field(default_factory=list)
