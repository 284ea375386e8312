"""Worker backends of the async pipeline: where its collectors and evaluators run.

Runs in: driver and workers. `base.py` is the interface the driver talks to (`WorkerBackend`,
`WorkerHandle`, `WeightStore`); each backend is a package holding both halves: `process/` (the
driver's worker pool and the spawned worker's entry point, over pipes and shared memory) and
`ray/` (the Ray actors, their session and the driver's side). `factory.py` opens the one a
config names. Light on purpose: the CLI imports `process.early` before anything heavy.
"""
