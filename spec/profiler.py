"""``jax.profiler``: profiling entry points as no-ops with JAX's signatures and errors."""

from spec._src.profiler import (
    ProfileData,
    ProfileEvent,
    ProfileLine,
    ProfileOptions,
    ProfilePlane,
    ProfileSession,
    StepTraceAnnotation,
    TraceAnnotation,
    annotate_function,
    device_memory_profile,
    export_profile_data,
    register_subprocess,
    save_device_memory_profile,
    start_server,
    start_trace,
    stop_server,
    stop_trace,
    trace,
)

__all__ = ["ProfileData", "ProfileEvent", "ProfileLine", "ProfileOptions", "ProfilePlane",
           "ProfileSession", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "export_profile_data", "register_subprocess",
           "save_device_memory_profile", "start_server", "start_trace", "stop_server",
           "stop_trace", "trace"]
