"""zeropipe benchmarks: `make bench` (python -m benchmarks) prints every figure side by side."""
