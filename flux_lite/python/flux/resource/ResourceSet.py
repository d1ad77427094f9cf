"""flux.resource.ResourceSet: Flux's mutable resource set (R, RFC 20) over
flux-lite's Rset (through flux.resource.Rv1Set)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flux.hostlist import Hostlist
from flux.idset import IDset
from flux.resource.Rv1Set import Rv1Set

__all__ = ["ResourceSet"]


class ResourceSet:
    """A set of resources, from an R string, an R dict, an Rv1Set, or empty.

    TypeError for anything else, ValueError for a bad R or version, KeyError
    for a dict without ``version``, json.JSONDecodeError for bad JSON.
    Keyword arguments (``keep_scheduling=True``) go to the Rv1Set.
    """

    def __init__(self, arg: Any = None, version: int = 1, **kwargs: Any) -> None:
        self._state = None
        if isinstance(arg, Rv1Set):
            self.impl = arg
            self.version = arg.version
            return
        if isinstance(arg, str):
            arg = json.loads(arg)
        if isinstance(arg, Mapping):
            version = arg["version"]
        elif arg is not None:
            raise TypeError(f"ResourceSet cannot be instantiated from {type(arg)}")
        if version != 1:
            raise ValueError(f"R version {version} not supported")
        self.version = 1
        self.impl = Rv1Set(arg, **kwargs)

    def __str__(self) -> str:
        return self.dumps()

    def __and__(self, arg: Any) -> ResourceSet:
        return self.intersect(arg)

    def __sub__(self, arg: Any) -> ResourceSet:
        return self.diff(arg)

    def __or__(self, arg: Any) -> ResourceSet:
        return self.union(arg)

    def _rset(self, arg: Any) -> ResourceSet:
        return arg if isinstance(arg, ResourceSet) else ResourceSet(arg, version=self.version)

    def dumps(self) -> str:
        """The short form: ``rank[0-3]/core[0-3],gpu0``."""
        return self.impl.dumps()

    def encode(self) -> str:
        """R as a JSON string."""
        return self.impl.encode()

    def to_dict(self) -> dict:
        """R as a dict."""
        return self.impl.to_dict()

    def count(self, name: str) -> int:
        """The number of resources of a type ("core", "gpu"; 0 for others)."""
        return self.impl.count(name)

    def append(self, *args: Any) -> ResourceSet:
        for arg in args:
            self.impl.append(self._rset(arg).impl)
        return self

    def add(self, *args: Any) -> ResourceSet:
        """Add the resources not already members (properties of added ranks only)."""
        for arg in args:
            self.impl.add(self._rset(arg).impl)
        return self

    def copy(self) -> ResourceSet:
        rset = ResourceSet(self.impl.copy())
        rset.state = self.state
        return rset

    def _run_op(self, method: str, *args: Any) -> ResourceSet:
        result = self.copy()
        for arg in args:
            result = ResourceSet(getattr(result.impl, method)(self._rset(arg).impl))
        result.state = self.state
        return result

    def union(self, *args: Any) -> ResourceSet:
        return self._run_op("union", *args)

    def diff(self, *args: Any) -> ResourceSet:
        return self._run_op("diff", *args)

    def intersect(self, *args: Any) -> ResourceSet:
        return self._run_op("intersect", *args)

    def copy_constraint(self, constraint: Any) -> ResourceSet:
        """The ranks matching an RFC 31 constraint (dict or JSON string)."""
        return ResourceSet(self.impl.copy_constraint(constraint))

    def set_property(self, name: str, ranks: Any = None) -> ResourceSet:
        """Set property name on ranks (all ranks when None)."""
        self.impl.set_property(name, ranks)
        return self

    def get_properties(self) -> str:
        """The RFC 20 properties object, as a JSON string."""
        return self.impl.get_properties()

    def remove_ranks(self, ranks: Any) -> ResourceSet:
        self.impl.remove_ranks(ranks)
        return self

    def copy_ranks(self, ranks: Any) -> ResourceSet:
        rset = ResourceSet(self.impl.copy_ranks(ranks))
        rset.state = self.state
        return rset

    def host_ranks(self, hosts: Any, ignore_nomatch: bool = False) -> list[int]:
        """The ranks of hosts, in their order (FileNotFoundError for a
        host not in the set unless ignore_nomatch)."""
        ranks = list(self.ranks)
        return [ranks[i] for i in self.nodelist.index(hosts, ignore_nomatch=ignore_nomatch)]

    @property
    def nodelist(self) -> Hostlist:
        return self.impl.nodelist()

    @property
    def state(self) -> Any:
        """An optional state of the set (e.g. "up")."""
        return self._state

    @state.setter
    def state(self, value: Any) -> None:
        self._state = value

    @property
    def ranks(self) -> IDset:
        return self.impl.ranks()

    @property
    def nnodes(self) -> int:
        return self.impl.nnodes()

    @property
    def ncores(self) -> int:
        return self.impl.count("core")

    @property
    def ngpus(self) -> int:
        return self.impl.count("gpu")

    @property
    def rlist(self) -> str:
        return self.impl.dumps()

    @property
    def properties(self) -> str:
        """The property names, comma separated."""
        return ",".join(json.loads(self.get_properties()))

    @property
    def expiration(self) -> float:
        return self.impl.get_expiration()

    @expiration.setter
    def expiration(self, expiration: float) -> None:
        self.impl.set_expiration(expiration)

    @property
    def starttime(self) -> float:
        return self.impl.get_starttime()

    @starttime.setter
    def starttime(self, starttime: float) -> None:
        self.impl.set_starttime(starttime)
