"""flux.resource: resource sets (R), the instance's resources, and the
resource pools scheduler modules allocate from.

The pools (ResourcePool, Rv1Pool, ResourceCount and the two allocation
errors) are loaded when first named: a script that only reads R pays
nothing for flux-lite's scheduler pool.
"""

import sys
from importlib import import_module
from types import ModuleType
from typing import Any

from flux.resource.ResourceSet import ResourceSet
from flux.resource.Rv1Set import Rv1Set
from flux.resource.list import SchedResourceList, resource_list
from flux.resource.status import ResourceStatus, resource_status

__all__ = [
    "ResourceSet",
    "Rv1Set",
    "SchedResourceList",
    "resource_list",
    "ResourceStatus",
    "resource_status",
    "ResourceCount",
    "ResourcePool",
    "Rv1Pool",
    "InsufficientResources",
    "InfeasibleRequest",
]

# name -> the module defining it
_LAZY = {
    "ResourceCount": "flux.resource.ResourceCount",
    "ResourcePool": "flux.resource.ResourcePool",
    "Rv1Pool": "flux.resource.Rv1Pool",
    "InsufficientResources": "flux.resource.ResourcePoolImplementation",
    "InfeasibleRequest": "flux.resource.ResourcePoolImplementation",
}


class _Package(ModuleType):
    """Importing flux.resource.Rv1Pool (the module) sets the package's
    attribute Rv1Pool to it; Flux's package names the class there (its
    __init__ imports the class over the module), so this one does too."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and _LAZY.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flux.resource' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
