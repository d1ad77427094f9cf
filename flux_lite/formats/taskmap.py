"""RFC 34 task maps: which node (shell rank) each task id of a job runs on.

A map is a list of blocks ``[start, nnodes, ppn, repeat]``: ``repeat``
times, ``ppn`` tasks on each of the ``nnodes`` nodes from ``start``, task
ids counting up. Three text forms, as flux job taskmap reads and writes
them: the JSON array (the default), raw (each node's task ids, an idset a
node, joined by ``;``) and PMI (``(vector,(start,nnodes,ppn),...)``).
"""

import json
from typing import Any

from flux_lite.formats.idset import IDset


class TaskmapError(ValueError):
    """A task map that does not decode (the message is libtaskmap's)."""


class Taskmap:
    """A task map: its blocks, in order."""

    def __init__(self) -> None:
        self.blocks: list[list[int]] = []

    @classmethod
    def from_counts(cls, counts: list[int]) -> "Taskmap":
        """The block map of tasks numbered node by node: counts[i] tasks on node i."""
        tm = cls()
        for nodeid, n in enumerate(counts):
            if n > 0:
                tm.append(nodeid, 1, n)
        return tm

    def append(self, nodeid: int, nnodes: int, ppn: int) -> None:
        """Add ppn tasks on each of nnodes nodes from nodeid, merged into
        the last block where that keeps the map the same (libtaskmap's rules)."""
        if nodeid < 0 or nnodes <= 0 or ppn <= 0:
            raise TaskmapError("Invalid argument")
        if self.blocks:
            last = self.blocks[-1]
            start, count, lppn, repeat = last
            if nodeid == start + count and ppn == lppn and repeat == 1:
                last[1] += nnodes
                self._find_repeats()
                return
            if start == nodeid and count == 1 and nnodes == 1:
                last[2] += ppn
                self._find_repeats()
                return
            if start == nodeid and count == nnodes and lppn == ppn:
                last[3] += 1
                return
        self.blocks.append([nodeid, nnodes, ppn, 1])

    def _find_repeats(self) -> None:
        merged: list[list[int]] = []
        for block in self.blocks:
            if merged and merged[-1][:3] == block[:3]:
                merged[-1][3] += block[3]
            else:
                merged.append(block)
        self.blocks = merged

    # -- queries ---------------------------------------------------------------

    def _tasks(self):
        """(taskid, nodeid) of every task, in task order."""
        taskid = 0
        for start, nnodes, ppn, repeat in self.blocks:
            for _ in range(repeat):
                for node in range(start, start + nnodes):
                    for _ in range(ppn):
                        yield taskid, node
                        taskid += 1

    def taskids(self, nodeid: int) -> IDset:
        ids = IDset([t for t, n in self._tasks() if n == nodeid])
        if not ids:
            raise TaskmapError("No such file or directory")
        return ids

    def ntasks(self, nodeid: int) -> int:
        return len(self.taskids(nodeid))

    def nodeid(self, taskid: int) -> int:
        for t, n in self._tasks():
            if t == taskid:
                return n
        raise TaskmapError("No such file or directory")

    def nnodes(self) -> int:
        return max((start + nnodes for start, nnodes, _p, _r in self.blocks), default=0)

    def total_ntasks(self) -> int:
        return sum(nnodes * ppn * repeat for _s, nnodes, ppn, repeat in self.blocks)

    # -- encodings -------------------------------------------------------------

    def encode(self) -> str:
        return json.dumps(self.blocks, separators=(",", ":"))

    def to_json(self) -> dict:
        """The wrapped form a job shell's shell.start event carries."""
        return {"version": 1, "map": [list(b) for b in self.blocks]}

    def encode_raw(self) -> str:
        return ";".join(str(self.taskids(i)) for i in range(self.nnodes()))

    def encode_pmi(self) -> str:
        if not self.blocks:
            return ""
        parts = [f"({s},{n},{p})" for s, n, p, r in self.blocks for _ in range(r)]
        return "(vector," + ",".join(parts) + ")"


def decode(text: str) -> Taskmap:
    """A task map in any of its three forms (libtaskmap's taskmap_decode)."""
    if text == "" or "vector," in text:
        return _decode_pmi(text)
    if not any(c in text for c in "({[]})"):
        return _decode_raw(text)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise TaskmapError(str(exc)) from None
    return decode_json(doc)


def decode_json(doc: Any) -> Taskmap:
    if isinstance(doc, dict):
        if not isinstance(doc.get("version"), int) or "map" not in doc:
            raise TaskmapError("object item not found: version" if "version" not in doc else
                               "object item not found: map")
        if doc["version"] != 1:
            raise TaskmapError(f"expected version=1, got {doc['version']}")
        doc = doc["map"]
    elif not isinstance(doc, list):
        raise TaskmapError("taskmap must be an object or array")
    if not isinstance(doc, list):
        raise TaskmapError("taskmap must be an array")
    tm = Taskmap()
    for index, entry in enumerate(doc):
        if not isinstance(entry, list):
            raise TaskmapError(f"entry {index} in taskmap is not an array")
        if len(entry) != 4 or not all(isinstance(v, int) and not isinstance(v, bool) for v in entry):
            raise TaskmapError("failed to unpack taskmap block")
        start, nnodes, ppn, repeat = entry
        if start < 0 or nnodes <= 0 or ppn <= 0 or repeat <= 0:
            raise TaskmapError("invalid number in taskmap block")
        tm.blocks.append([start, nnodes, ppn, repeat])
    return tm


def _decode_pmi(text: str) -> Taskmap:
    tm = Taskmap()
    if text == "":
        return tm
    sentinel = False
    for token in text.split("(")[1:] if text.startswith("(") else text.split("("):
        token = token.lstrip()
        if token.startswith("vector,"):
            sentinel = True
            continue
        if not token.strip():
            continue
        if not sentinel:
            raise TaskmapError("vector prefix must precede blocklist")
        fields = token.split(")")[0].split(",")
        try:
            nodeid, count, ppn = (int(f) for f in fields)
        except ValueError:
            raise TaskmapError(f"unable to parse block: ({token}") from None
        if nodeid < 0 or count <= 0 or ppn <= 0:
            raise TaskmapError(f"invalid number in block: ({token}")
        tm.append(nodeid, count, ppn)
    if tm.total_ntasks() == 0:
        raise TaskmapError("no tasks found in PMI_process_mapping")
    return tm


def _decode_raw(text: str) -> Taskmap:
    # each node's runs of consecutive task ids, then the runs in task order
    runs = []
    for nodeid, part in enumerate(t for t in text.split(";") if t):
        try:
            ids = sorted(IDset.parse(part))
        except ValueError as exc:
            raise TaskmapError(str(exc)) from None
        i = 0
        while i < len(ids):
            j = i
            while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
                j += 1
            runs.append((ids[i], nodeid, j - i + 1))
            i = j + 1
    runs.sort()
    tm = Taskmap()
    end = -1  # the last task id so far
    for taskid, nodeid, count in runs:
        if taskid <= end:
            last = min(end, taskid + count - 1)
            raise TaskmapError(f"duplicate taskid specified: {taskid}" if last == taskid else
                               f"duplicate taskids specified: {taskid}-{last}")
        if taskid > end + 1:
            raise TaskmapError(f"missing taskid: {end + 1}" if taskid == end + 2 else
                               f"missing taskids: {end + 1}-{taskid - 1}")
        tm.append(nodeid, 1, count)
        end = taskid + count - 1
    return tm
