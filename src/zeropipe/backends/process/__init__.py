"""The process backend: workers as spawned `multiprocessing` processes, msgpack over pipes,
weights from shared-memory snapshots. `driver.py` is the driver's pool, `worker.py` the spawned
process's entry point, `early.py` the first workers the CLI starts before the driver is built.
"""
