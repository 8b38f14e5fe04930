"""``jax.profiler``: tracing entry points as no-ops with JAX's signatures."""

from spec._src.profiler import (ProfileOptions, StepTraceAnnotation, TraceAnnotation,
                                annotate_function, start_trace, stop_trace, trace)

__all__ = ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "start_trace", "stop_trace", "trace"]
