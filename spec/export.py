"""``jax.export``: exporting a jit-staged program."""

from spec._src.api.export import (
    Exported,
    default_export_platform,
    deserialize,
    export,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
)

__all__ = ["Exported", "default_export_platform", "deserialize", "export",
           "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version"]
