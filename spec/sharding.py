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
from spec._src.core.types import ManualAxisType as ManualAxisType
from spec._src.lax.reshard import auto_axes as auto_axes
from spec._src.lax.reshard import explicit_axes as explicit_axes
from spec._src.lax.reshard import reshard as reshard
from spec._src.lax.reshard import with_sharding_constraint as with_sharding_constraint
from spec._src.core.sharding import make_single_device_sharding as make_single_device_sharding
from spec._src.core.config import no_collectives as no_collectives

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
    "no_collectives",
    "set_mesh",
    "use_abstract_mesh",
]
