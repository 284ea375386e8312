"""How many torch threads the learner's process gets: chosen once per run, from the model and
the cores, and kept across `--resume`.

Runs in: driver. Measured on a 2-core machine: with torch's default of one thread per
core, the CartPole MuZero learner (an MLP, ~50 ms a step) ran 3.7x slower per step as soon as one
other process wanted a core, and 30-50x slower beside two niced processes, while one thread ran
at its full speed alone and beside them. Every op of a small model is so short that the
intra-op pool's barriers cost more than they share; when another process holds one of the
cores, each barrier waits for a descheduled thread. So:

- `policy.learner_num_threads` set: that, always (the explicit option wins);
- resumed: the count the run started with (two counts give different float sums, so a seed's
  trajectory depends on it; `--set policy.learner_num_threads=N` still overrides);
- a model without convolutions (the MLP families, UniZero's transformer on vectors): one
  thread;
- a conv model: the cores this process may use, less the cores other processes are running on
  now (sampled once, at the start; the run's own async workers are not "other"), at least one.

The async pipeline takes the fewer of this choice and the cores its busy workers leave
(`schedule.learner_threads`), step by step: a conv learner takes both cores of a 2-core machine
while its collector is idle (backpressure) and leaves it one while the collector collects.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from zeropipe.pipeline.schedule import usable_cores

log = logging.getLogger("zeropipe.driver")


@dataclass(frozen=True)
class ThreadChoice:
    """The learner's torch threads and why (logged once, saved in the checkpoint)."""

    threads: int
    reason: str
    explicit: bool = False  # set by `policy.learner_num_threads`: the async pipeline keeps it


def choose_threads(
    configured: int | None,
    network: torch.nn.Module,
    restored: int | None = None,
    own_workers: int = 0,
) -> ThreadChoice:
    """The learner's thread count (see the module docstring for the rule and its measurement).

    Args:
        configured: `policy.learner_num_threads` (None: choose).
        network: the learner's network (its layers decide small or large).
        restored: the count a resumed run started with (None: a new run, or an older checkpoint).
        own_workers: worker processes of this run that may be running now (the async pipeline's,
            started before the learner is built and busy importing): not counted as other
            processes' load. Counted as such, every async conv learner got one thread for the
            whole run (the step-by-step rule only lowers the count).
    """
    if configured is not None:
        return ThreadChoice(configured, "policy.learner_num_threads", explicit=True)
    if restored is not None:
        return ThreadChoice(restored, "the count this run started with (from its checkpoint)")
    if not has_convolutions(network):
        return ThreadChoice(1, "a model without convolutions: one thread is as fast alone")
    cores = usable_cores()
    others = max(0, busy_elsewhere() - own_workers)
    threads = max(1, cores - others)
    return ThreadChoice(threads, f"a conv model: {cores} usable cores, {others} busy elsewhere")


def apply_threads(choice: ThreadChoice) -> None:
    """Set the calling thread's torch threads to the choice and say so once."""
    torch.set_num_threads(choice.threads)
    log.info(
        "torch threads of the learner: %d (%s; set policy.learner_num_threads to choose)",
        choice.threads,
        choice.reason,
    )


def has_convolutions(network: torch.nn.Module) -> bool:
    """Whether any layer of `network` is a convolution (the models whose ops are big enough to
    share across threads)."""
    return any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in network.modules())


def busy_elsewhere(stat: Path = Path("/proc/stat")) -> int:
    """Cores other processes are running on now: the kernel's runnable-task count less this
    process's running thread (0 where /proc/stat is not there)."""
    try:
        for line in stat.read_text().splitlines():
            if line.startswith("procs_running "):
                return max(0, int(line.split()[1]) - 1)
    except OSError:
        pass
    return 0 if not hasattr(os, "getloadavg") else max(0, round(os.getloadavg()[0]) - 1)
