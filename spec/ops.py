"""``spec.ops``: JAX's ``jax.ops``, the segment reductions."""

from spec._src.numpy.segments import segment_max, segment_min, segment_prod, segment_sum

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
