"""flux.resource: resource sets (R) and the instance's resources."""

from flux.resource.ResourceSet import ResourceSet
from flux.resource.Rv1Set import Rv1Set

__all__ = ["ResourceSet", "Rv1Set"]
