"""flux.resource.Rv1Set: the R version 1 implementation behind ResourceSet.

It holds a flux_lite.formats.rset.Rset (immutable) and replaces it on every
change: reading R (librlist's rules: rlist_from_dict), its encoding, the set
operations and RFC 31 constraints are the library's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flux.hostlist import Hostlist
from flux.idset import IDset
from flux_lite.formats.idset import IDset as _IDs
from flux_lite.formats.rset import Rset, rlist_from_dict

__all__ = ["Rv1Set"]


def _ids(ranks: Any) -> _IDs:
    """The library idset of a ranks argument (flux IDset, idset string, int, iterable)."""
    if not isinstance(ranks, IDset):
        ranks = IDset(ranks)
    return ranks._ids


def _constraint(c: Any) -> Any:
    """An RFC 31 object with Flux's shorthands written out: Flux's Rv1Set
    takes a single string as the value of ``hostlist`` and ``ranks``."""
    if isinstance(c, dict):
        out = {}
        for op, arg in c.items():
            if op in ("hostlist", "ranks") and isinstance(arg, str):
                arg = [arg]
            elif op in ("and", "or", "not") and isinstance(arg, list):
                arg = [_constraint(sub) for sub in arg]
            out[op] = arg
        return out
    return c


class Rv1Set:
    """R version 1 resources: per rank a hostname, cores and gpus; properties."""

    version = 1

    def __init__(self, arg: Any = None, keep_scheduling: bool = False) -> None:
        if arg is None:
            self._rs = Rset()
            return
        if isinstance(arg, str):
            arg = json.loads(arg)
        if not isinstance(arg, Mapping):
            raise TypeError(f"Rv1Set cannot be instantiated from {type(arg)}")
        version = arg["version"]
        if version != 1:
            raise ValueError(f"R version {version} not supported")
        obj = dict(arg)
        if not keep_scheduling:
            # (scheduler-private data, kept only by those that pass it on)
            obj.pop("scheduling", None)
        obj.setdefault("execution", {"R_lite": []})
        # read as librlist reads it (a rank may have gpus and no cores)
        self._rs = rlist_from_dict(obj)

    @classmethod
    def _of(cls, rs: Rset) -> Rv1Set:
        new = cls.__new__(cls)
        new._rs = rs
        return new

    def dumps(self) -> str:
        return self._rs.summary()

    def encode(self) -> str:
        return self._rs.to_json()

    def to_dict(self) -> dict:
        return self._rs.to_dict()

    def nodelist(self) -> Hostlist:
        return Hostlist._of(self._rs.nodelist)

    def ranks(self) -> IDset:
        return IDset._of(self._rs.ranks)

    def nnodes(self) -> int:
        return self._rs.nnodes

    def count(self, name: str) -> int:
        if name == "core":
            return self._rs.ncores
        if name == "gpu":
            return self._rs.ngpus
        return 0

    def copy(self) -> Rv1Set:
        return Rv1Set._of(self._rs)

    def copy_ranks(self, ranks: Any) -> Rv1Set:
        return Rv1Set._of(self._rs.copy_ranks(_ids(ranks)))

    def union(self, other: Rv1Set) -> Rv1Set:
        return Rv1Set._of(self._rs.union(other._rs))

    def diff(self, other: Rv1Set) -> Rv1Set:
        return Rv1Set._of(self._rs.difference(other._rs))

    def intersect(self, other: Rv1Set) -> Rv1Set:
        return Rv1Set._of(self._rs.intersection(other._rs))

    def append(self, other: Rv1Set) -> None:
        self._rs = self._rs.union(other._rs)

    def add(self, other: Rv1Set) -> None:
        self._rs = self._rs.add(other._rs)

    def remove_ranks(self, ranks: Any) -> Rv1Set:
        self._rs = self._rs.remove_ranks(_ids(ranks))
        return self

    def set_property(self, name: str, ranks: Any = None) -> Rv1Set:
        if ranks is None:
            ids = self._rs.ranks
        else:
            try:
                ids = _ids(str(ranks))
            except ValueError as exc:
                raise ValueError(f"invalid rank idset {ranks!r}: {exc}") from None
        self._rs = self._rs.with_properties({name: ids})
        return self

    def get_properties(self) -> str:
        return json.dumps({name: str(ids) for name, ids in self._rs.properties.items()})

    def get_expiration(self) -> float:
        return self._rs.expiration

    def set_expiration(self, expiration: float) -> None:
        self._rs = self._rs.with_times(expiration=float(expiration))

    def get_starttime(self) -> float:
        return self._rs.starttime

    def set_starttime(self, starttime: float) -> None:
        self._rs = self._rs.with_times(starttime=float(starttime))

    @property
    def scheduling(self) -> Any:
        """The opaque R.scheduling value (None unless kept or set)."""
        return self._rs.scheduling

    @scheduling.setter
    def scheduling(self, value: Any) -> None:
        self._rs = self._rs.with_scheduling(value)

    @property
    def _ranks(self) -> dict[int, dict[str, Any]]:
        """Flux's per-rank view: rank -> hostname, cores and gpus (frozensets
        of ids), made when asked (custom pools and their tests read it)."""
        return {
            rank: {"hostname": host, "cores": frozenset(cores), "gpus": frozenset(gpus)}
            for rank, host, cores, gpus in self._rs.nodes()
        }

    @property
    def _properties(self) -> dict[str, set[int]]:
        """Flux's property view: name -> set of ranks (a copy)."""
        return {name: set(ids) for name, ids in self._rs.properties.items()}

    @property
    def _scheduling(self) -> Any:
        return self._rs.scheduling

    @property
    def _nslots(self) -> int:
        """R's execution.nslots (0: not given)."""
        return self._rs.nslots

    def _matches_constraint(self, rank: int, info: Any, constraint: Any) -> bool:
        """Whether rank satisfies an RFC 31 constraint (a dict; ValueError
        for a bad one). info, Flux's per-rank view, is not needed here."""
        return rank in self._rs.ranks_matching(_constraint(constraint))

    def copy_constraint(self, constraint: Any) -> Rv1Set:
        if isinstance(constraint, str):
            constraint = json.loads(constraint)
        return Rv1Set._of(self._rs.copy_constraint(_constraint(constraint)))
