"""Instance administration as requests: the owner-only operations.

Each function here is what a Flux service does on receiving the request:
check the requester (flux_lite.access), then act. Commands, tests and
benchmarks call these; the modules' own methods underneath (Resources.drain,
Housekeeping.kill, the scheduler loader) act for the instance itself and
check nothing, so that e.g. housekeeping's drain-on-failure or a restart's
scheduler reload work whoever's command triggered them.
"""

import errno as errno_
import json
import os
import re

from flux_lite import access, job_list, protocol, stored
from flux_lite.errors import FluxLiteError, FormatError
from flux_lite.formats import rset
from flux_lite.formats import eventlog, jsontext
from flux_lite.formats.jobid import jobid_of_key, kvs_key
from flux_lite.job_manager import reconfig
from flux_lite.listing.resources import drained_rows
from flux_lite.resources import targets_to_ranks
from flux_lite.sched import hosted, loader
from flux_lite.stored import check_put


def _require_owner(broker, operation):
    access.require_owner(broker.instance.identity, operation)


# -- modules ---------------------------------------------------------------------------


def module_load(broker, name, args=(), progress=None):
    """flux module load NAME ARGS... (args as typed: "queue-depth=8", ...).

    A module file (PATH.py) that fails to load is returned, not raised: its
    traceback is in the log, which the caller commits (nothing is loaded)."""
    _require_owner(broker, "module load")
    if loader.registry.companion_class(name) is not None:
        loader.companion_load(broker, name, list(args))
        return None
    try:
        loader.module_load(broker, name, loader.parse_module_args(name, args), progress=progress)
    except hosted.ModuleError as exc:
        return exc
    return None


def module_remove(broker, name, force=False):
    """flux module remove NAME; with force a module that is not loaded is no error."""
    _require_owner(broker, "module remove")
    if loader.registry.companion_class(name) is not None:
        if force and not loader.companion_loaded(broker, name):
            return
        loader.companion_remove(broker, name)
        return
    if loader.loaded_name(broker) != name:
        if force:
            return
        raise FluxLiteError(f"{name}: module is not loaded")
    loader.module_remove(broker)


def module_reload(broker, name, args=(), progress=None):
    """flux module reload: remove whatever scheduler is loaded, then load NAME.

    As in Flux, a failed load leaves no scheduler: the removal is kept (and
    committed by the caller) and the load's error is returned, not raised.
    """
    _require_owner(broker, "module reload")
    if loader.registry.companion_class(name) is not None:
        if loader.companion_loaded(broker, name):
            loader.companion_remove(broker, name)
        try:
            loader.companion_load(broker, name, list(args))
        except FluxLiteError as exc:
            return exc
        return None
    if loader.loaded_name(broker) is not None:
        path = loader.loaded_path(broker)
        loader.module_remove(broker)
        if path is not None and name == hosted.module_name(path):
            name = path  # `module reload NAME` of a module file loads the file again
    try:
        loader.module_load(broker, name, loader.parse_module_args(name, args), progress=progress)
    except FluxLiteError as exc:
        return exc
    return None


def sched_reload(broker, policy=None, queue_depth=None, reservation_depth=None, partial_ok=True,
                 progress=None):
    """sched reload: discard the scheduler's state, hello, ready, then alloc requests."""
    _require_owner(broker, "sched reload")
    name, args = loader.reload_args(broker, policy=policy, queue_depth=queue_depth,
                                    reservation_depth=reservation_depth, partial_ok=partial_ok)
    return loader.module_reload(broker, name, args, progress=progress)


# -- resources -------------------------------------------------------------------------


def drain(broker, targets, reason=None, mode=None):
    """resource.drain of TARGETS (ranks or hosts); mode None, "update",
    "overwrite" or "force-overwrite", as Flux's request takes them."""
    _require_owner(broker, "drain")
    res = broker.resources
    res.drain(res.drain_targets(targets), reason, mode=mode)


def drained(broker):
    """`resource drain` without targets: the drained ranks (see listing.resources.drained_rows)."""
    _require_owner(broker, "drain")
    return drained_rows(broker)


def undrain(broker, targets, reason=None, mode=None):
    """resource.undrain of TARGETS; mode None, "update", "overwrite" or
    "force-overwrite", as Flux's request takes them."""
    _require_owner(broker, "undrain")
    res = broker.resources
    res.undrain(res.drain_targets(targets), mode=mode, reason=reason)


def resource_reload(broker, path, xml=False, force=False):
    """resource.reload: the instance R from the file PATH (R in JSON), or
    with xml from the hwloc files PATH/<rank>.xml; refused while a
    scheduler holds the resources, and (unless force) for ranks past the
    instance's size (its ranks before the reload). Flux's words."""
    _require_owner(broker, "resource reload")
    current = rset.Rset.from_dict(broker.resources.instance_R)
    if xml:
        R = _R_from_xml_dir(path, current)
    else:
        try:
            R = jsontext.load_file(path)
        except jsontext.JSONFileError as exc:
            raise FluxLiteError(f"{path}:{exc.line} {exc.text}",
                                errno=errno_.ENOENT if exc.line == -1 else errno_.EPROTO) from None
    size = broker.resources.size()
    try:
        ranks = rset.rlist_from_dict(R).ranks
    except FormatError:
        ranks = None
    if ranks is None or (len(ranks) and ranks.last() >= size):
        if not force:
            raise FluxLiteError(f"resource object contains ranks execeeding size={size} (override with -f))",
                                errno=errno_.EINVAL)
        broker.log("resource", "err", f"WARN: resource object contains ranks exceeding size={size}")
    if loader.loaded_name(broker) is not None:
        raise FluxLiteError("resources are busy (unload scheduler?)", errno=errno_.EBUSY)
    broker.resources.reload(R)


#: the arguments Flux's resource module takes (tests' switches)
RESOURCE_MODULE_ARGS = ("monitor-force-up", "noverify", "notruncate")


def exec_module_load(broker, args=()):
    """flux module load job-exec: the jobs allocated while it was removed start."""
    _require_owner(broker, "module load")
    if args:
        raise FluxLiteError(f"job-exec: unknown option: {args[0]}", errno=errno_.EINVAL)
    broker.exec.module_load()


def exec_module_remove(broker, force=False):
    """flux module remove job-exec: jobs allocated from now on wait in RUN, not started."""
    _require_owner(broker, "module remove")
    broker.exec.module_remove(force=force)


def ingest_module_load(broker, args=()):
    """flux module load job-ingest ARGS (Flux's; an unknown one fails the load)."""
    _require_owner(broker, "module load")
    broker.jm.submission.ingest_module_load(args)


def ingest_module_remove(broker, force=False):
    """flux module remove job-ingest: submissions fail until it is loaded again."""
    _require_owner(broker, "module remove")
    broker.jm.submission.ingest_module_remove(force=force)


def joblist_module_load(broker, args=()):
    """flux module load job-list: listings are served again."""
    _require_owner(broker, "module load")
    job_list.module_load(broker, args)


def joblist_module_remove(broker, force=False):
    """flux module remove job-list: listings fail (ENOSYS) until it is loaded."""
    _require_owner(broker, "module remove")
    job_list.module_remove(broker, force=force)


def resource_module_load(broker, args=()):
    """flux module load (or reload) resource ARGS: the module reads its
    state again (see Resources.module_load); an argument it does not know
    fails the load, as in Flux."""
    _require_owner(broker, "module load")
    for arg in args:
        if arg not in RESOURCE_MODULE_ARGS:
            raise FluxLiteError(f"resource: unknown option: {arg}", errno=errno_.EINVAL)
    broker.resources.module_load(noverify="noverify" in args, notruncate="notruncate" in args,
                                 monitor_force_up="monitor-force-up" in args)


def resource_module_remove(broker):
    """flux module remove resource: flux-lite's resource module is the
    state every command reads, so nothing stops; it checkpoints its drain
    state as Flux's does, and the next load reads it again."""
    _require_owner(broker, "module remove")
    broker.resources.module_remove()


def _R_from_xml_dir(path, current):
    """R from the hwloc files DIR/<rank>.xml (Flux's resource reload -x);
    each rank's host is the XML's HostName, as flux-core names it (else the
    one the instance gives it)."""
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise FluxLiteError(f"{path}: {exc.strerror}", errno=exc.errno) from None
    nodes = {}
    for name in names:
        match = re.fullmatch(r"(\d+)\.xml", name)
        if match is None:
            continue
        rank = int(match.group(1))
        file = os.path.join(path, name)
        try:
            with open(file, encoding="utf-8", errors="replace") as f:
                text = f.read()
            cores, gpus = rset.hwloc_xml_children(text)
            host = rset.hwloc_xml_hostname(text)
        except OSError as exc:
            raise FluxLiteError(f"{path}: {file}: {exc.strerror}", errno=exc.errno) from None
        except FormatError as exc:
            raise FluxLiteError(f"error building R from hwloc XML: {exc}", errno=errno_.EINVAL) from None
        if host is None:
            host = current.hostname(rank) if rank in current else f"rank{rank}"
        nodes[rank] = (host, cores, gpus)
    if not nodes:
        raise FluxLiteError(f"{path}: invalid directory: no XML input files found", errno=errno_.EINVAL)
    named = (all(rank in current for rank in nodes) and current.has_nodelist) or \
        any(host != current.hostname(rank) for rank, (host, _c, _g) in nodes.items() if rank in current)
    return rset.Rset.from_nodes({r: nodes[r] for r in sorted(nodes)}, has_nodelist=named).to_dict()


def housekeeping_kill(broker, signum=15, jobid=None, targets=None):
    """job-manager.housekeeping-kill: jobid None means every job; targets limit the ranks."""
    _require_owner(broker, "housekeeping kill")
    ranks = None
    if targets:
        ranks = targets_to_ranks(broker.resources.rset, targets,
                                 invalid="--targets must be a valid Idset or Hostlist")
    broker.housekeeping.kill(signum, jobid=jobid, ranks=ranks)


# -- configuration and the KVS -----------------------------------------------------------


def config_load(broker, cfg):
    """config.load: replace the live configuration (validated first)."""
    _require_owner(broker, "config load")
    reconfig.apply(broker, cfg)


def kvs_put(instance, items, raw=False, append=False):
    """kvs put of (key, value) pairs, in one transaction. raw: the values
    are texts stored as they are (a JSON text keeps its spelling; any other
    text is stored as a string). append (raw texts only): each text is
    added to the end of the value the key holds, as it prints (Flux appends
    bytes: 1 then 2 is 12), or of an eventlog as RFC 18 lines."""
    access.require_owner(instance.identity, "kvs put")
    with instance.kvs.transaction():
        for key, value in items:
            if append:
                value = _appended(instance, key, value)
                if value is None:
                    continue
            if not raw:
                check_put(key, value)  # instance keys are refused or validated
                instance.kvs.put(key, value)
                continue
            try:
                parsed = eventlog.jansson_loads(value)
            except (ValueError, UnicodeError, RecursionError):
                parsed = None
            if parsed is None and value.strip() != "null":
                check_put(key, value)
                instance.kvs.put(key, value)
            else:
                check_put(key, parsed)
                instance.kvs.put_text(key, value)


def _appended(instance, key, text):
    """The text a key holds after text is appended to it (None: the lines
    were appended to an eventlog)."""
    held = instance.kvs.get_raw(key)
    if held is None:
        if instance.kvs.isdir(key):
            raise FluxLiteError("flux_kvs_commit: Is a directory", errno=errno_.EISDIR)
        return text
    kind, old = held
    if kind == "eventlog":
        check_put(key, None)  # (instance eventlogs are refused, as for put)
        lines = text if text.endswith("\n") else text + "\n"
        try:
            eventlog.decode(lines)
        except ValueError:
            raise FluxLiteError("flux_kvs_commit: Invalid argument") from None
        for line in lines.splitlines(keepends=True):
            instance.kvs.append(key, line)
        return None
    if kind == "json" and old.startswith('"'):
        old = json.loads(old)  # a string: its characters, as kvs get prints them
    return old + text


# a job's eventlog events that the job manager writes and reads back on a
# restart: appending one would change the job's history
JOB_MANAGER_EVENTS = frozenset({
    "submit", "validate", "invalidate", "depend", "dependency-add", "dependency-remove", "set-flags",
    "priority", "urgency", "alloc", "free", "start", "release", "finish", "clean", "exception",
    "flux-restart", "jobspec-update", "resource-update", "memo", "prolog-start", "prolog-finish",
    "epilog-start", "epilog-finish", "annotations", "debug.alloc-request", "debug.free-request",
})


def namespace_key(instance, namespace, key):
    """KEY in KVS namespace NAMESPACE (-N): the primary namespace (None or
    "primary") is the KVS itself; a job's guest namespace (job-ID) is its
    directory's guest.* keys, where the job's owner may write too. Returns
    (the key in the KVS, the user who owns the namespace or None)."""
    if namespace in (None, "primary"):
        return key, None
    prefix, _, decimal = namespace.partition("-")
    jobid = int(decimal) if prefix == "job" and decimal.isdigit() else None
    owner = job_userid(instance.kvs, jobid) if jobid is not None and jobid < 1 << 64 else None
    if owner is None:
        raise FluxLiteError(f"{namespace}: Operation not supported")  # no such namespace
    return (kvs_key(jobid, "guest") + ("" if key in (".", "") else "." + key.strip(".")), owner)


def _require_namespace_writer(instance, owner, operation):
    if owner is None or not access.may_access(instance.identity, owner):
        access.require_owner(instance.identity, operation)


def _check_append(key, name):
    jobid = jobid_of_key(key)
    if jobid is not None:
        rest = key[len(kvs_key(jobid)) + 1:]
        if rest in ("J", "jobspec", "R") or (rest == "eventlog" and name in JOB_MANAGER_EVENTS):
            raise FluxLiteError(f"{key}: refusing to append {name} (job data is written by the job manager)")
        return
    if key in stored.MANAGED or key.startswith(("checkpoint.", "sched.", "job-manager.")):
        raise FluxLiteError(f"{key}: refusing to append to an instance key (flux-lite writes it)")


def kvs_eventlog_append(instance, key, name, context=None, timestamp=None, namespace=None):
    """flux kvs eventlog append: one event at the end of the eventlog at
    KEY (created if missing); timestamp None is the instance clock's now.
    The owner's, or the job owner's in their job's namespace."""
    key, owner = namespace_key(instance, namespace, key)
    _require_namespace_writer(instance, owner, "kvs eventlog append")
    if timestamp is None:
        timestamp = instance.clock_now()
    entry = eventlog.make_entry(timestamp, name, context)
    store = instance.kvs
    with store.transaction():
        raw = store.get_raw(key)
        if raw is None and store.isdir(key):
            raise FluxLiteError("flux_kvs_commit: Is a directory")
        if raw is not None and raw[0] != "eventlog":
            raise FluxLiteError("flux_kvs_commit: Operation not supported")
        _check_append(key, name)
        store.append(key, eventlog.encode_entry(entry["timestamp"], name, entry.get("context")))


def kvs_unlink(instance, keys, recursive=False, force=False, namespace=None):
    """flux kvs unlink: remove keys (a directory with its contents under
    recursive); force: a missing key is no error. The instance's own keys
    are refused. Returns nothing; errors are flux-kvs's words."""
    from errno import ENOENT, ENOTEMPTY

    store = instance.kvs
    with store.transaction():
        targets = []
        for typed in keys:
            key, owner = namespace_key(instance, namespace, typed)
            _require_namespace_writer(instance, owner, "kvs unlink")
            isdir = store.isdir(key) if key not in (".", "") else True
            if key in (".", "") or (store.get_raw(key) is None and not isdir):
                if force and key not in (".", ""):
                    continue
                raise FluxLiteError(f"cannot unlink '{typed}': No such file or directory", errno=ENOENT) \
                    if key not in (".", "") else FluxLiteError(f"cannot unlink '{typed}': Invalid argument")
            if isdir and not recursive:
                raise FluxLiteError(f"cannot unlink '{typed}': Directory not empty", errno=ENOTEMPTY)
            under = store.keys_under(key) if isdir else []
            if owner is None:
                for k in (key, *under):
                    stored.check_remove(k, "unlink", typed)
            targets.append(key)
        for key in targets:
            store.delete(key)


# -- reading what guests may not --------------------------------------------------------


def kvs_get_raw(instance, key):
    """kvs get of one key: (kind, text) or None; another user's job keys are refused."""
    access.check_kvs_read(instance.identity, key, lambda jobid: job_userid(instance.kvs, jobid))
    return instance.kvs.get_raw(key)


def job_userid(kvs, jobid):
    """The submitting user of a job, from its eventlog's submit event (None if unknown)."""
    raw = kvs.get_raw(kvs_key(jobid, "eventlog"))
    if raw is None:
        return None
    first = raw[1].partition("\n")[0]
    try:
        ctx = eventlog.decode_entry(first).get("context") or {}
    except ValueError:
        return None
    userid = ctx.get("userid")
    return userid if isinstance(userid, int) else None


def read_log(instance, read=True, clear=False):
    """flux dmesg: the log rows (and with clear, empty it). Owner only."""
    access.require_owner(instance.identity, "dmesg")
    return instance.read_log(read=read, clear=clear)


def module_debug(broker, name, clear_all=False, set_=None, setbit=None, clearbit=None):
    """flux module debug: a module's debug flags, changed as asked; returns them. Owner only."""
    _require_owner(broker, "module debug")
    if name == "job-exec":
        flags = broker.exec.debug_flags
        set_flags = broker.exec.set_debug
    elif name == loader.loaded_name(broker):
        flags = broker.rpc(protocol.SCHED_DEBUG, protocol.debug_request())["flags"]

        def set_flags(flags):
            broker.rpc(protocol.SCHED_DEBUG, protocol.debug_request(flags))
    else:
        raise FluxLiteError(f"{name}: module is not loaded")
    changed = clear_all or set_ is not None or setbit is not None or clearbit is not None
    # the flags are a C int in Flux's modules: masks are taken as 32 bits
    # (-1 is 0xffffffff), so no value can be stored that a module cannot hold
    word = 0xFFFFFFFF
    if clear_all:
        flags = 0
    if set_ is not None:
        flags = set_ & word
    if setbit is not None:
        flags |= setbit & word
    if clearbit is not None:
        flags &= ~clearbit & word
    if changed:
        set_flags(flags)
    return flags


def job_exec_override(broker, jobid, event, status=0):
    """job-exec.override: start or finish a test-exec job in override mode
    (its owner only, as Flux's test exec checks; see Exec.override)."""
    broker.exec.override(jobid, event, status, broker.instance.identity.userid)


def module_defer(broker, name, flag):
    """module.debug's defer: hold the messages for module `name` until it is
    released (Flux's broker does this for any module; flux-lite's job
    manager talks to the scheduler by messages, so only the scheduler
    module can be deferred). Owner only; ENOENT for a module not loaded."""
    _require_owner(broker, "module debug")
    if name != loader.loaded_name(broker):
        if name in ("job-manager", "job-exec", "job-ingest", "job-list", "job-info", "resource", "kvs"):
            raise FluxLiteError(f"{name}: flux-lite defers the scheduler module's messages only", errno=errno_.EINVAL)
        raise FluxLiteError("No such file or directory", errno=errno_.ENOENT)
    broker.defer(name, flag)


# -- the flux package's KVS requests (kvs.commit, kvs.lookup) -------------------------


def kvs_commit(instance, ops):
    """kvs.commit: a Flux KVS transaction (KVS.commit_ops), the instance
    owner's as `kvs put` is; instance keys are refused as `kvs put` refuses them."""
    access.require_owner(instance.identity, "kvs put")
    instance.kvs.commit_ops(ops)


def kvs_lookup(instance, key, readdir=False, readlink=False):
    """kvs.lookup (KVS.lookup); another user's job keys are refused to a
    guest, as `kvs get` refuses them (each symlink's target checked too)."""
    store = instance.kvs

    def check(key):
        access.check_kvs_read(instance.identity, key, lambda jobid: job_userid(store, jobid))

    return store.lookup(key, readdir=readdir, readlink=readlink, check=check)
