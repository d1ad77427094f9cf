"""flux.kvs: values, directories, transactions and the guest's limits, over kvs.lookup/kvs.commit."""

import errno
import importlib

import pytest


@pytest.fixture
def kvs(pyflux):
    return importlib.import_module("flux.kvs")


def test_values_round_trip_as_flux_returns_them(pyflux, kvs, flux):
    h = pyflux.Flux()
    values = {"int": 10, "float": 10.5, "str": "stuff", "none": None, "list": [1, 2], "dict": {"a": "b"},
              "uni": "\u32db \u263a"}
    for key, value in values.items():
        kvs.put(h, "t." + key, value)
    kvs.put(h, "t.bytes", bytes.fromhex("deadbeef"))
    kvs.put(h, "t.rawjson", b"{}")
    kvs.put(h, "t.rawtext", "{", raw=True)
    kvs.commit(h)
    for key, value in values.items():
        assert kvs.get(h, "t." + key) == value
    assert kvs.get(h, "t.bytes") == bytes.fromhex("deadbeef")
    assert kvs.get(h, "t.rawjson") == {}
    assert kvs.get(h, "t.rawtext") == "{"
    # the CLI reads what the script wrote (json.dumps's spelling, as Flux stores it)
    assert flux.out("kvs", "get", "t.str", "t.dict", "t.rawtext") == 'stuff\n{"a": "b"}\n{\n'


def test_directories_exists_isdir(pyflux, kvs, flux):
    h = pyflux.Flux()
    kvs.put_mkdir(h, "empty")
    kvs.put(h, "a.b.c", 5)
    kvs.commit(h)
    assert kvs.exists(h, "empty") and kvs.isdir(h, "empty")
    assert kvs.exists(h, "a.b.c") and not kvs.isdir(h, "a.b.c")
    assert not kvs.exists(h, "nothing") and not kvs.isdir(h, "nothing")
    assert kvs.get(h, "a")["b"]["c"] == 5
    assert "empty." in flux.out("kvs", "ls", "-1F").split()
    assert flux.fails("kvs", "get", "empty").stderr.strip().endswith("empty: Is a directory")
    # a put over a directory replaces it; a put under a value makes it a directory
    kvs.put(h, "a", 1)
    kvs.put(h, "empty.x", 2)
    kvs.commit(h)
    assert kvs.get(h, "a") == 1 and not kvs.exists(h, "a.b.c")
    assert list(kvs.get_dir(h, "empty")) == ["x"]
    # an unlink leaves its directory, empty
    kvs.put_unlink(h, "empty.x")
    kvs.commit(h)
    assert kvs.isdir(h, "empty") and len(kvs.get_dir(h, "empty")) == 0


def test_kvsdir_mapping_and_walk(pyflux, kvs):
    h = pyflux.Flux()
    with kvs.get_dir(h) as kd:
        kd.mkdir("top", {"f1": 1, "f2": "two", "sub.g": 3})
    kd = kvs.KVSDir(h, "top")
    assert sorted(kd) == ["f1", "f2", "sub"] and len(kd) == 3
    assert kd.list_all() == (["f1", "f2"], ["sub"])
    assert kd["sub"]["g"] == 3 and kd["sub.g"] == 3 and kd.key_at("x") == "top.x"
    assert kd.exists("f1") and not kd.exists("top")
    # a subdirectory's writes ride on its parent's transaction
    kd["sub"]["h"] = 4
    del kd["f2"]
    kd.commit()
    assert kvs.get(h, "top.sub.h") == 4 and not kvs.exists(h, "top.f2")
    walked = [(path, sorted(ds), sorted(fs)) for path, ds, fs in kvs.walk("top", flux_handle=h, topdown=True)]
    assert walked == [("", ["sub"], ["f1"]), ("sub", [], ["g", "h"])]
    with pytest.raises(KeyError):
        kd["missing"]
    with pytest.raises(OSError) as info:
        kvs.KVSDir(h, "top.nothing")
    assert info.value.errno == errno.ENOENT
    with pytest.raises(ValueError):
        kvs.KVSDir()
    with pytest.raises(ValueError):
        kvs.walk("top")


def test_kvstxn_and_symlinks(pyflux, kvs):
    h = pyflux.Flux()
    with kvs.KVSTxn(h, "tx") as txn:
        txn.put("a", 1)
        txn.symlink("link", "tx.a")
        txn.symlink("dangling", "tx.none")
    assert kvs.get(h, "tx.link") == 1
    assert not kvs.exists(h, "tx.dangling")
    other = kvs.KVSTxn(h)
    other.put("tx.b", 2)
    assert not kvs.exists(h, "tx.b")  # staged, not committed
    other.commit_async()
    assert kvs.get(h, "tx.b") == 2  # committed when sent, response read or not
    other.put(".", 1)
    with pytest.raises(OSError):
        other.commit_async().get()  # the error is the response's


def test_errors_are_flux_errnos(pyflux, kvs, flux):
    flux.submit("true")
    h = pyflux.Flux()
    for func, args in ((kvs.get, ("",)), (kvs.exists, ("",)), (kvs.isdir, ("",)), (kvs.get_dir, ("",)),
                       (kvs.put, ("", 1)), (kvs.put_mkdir, ("",)), (kvs.put_unlink, ("",))):
        with pytest.raises(OSError) as info:
            func(h, *args)
        assert info.value.errno == errno.EINVAL
    with pytest.raises(OSError) as info:
        kvs.get(h, "nothing")
    assert info.value.errno == errno.ENOENT
    with pytest.raises(OSError) as info:
        kvs.put(h, ".", "root")
        kvs.commit(h)
    assert info.value.errno == errno.EINVAL
    kvs.commit(h)  # the failed transaction is gone
    with pytest.raises(AttributeError):
        kvs.put(h, "k", 1, raw=True)
    with pytest.raises(TypeError):
        kvs.put(h, "k", object())
    # the instance's own keys are not a script's to replace or remove
    for key in ("resource.R", "resource", "job"):
        kvs.put_unlink(h, key)
        with pytest.raises(OSError, match="refusing to remove an instance key"):
            kvs.commit(h)
    assert kvs.isdir(h, "resource") and "R" in kvs.get_dir(h, "resource")
    assert kvs.namespace_list(h) == ["primary"]
    with pytest.raises(OSError) as info:
        kvs.get(h, "a", namespace="other")
    assert info.value.errno == errno.ENOTSUP


def test_a_guest_reads_but_does_not_write(pyflux, kvs, flux, monkeypatch):
    jobid = flux.submit("true")
    flux("kvs", "put", "shared=1")
    monkeypatch.setenv("FLUX_HANDLE_USERID", "1234")
    h = pyflux.Flux()
    assert kvs.get(h, "shared") == 1
    kvs.put(h, "mine", 1)
    with pytest.raises(OSError) as info:
        kvs.commit(h)
    assert info.value.errno == errno.EPERM
    assert str(info.value) == "[Errno 1] Operation not permitted: kvs put is for the instance owner"
    # another user's job keys stay theirs, as with `flux-lite kvs get`
    key = flux.out("job", "id", "--to=kvs", jobid).strip() + ".eventlog"
    with pytest.raises(OSError) as info:
        kvs.get(h, key)
    assert info.value.errno == errno.EPERM
    monkeypatch.delenv("FLUX_HANDLE_USERID")
    assert flux.fails("kvs", "get", "mine").stderr.strip().endswith("mine: No such file or directory")


def test_kvs_watch_through_the_reactor(pyflux, kvs):
    h = pyflux.Flux()
    kvs.put(h, "w.val", 1)
    kvs.commit(h)
    seen = []

    def cb(future, arg):
        val = future.get()
        seen.append(val)
        if val == 1:
            kvs.put(h, "w.val", 2)
            kvs.commit_async(h)  # committed when sent: the watch sees it next
        else:
            future.cancel()

    kvs.kvs_watch_async(h, "w.val").then(cb, None)
    assert h.reactor_run() == 0
    assert seen == [1, 2]
    with pytest.raises(OSError) as info:
        kvs.kvs_watch_async(h, "w.none").get()
    assert info.value.errno == errno.ENOENT
    # a value that can never change under the virtual clock is a clear error, not a hang
    future = kvs.kvs_watch_async(h, "w.val")
    assert future.get() == 2
    with pytest.raises(OSError) as info:
        future.get()
    assert info.value.errno == errno.ETIMEDOUT
