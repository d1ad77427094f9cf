"""flux.resource: resource sets (R) and the instance's resources."""

from flux.resource.ResourceSet import ResourceSet
from flux.resource.Rv1Set import Rv1Set
from flux.resource.list import SchedResourceList, resource_list
from flux.resource.status import ResourceStatus, resource_status

__all__ = ["ResourceSet", "Rv1Set", "SchedResourceList", "resource_list", "ResourceStatus", "resource_status"]
