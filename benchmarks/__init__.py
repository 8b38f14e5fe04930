"""Side-by-side performance ratios of spec against NumPy and JAX (``python -m benchmarks.run``)."""
