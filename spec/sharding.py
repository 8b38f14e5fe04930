"""``jax.sharding``: meshes, partition specs and shardings."""

from spec._src.core.sharding import (
    AbstractDevice,
    AbstractMesh,
    AxisType,
    DuplicateSpecError,
    IndivisibleError,
    Mesh,
    NamedSharding,
    P,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    UnreducedKind,
    get_abstract_mesh,
    get_concrete_mesh,
    use_abstract_mesh,
)
from spec._src.api.sharding import get_mesh, make_mesh, set_mesh

__all__ = [
    "AbstractDevice",
    "AbstractMesh",
    "AxisType",
    "DuplicateSpecError",
    "IndivisibleError",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "UnreducedKind",
    "get_abstract_mesh",
    "get_concrete_mesh",
    "get_mesh",
    "make_mesh",
    "set_mesh",
    "use_abstract_mesh",
]
