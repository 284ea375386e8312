"""A run's outputs: its directory and lock, checkpoints, the typed events and their lines in
`log/metrics.jsonl`, the text log, the scalar sinks (TensorBoard, wandb), the time accounting,
the live status and its endpoint, the console's progress line.

Runs in: driver. Below the pipelines: they write through it; it knows nothing of them.
"""
