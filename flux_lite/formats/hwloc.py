"""One node's topology from an hwloc XML file: what Flux reads off it for R
(``flux R encode --xml``: the cores and the compute gpus) and for TreePool
(the ``scheduling.children`` topology that ``flux.resource.TreePool.amend``
writes).

Read as Flux reads it (librlist's rhwloc):

* cores are the Core objects, numbered in document order (hwloc's logical
  index);
* gpus are the OS devices whose ``Backend`` info is CUDA, NVML, OpenCL or
  RSMI, numbered in document order; a device seen again through another
  backend of the same PCI device is the same gpu;
* a gpu belongs to an object when its PCI device lies under the object, or
  the nearest ancestor of the PCI device that has a cpuset lies within the
  object's cpuset.

The TreePool topology (RFC 49 names): from the machine down, CPU containers
(Package, or hwloc 1.x's Socket, as ``socket``; Die, Group) with a cpuset each become a list under
their name (a single one folds into its parent); below the last container
the NUMA nodes within its cpuset become ``numa`` leaves (a single one folds
into the leaf), each with ``cores``, ``gpus`` and ``memory`` (GiB); a
container's gpus no child claimed stay on it; without any NUMA memory the
machine's total is put at the top, and gpus no object claimed too. hwloc 1.x
files hold NUMA nodes in the tree, above their packages; they are taken out
of it (their children belong to their parent), as hwloc 2 does when it
loads such a file. NUMA nodes with an empty cpuset (HBM) hold no cores and
are skipped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from flux_lite.errors import FormatError
from flux_lite.formats.idset import IDset

__all__ = ["Topology", "parse"]

_GPU_BACKENDS = ("CUDA", "NVML", "OpenCL", "RSMI")
# (hwloc 1.x files name packages Socket)
_CONTAINERS = {"Package": "socket", "Socket": "socket", "Die": "Die", "Group": "Group"}
_GIB = 1 << 30


def _cpuset(text: str | None) -> int:
    """An hwloc bitmap ("0x0000ffff,0xffffffff,..."; empty words are 0) as an int."""
    if not text:
        return 0
    if text.startswith("0xf...f"):
        raise FormatError("infinite cpusets are not supported")
    mask = 0
    for word in text.split(","):
        word = word.strip()
        mask = (mask << 32) | (int(word, 16) if word else 0)
    return mask


class _Obj:
    __slots__ = ("type", "cpuset", "children", "io", "parent", "memory", "backend", "name")

    def __init__(self, elem: Any, parent: _Obj | None) -> None:
        self.type = elem.get("type", "")
        self.cpuset = _cpuset(elem.get("cpuset"))
        self.children: list[_Obj] = []  # normal children (NUMA nodes lifted out)
        self.io: list[_Obj] = []
        self.parent = parent
        self.memory = int(elem.get("local_memory") or 0)
        self.name = elem.get("name", "")
        self.backend = next((i.get("value") for i in elem.findall("info") if i.get("name") == "Backend"), None)


class Topology:
    """A parsed hwloc XML file: ``ncores``, ``gpus`` (count),
    ``hostname`` and :meth:`treepool` (the TreePool topology object)."""

    def __init__(self, root: _Obj, cores: list[_Obj], numas: list[_Obj], gpus: list[_Obj], hostname: str) -> None:
        self.root = root
        self.cores = cores
        self.numas = numas
        self.gpu_objs = gpus
        self.hostname = hostname

    @property
    def ncores(self) -> int:
        return len(self.cores)

    @property
    def ngpus(self) -> int:
        return len(self.gpu_objs)

    def _core_ids(self, cpuset: int) -> IDset:
        return IDset(i for i, c in enumerate(self.cores) if c.cpuset and c.cpuset & ~cpuset == 0)

    def _gpu_in(self, gpu: _Obj, obj: _Obj) -> bool:
        pci = gpu.parent
        while pci is not None and pci.type != "PCIDev":
            pci = pci.parent
        if pci is None:
            return False
        p = pci.parent
        while p is not None:
            if p is obj:
                return True
            p = p.parent
        if not obj.cpuset:
            return False
        anc = pci.parent
        while anc is not None and not anc.cpuset:
            anc = anc.parent
        return anc is not None and anc.cpuset & ~obj.cpuset == 0

    def _gpus(self, obj: _Obj, claimed: set[int], residual: bool) -> str | None:
        ids = []
        for i, gpu in enumerate(self.gpu_objs):
            if residual and i in claimed:
                continue
            if self._gpu_in(gpu, obj):
                ids.append(i)
                claimed.add(i)
        return str(IDset(ids)) if ids else None

    def _containers(self, obj: _Obj, scope: int) -> list[_Obj]:
        inside = [c for c in obj.children if c.cpuset and c.cpuset & ~scope == 0]
        direct = [c for c in inside if c.type in _CONTAINERS]
        if direct:
            return direct
        out: list[_Obj] = []
        for c in inside:
            if c.type not in ("Core", "PU"):
                out.extend(self._containers(c, scope))
        return out

    def _numas_in(self, cpuset: int) -> list[_Obj]:
        return [n for n in self.numas if n.cpuset and n.cpuset & ~cpuset == 0]

    def _leaf(self, obj: _Obj, claimed: set[int], memory: bool, state: dict) -> dict:
        cores = self._core_ids(obj.cpuset)
        if not cores:
            raise FormatError(f"{obj.type}: no Core objects found in cpuset")
        leaf: dict[str, Any] = {"cores": str(cores)}
        gpus = self._gpus(obj, claimed, False)
        if gpus:
            leaf["gpus"] = gpus
        if memory and obj.memory // _GIB > 0:
            leaf["memory"] = obj.memory // _GIB
            state["mem"] = True
        return leaf

    def _name(self, first: _Obj) -> str:
        name = _CONTAINERS[first.type]
        probe = first
        while probe.type == "Group":
            inner = self._containers(probe, probe.cpuset)
            if len(inner) != 1:
                if self._numas_in(probe.cpuset):
                    return "numa"
                break
            probe = inner[0]
        return _CONTAINERS.get(probe.type, name) if probe is not first else name

    def _build(self, obj: _Obj, claimed: set[int], state: dict) -> dict:
        containers = self._containers(obj, obj.cpuset)
        if len(containers) == 1:
            return self._build(containers[0], claimed, state)
        if containers:
            out: dict[str, Any] = {self._name(containers[0]): [self._build(c, claimed, state) for c in containers]}
        else:
            numas = self._numas_in(obj.cpuset)
            if not numas:
                return self._leaf(obj, claimed, False, state)
            if len(numas) == 1:
                return self._leaf(numas[0], claimed, True, state)
            out = {"numa": [self._leaf(n, claimed, True, state) for n in numas]}
        residual = self._gpus(obj, claimed, True)
        if residual:
            out["gpus"] = residual
        return out

    def treepool(self) -> dict:
        """The node's topology as TreePool reads it from ``scheduling.children``."""
        claimed: set[int] = set()
        state = {"mem": False}
        topo = self._build(self.root, claimed, state)
        total = sum(n.memory for n in self.numas)
        if not state["mem"] and total // _GIB > 0:
            topo["memory"] = total // _GIB
        left = [i for i in range(len(self.gpu_objs)) if i not in claimed]
        if left:
            topo["gpus"] = str(IDset(left))
        return topo


def _walk(elem: Any, parent: _Obj | None, attach: _Obj | None, found: dict) -> None:
    """Build the object tree below elem (NUMA nodes lifted out of it)."""
    for child in elem:
        if child.tag != "object":
            continue
        obj = _Obj(child, attach)
        kind = obj.type
        if kind == "NUMANode":
            found["numas"].append(obj)
            # (its children are its parent's; I/O below it stays below it)
            obj.parent = attach
            _walk(child, obj, attach, found)
            continue
        if kind in ("Bridge", "PCIDev", "OSDev", "Misc"):
            obj.parent = parent if parent is not None else attach
            if parent is not None:
                parent.io.append(obj)
            if kind == "OSDev" and obj.backend in _GPU_BACKENDS:
                found["osdevs"].append(obj)
            _walk(child, obj, obj, found)
            continue
        if attach is not None:
            attach.children.append(obj)
        if kind == "Core":
            found["cores"].append(obj)
        _walk(child, obj, obj, found)


def parse(text: str) -> Topology:
    """The topology of an hwloc XML document (FormatError if it is none)."""
    try:
        root_elem = ET.fromstring(text)
    except ET.ParseError as exc:
        raise FormatError(f"invalid hwloc XML: {exc}") from None
    if root_elem.tag != "topology":
        raise FormatError("invalid hwloc XML: no topology element")
    machine_elem = root_elem.find("object")
    if machine_elem is None:
        raise FormatError("invalid hwloc XML: no machine object")
    try:
        root = _Obj(machine_elem, None)
        found: dict[str, list[_Obj]] = {"numas": [], "cores": [], "osdevs": []}
        _walk(machine_elem, root, root, found)
    except ValueError:
        raise FormatError("invalid hwloc XML: bad cpuset") from None
    if not found["cores"]:
        raise FormatError("invalid hwloc XML: no Core objects")
    gpus: list[_Obj] = []
    seen: list[tuple[_Obj | None, str | None]] = []
    for dev in found["osdevs"]:
        pci = dev.parent
        while pci is not None and pci.type != "PCIDev":
            pci = pci.parent
        # (one PCI device under two backends is one gpu; under one backend
        # twice, two: AMD's partitioned gpus)
        if pci is not None and any(p is pci and b != dev.backend for p, b in seen):
            continue
        seen.append((pci, dev.backend))
        gpus.append(dev)
    host = next((i.get("value", "") for i in machine_elem.findall("info") if i.get("name") == "HostName"), "")
    return Topology(root, found["cores"], found["numas"], gpus, host)
