"""flux.kvs: the instance's key-value store, through kvs.lookup and kvs.commit.

Writes are staged in a transaction (the handle's own, a KVSTxn's or a
KVSDir's) and sent by commit(): one kvs.commit request, one transaction of
the instance. Who may write, and which keys are the instance's own, is
decided by the library behind kvs.commit (only the instance owner writes,
as with `flux-lite kvs put`). flux-lite has one namespace, "primary": any
other is ENOTSUP.
"""

from __future__ import annotations

import base64
import errno
import json
import os
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from flux.constants import (FLUX_KVS_READDIR, FLUX_KVS_WAITCREATE, FLUX_KVS_WATCH, FLUX_KVS_WATCH_FULL,
                            FLUX_KVS_WATCH_UNIQ)
from flux.future import StreamFuture
from flux.rpc import RPC


def _namespace(namespace: str | None) -> str | None:
    return namespace if namespace is not None else os.environ.get("FLUX_KVS_NAMESPACE")


def _lookup(flux_handle: Any, key: str, namespace: str | None = None, flags: int = 0) -> dict:
    if not isinstance(key, str) or not key:
        raise OSError(errno.EINVAL, "Invalid argument")
    payload: dict[str, Any] = {"key": key, "flags": flags}
    ns = _namespace(namespace)
    if ns is not None:
        payload["namespace"] = ns
    return RPC(flux_handle, "kvs.lookup", payload).get()["val"]


def _decode(data: bytes) -> Any:
    """A value as Flux's bindings return it: JSON decoded, else text, else bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    try:
        return json.loads(text)
    except ValueError:
        return text


def get_key_direct(flux_handle: Any, key: str, namespace: str | None = None) -> Any:
    """The value at key (OSError EISDIR for a directory, ENOENT when absent)."""
    val = _lookup(flux_handle, key, namespace)
    return _decode(base64.b64decode(val["data"]))


def exists(flux_handle: Any, key: str, namespace: str | None = None) -> bool:
    """Is there a value or a directory at key?"""
    try:
        _lookup(flux_handle, key, namespace)
    except OSError as err:
        if err.errno == errno.ENOENT:
            return False
        if err.errno == errno.EISDIR:
            return True
        raise
    return True


def isdir(flux_handle: Any, key: str, namespace: str | None = None) -> bool:
    """Is key a directory?"""
    try:
        _lookup(flux_handle, key, namespace)
    except OSError as err:
        if err.errno == errno.ENOENT:
            return False
        if err.errno == errno.EISDIR:
            return True
        raise
    return False


def get_dir(flux_handle: Any, key: str = ".", namespace: str | None = None, _kvstxn: Any = None) -> KVSDir:
    """The directory at key, as a KVSDir."""
    return KVSDir(flux_handle, key, namespace=namespace, _kvstxn=_kvstxn)


def get(flux_handle: Any, key: str, namespace: str | None = None, _kvstxn: Any = None) -> Any:
    """The value at key (a KVSDir for a directory)."""
    try:
        return get_key_direct(flux_handle, key, namespace)
    except OSError as err:
        if err.errno != errno.EISDIR:
            raise
    return get_dir(flux_handle, key, namespace=namespace, _kvstxn=_kvstxn)


# -- transactions -----------------------------------------------------------------


def _check_key(key: Any) -> None:
    if not isinstance(key, str) or not key:
        raise OSError(errno.EINVAL, "Invalid argument")


def _val(data: bytes) -> dict:
    return {"ver": 1, "type": "val", "data": base64.b64encode(data).decode()}


class _Ops:
    """The staged operations of one transaction (kvs.commit's ops)."""

    def __init__(self) -> None:
        self.ops: list[dict] = []

    def put(self, key: str, value: Any, raw: bool = False) -> None:
        _check_key(key)
        if raw:
            data = value if isinstance(value, bytes) else value.encode("utf-8")
        elif isinstance(value, bytes):
            data = value  # not JSON-encodable: stored as it is, as Flux does
        else:
            data = json.dumps(value).encode("utf-8")
        self.ops.append({"key": key, "flags": 0, "dirent": _val(data)})

    def mkdir(self, key: str) -> None:
        _check_key(key)
        self.ops.append({"key": key, "flags": 0, "dirent": {"ver": 1, "type": "dir", "data": {}}})

    def unlink(self, key: str) -> None:
        _check_key(key)
        self.ops.append({"key": key, "flags": 0, "dirent": None})

    def symlink(self, key: str, target: str) -> None:
        _check_key(key)
        _check_key(target)
        self.ops.append({"key": key, "flags": 0, "dirent": {"ver": 1, "type": "symlink", "data": {"target": target}}})

    def commit_rpc(self, flux_handle: Any, flags: int, namespace: str | None) -> RPC:
        payload: dict[str, Any] = {"flags": flags, "ops": self.ops}
        ns = _namespace(namespace)
        if ns is not None:
            payload["namespace"] = ns
        self.ops = []
        rpc = RPC(flux_handle, "kvs.commit", payload)
        # sent at once, as Flux sends it: the commit happens whether or not
        # its response is ever read
        rpc.wait_for()
        return rpc


def _ops_of(flux_handle: Any, _kvstxn: Any) -> _Ops:
    if _kvstxn is None:
        ops = getattr(flux_handle, "aux_txn", None)
        if ops is None:
            ops = _Ops()
            flux_handle.aux_txn = ops
        return ops
    if isinstance(_kvstxn, KVSTxn):
        return _kvstxn.txn
    if isinstance(_kvstxn, _Ops):
        return _kvstxn
    raise TypeError("_kvstxn must be a KVSTxn")


def put(flux_handle: Any, key: str, value: Any, _kvstxn: Any = None, raw: bool = False) -> None:
    """Stage key=value (JSON-encoded; raw=True stores bytes or text as they are)."""
    _ops_of(flux_handle, _kvstxn).put(key, value, raw=raw)


def put_mkdir(flux_handle: Any, key: str, _kvstxn: Any = None) -> None:
    """Stage an empty directory at key."""
    _ops_of(flux_handle, _kvstxn).mkdir(key)


def put_unlink(flux_handle: Any, key: str, _kvstxn: Any = None) -> None:
    """Stage the removal of key."""
    _ops_of(flux_handle, _kvstxn).unlink(key)


def put_symlink(flux_handle: Any, key: str, target: str, _kvstxn: Any = None) -> None:
    """Stage a symlink at key to target."""
    _ops_of(flux_handle, _kvstxn).symlink(key, target)


def commit(flux_handle: Any, flags: int = 0, namespace: str | None = None, _kvstxn: Any = None) -> None:
    """Send the staged changes (the handle's, or _kvstxn's) as one commit."""
    if _kvstxn is None and getattr(flux_handle, "aux_txn", None) is None:
        return
    ops = _ops_of(flux_handle, _kvstxn)
    if not ops.ops:
        return
    try:
        ops.commit_rpc(flux_handle, flags, namespace).get()
    finally:
        if _kvstxn is None:
            flux_handle.aux_txn = None


def commit_async(flux_handle: Any, flags: int = 0, namespace: str | None = None, _kvstxn: Any = None) -> RPC:
    """commit(), returning the future of the kvs.commit request."""
    rpc = _ops_of(flux_handle, _kvstxn).commit_rpc(flux_handle, flags, namespace)
    if _kvstxn is None:
        flux_handle.aux_txn = None
    return rpc


# -- namespaces ---------------------------------------------------------------------


def namespace_list(flux_handle: Any) -> list[str]:
    """The names of the KVS namespaces (flux-lite has one: primary)."""
    return [ns["namespace"] for ns in RPC(flux_handle, "kvs.namespace-list").get()["namespaces"]]


def namespace_create(flux_handle: Any, namespace: str, owner: int | None = None, flags: int = 0) -> None:
    raise OSError(errno.ENOTSUP, "flux-lite has one KVS namespace, primary")


def namespace_remove(flux_handle: Any, namespace: str) -> None:
    raise OSError(errno.ENOTSUP, "flux-lite has one KVS namespace, primary")


# -- objects ------------------------------------------------------------------------


def _prefix(path: str) -> str:
    if not path or path == ".":
        return ""
    return path if path.endswith(".") else path + "."


class KVSTxn:
    """Changes staged under path, sent by commit() (or on leaving a with block)."""

    def __init__(self, flux_handle: Any = None, path: str = ".", namespace: str | None = None) -> None:
        self.fhdl = flux_handle
        self.path = path
        self._path = _prefix(path)
        self.namespace = namespace
        self.txn = _Ops()

    def put(self, key: str, value: Any, raw: bool = False) -> None:
        self.txn.put(self._path + key, value, raw=raw)

    def mkdir(self, key: str) -> None:
        self.txn.mkdir(self._path + key)

    def unlink(self, key: str) -> None:
        self.txn.unlink(self._path + key)

    def symlink(self, key: str, target: str) -> None:
        self.txn.symlink(self._path + key, target)

    def clear(self) -> None:
        self.txn.ops = []

    def commit(self, flags: int = 0) -> None:
        if not self.txn.ops:
            return
        try:
            self.txn.commit_rpc(self.fhdl, flags, self.namespace).get()
        finally:
            self.clear()

    def commit_async(self, flags: int = 0) -> RPC:
        return self.txn.commit_rpc(self.fhdl, flags, self.namespace)

    def __enter__(self) -> KVSTxn:
        return self

    def __exit__(self, *exc: object) -> bool:
        self.commit()
        return False


class KVSDir(MutableMapping):
    """A KVS directory as a mapping: reading a name gives its value (a KVSDir
    for a subdirectory, sharing this one's transaction); setting and deleting
    stage changes, sent by commit() or on leaving a with block. The listing
    is read once, when the object is made."""

    def __init__(self, flux_handle: Any = None, path: str = ".", handle: Any = None,
                 namespace: str | None = None, _kvstxn: KVSTxn | None = None) -> None:
        if flux_handle is None:
            raise ValueError("flux_handle must be a valid Flux object")
        self.fhdl = flux_handle
        self.path = path
        self._path = _prefix(path)
        self.namespace = namespace
        val = _lookup(flux_handle, path, namespace, FLUX_KVS_READDIR)
        self._entries: dict[str, bool] = {name: ent.get("type") == "dirref" for name, ent in val["data"].items()}
        # item access on subdirectories shares the transaction, so writes use full keys
        self.kvstxn = _kvstxn if _kvstxn is not None else KVSTxn(flux_handle, ".", namespace=namespace)

    def key_at(self, key: str) -> str:
        """The full key of key in this directory."""
        return self._path + key

    def exists(self, name: str) -> bool:
        return exists(self.fhdl, self._path + name, namespace=self.namespace)

    def __getitem__(self, key: str) -> Any:
        try:
            return get(self.fhdl, self.key_at(key), namespace=self.namespace, _kvstxn=self.kvstxn)
        except OSError:
            raise KeyError(f"{key} not found under directory {self.key_at('')}") from None

    def __setitem__(self, key: str, value: Any) -> None:
        self.kvstxn.put(self._path + key, value)

    def __delitem__(self, key: str) -> None:
        self.kvstxn.unlink(self._path + key)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def commit(self, flags: int = 0) -> None:
        try:
            self.kvstxn.commit(flags=flags)
        finally:
            self.kvstxn.clear()

    def commit_async(self, flags: int = 0) -> RPC:
        return self.kvstxn.commit_async(flags=flags)

    def fill(self, contents: Mapping[str, Any]) -> None:
        """Set every key of contents ("a.b" makes subdirectories), then commit."""
        if contents is None:
            raise ValueError("contents must be non-None")
        try:
            for key, val in contents.items():
                self[key] = val
        finally:
            self.commit()

    def mkdir(self, key: str, contents: Mapping[str, Any] | None = None) -> None:
        """Make subdirectory key (committed at once), filled with contents if given."""
        self.kvstxn.mkdir(self._path + key)
        self.commit()
        if contents is not None:
            KVSDir(self.fhdl, self._path + key, namespace=self.namespace).fill(contents)

    def files(self) -> Iterator[str]:
        return (name for name in self if not self._entries[name])

    def directories(self) -> Iterator[str]:
        return (name for name in self if self._entries[name])

    def list_all(self) -> tuple[list[str], list[str]]:
        return list(self.files()), list(self.directories())

    def __enter__(self) -> KVSDir:
        return self

    def __exit__(self, *exc: object) -> bool:
        self.commit()
        return False


def join(*args: str) -> str:
    """Keys joined with '.', empty parts left out (for walk's paths)."""
    return ".".join(a for a in args if a)


def _walk(kvsdir: KVSDir, curr: str, topdown: bool, namespace: str | None) -> Iterator[tuple]:
    if topdown:
        yield (curr, kvsdir.directories(), kvsdir.files())
    for name in kvsdir.directories():
        yield from _walk(get_dir(kvsdir.fhdl, kvsdir.key_at(name), namespace=namespace),
                         join(curr, name), topdown, namespace)
    if not topdown:
        yield (curr, kvsdir.directories(), kvsdir.files())


def walk(directory: Any, topdown: bool = False, flux_handle: Any = None,
         namespace: str | None = None) -> Iterator[tuple]:
    """(path, directories, files) for directory and each directory below it, as os.walk."""
    if not isinstance(directory, KVSDir):
        if flux_handle is None:
            raise ValueError("If directory is a key, flux_handle must be specified")
        directory = KVSDir(flux_handle, directory, namespace=namespace)
    return _walk(directory, "", topdown, namespace)


class KVSWatchFuture(StreamFuture):
    """kvs_watch_async()'s future: get() is the key's next value (None once
    the watch has ended), and readies the future for the one after it
    unless autoreset=False."""

    def __init__(self, flux_handle: Any, key: str, payload: dict) -> None:
        super().__init__(flux_handle, lambda: flux_handle._stream("kvs-watch.lookup", payload))
        self.key = key

    def get(self, autoreset: bool = True) -> Any:
        try:
            val = super().get()
        except OSError as err:
            if err.errno == errno.ENODATA:
                return None
            raise
        if autoreset:
            self.reset()
        return _decode(base64.b64decode(val["val"]["data"]))

    def cancel(self, stop: bool = False) -> None:
        """End the watch: no more values are fetched."""
        super().cancel(stop)


def kvs_watch_async(flux_handle: Any, key: str, namespace: str | None = None, waitcreate: bool = False,
                    uniq: bool = False, full: bool = False) -> KVSWatchFuture:
    """Watch key: the future's get() gives its value, then each new one."""
    _check_key(key)
    flags = FLUX_KVS_WATCH
    if waitcreate:
        flags |= FLUX_KVS_WAITCREATE
    if uniq:
        flags |= FLUX_KVS_WATCH_UNIQ
    if full:
        flags |= FLUX_KVS_WATCH_FULL
    payload: dict[str, Any] = {"key": key, "flags": flags}
    ns = _namespace(namespace)
    if ns is not None:
        payload["namespace"] = ns
    return KVSWatchFuture(flux_handle, key, payload)
