"""Matmul precision: Precision levels, dot algorithms, the default-precision config."""
