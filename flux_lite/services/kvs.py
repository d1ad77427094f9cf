"""kvs: Flux's KVS requests (kvs.lookup, kvs.commit, kvs.namespace-list).

Values travel as RFC 11 tree objects, as in Flux: a value is
{"ver": 1, "type": "val", "data": base64}, a directory read with
FLUX_KVS_READDIR {"type": "dir", "data": {name: entry}} whose entries are
"dirref" or "valref" objects without blob references (flux-lite has no
content store), a symlink read with FLUX_KVS_READLINK {"type": "symlink",
"data": {"target": ...}}. A commit's ops are {"key", "flags", "dirent"}: a
"val" puts, an empty "dir" makes a directory, a "symlink" links, null
unlinks. flux-lite has one namespace, "primary"; the checks (who may write,
which keys are the instance's) are flux_lite.admin's, as for `kvs put`.
"""

from __future__ import annotations

import base64
import binascii
import errno
from collections.abc import Iterator

from flux_lite import admin
from flux_lite import kvs as kvsmod
from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance, WaitStalled
from flux_lite.services.table import Payload, Service, field, service

SERVICES: list[Service] = []

PRIMARY = "primary"
READDIR, READLINK = 1, 2  # FLUX_KVS_READDIR, FLUX_KVS_READLINK
WAITCREATE, WATCH_FULL = 8, 64  # FLUX_KVS_WAITCREATE, FLUX_KVS_WATCH_FULL


def _namespace(payload: Payload) -> None:
    ns = payload.get("namespace")
    if ns not in (None, PRIMARY):
        if not isinstance(ns, str):
            raise FluxLiteError("Protocol error", errno=errno.EPROTO)
        raise FluxLiteError(f"{ns}: flux-lite has one KVS namespace, {PRIMARY}", errno=errno.ENOTSUP)


def _val(data: bytes) -> Payload:
    return {"ver": 1, "type": "val", "data": base64.b64encode(data).decode()}


@service(SERVICES, "kvs.lookup")
def lookup(instance: Instance, payload: Payload) -> Payload:
    key = field(payload, "key", str)
    flags = field(payload, "flags", int, 0)
    _namespace(payload)
    kind, found = admin.kvs_lookup(instance, key, readdir=bool(flags & READDIR), readlink=bool(flags & READLINK))
    if kind == "dir":
        entries: Payload = {name.rstrip("."): {"ver": 1, "type": "dirref" if name.endswith(".") else "valref",
                                               "data": []} for name in found}
        return {"key": key, "val": {"ver": 1, "type": "dir", "data": entries}}
    if kind == "symlink":
        return {"key": key, "val": {"ver": 1, "type": "symlink", "data": {"target": found}}}
    return {"key": key, "val": _val(found)}


def _op(op: object) -> tuple[str, str, object]:
    if not isinstance(op, dict):
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    key = field(op, "key", str)
    dirent = op.get("dirent")
    if dirent is None:
        return kvsmod.UNLINK, key, None
    kind = dirent.get("type") if isinstance(dirent, dict) else None
    data = dirent.get("data") if isinstance(dirent, dict) else None
    if kind == "val" and isinstance(data, str):
        try:
            return kvsmod.PUT, key, base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            pass
    elif kind == "dir" and data == {}:
        return kvsmod.MKDIR, key, None
    elif kind == "symlink" and isinstance(data, dict) and isinstance(data.get("target"), str):
        if data.get("namespace") not in (None, PRIMARY):
            raise FluxLiteError("symlinks into other namespaces are not supported", errno=errno.ENOTSUP)
        return kvsmod.SYMLINK, key, data["target"]
    raise FluxLiteError("Protocol error", errno=errno.EPROTO)


@service(SERVICES, "kvs.commit")
def commit(instance: Instance, payload: Payload) -> Payload:
    """Every op in one transaction of the instance (flags: Flux's commit
    flags, which change nothing here: every commit is synced and unmerged)."""
    field(payload, "flags", int, 0)
    _namespace(payload)
    ops = field(payload, "ops", list)
    admin.kvs_commit(instance, [_op(op) for op in ops])
    return {}


@service(SERVICES, "kvs.namespace-list")
def namespace_list(instance: Instance, payload: Payload) -> Payload:
    return {"namespaces": [{"namespace": PRIMARY, "owner": instance.owner, "flags": 0}]}


@service(SERVICES, "kvs-watch.lookup", streaming=True)
def watch(instance: Instance, payload: Payload) -> Iterator[Payload]:
    """A key's value now, then each new value (FLUX_KVS_WATCH), waited for
    as `flux job wait-event` waits: under a virtual clock simulated time
    passes until a commit changes it (ETIMEDOUT when nothing is left to
    happen). ENOENT for a missing key unless FLUX_KVS_WAITCREATE; a key that
    goes away ends a FLUX_KVS_WATCH_FULL watch with ENOENT. flux-lite keeps
    no commit history: a commit writing the same value again is not seen
    (every watch is FLUX_KVS_WATCH_UNIQ)."""
    key = field(payload, "key", str)
    flags = field(payload, "flags", int, 0)
    _namespace(payload)
    sent: object = None  # the last value sent (None: none yet)
    while True:
        def changed(broker: object, sent: object = sent) -> object:
            try:
                found = admin.kvs_lookup(instance, key)
            except FluxLiteError as exc:
                if exc.errno != errno.ENOENT:
                    raise
                if sent is None and not flags & WAITCREATE or sent is not None and flags & WATCH_FULL:
                    return exc
                return None
            return found if found != sent else None

        try:
            found = instance.wait(changed)
        except WaitStalled:
            raise FluxLiteError("Connection timed out: nothing left to happen under the virtual clock",
                                errno=errno.ETIMEDOUT) from None
        if isinstance(found, FluxLiteError):
            raise found
        sent = found
        yield {"key": key, "val": _val(found[1])}
