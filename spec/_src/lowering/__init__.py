"""Lowering of closed jaxprs to StableHLO module text.

Each primitive's declaration carries its lowering rule (``Primitive.lowering``);
``emitter.lower_jaxpr`` walks a jaxpr and asks each equation's rule to emit
its StableHLO operations through a ``LoweringContext``.
"""
