"""Replay: GameSegment storage, uniform / prioritized sampling, unroll windows; never calls a model.

Runs in: driver.
"""

from zeropipe.buffer.batch import ReanalysisBatch, ReplayBatch
from zeropipe.buffer.replay import ReplayBuffer
from zeropipe.buffer.segment import GameSegment

__all__ = ["GameSegment", "ReanalysisBatch", "ReplayBatch", "ReplayBuffer"]
