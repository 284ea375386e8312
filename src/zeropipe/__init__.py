"""zeropipe: MuZero-family training with a sync and an async segment pipeline."""

__version__ = "0.1.0"
