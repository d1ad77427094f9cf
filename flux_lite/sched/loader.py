"""Loading, removing and reloading the scheduler module.

Load: instantiate the module (see :mod:`flux_lite.sched.registry`) and hand
it to the broker; the module then starts itself (hello, ready) and alloc
requests flow. Remove: the broker unloads it (the job manager hears of it)
and its state is discarded. The chosen module and its arguments persist in
``sched.module``.
"""

import importlib
import os
from errno import EBUSY, EEXIST, ENOENT

from flux_lite import config as configmod
from flux_lite import schedstate
from flux_lite.errors import FluxLiteError, UsageError
from flux_lite.sched import hosted, registry
from flux_lite.sched.base import Scheduler, parse_depth
from flux_lite.schedstate import MODULE_KEY, STATE_KEY
from flux_lite.stored import DamagedError


def scheduler_class(name):
    cls = registry.module_class(name)
    if cls is None:
        raise FluxLiteError(f"{name}: no such scheduler module (known: {', '.join(registry.module_names())})")
    return cls


def parse_module_args(name, argv):
    """Flux's module arguments, as the module declares them (queue-depth=,
    mode=, log-level=, ...). A bad argument makes the load fail (exit 1), as in Flux.
    A module file takes its arguments as they are typed (its own code reads them)."""
    if hosted.is_module_file(name):
        return list(argv)
    try:
        return _parse_module_args(name, argv)
    except UsageError as exc:
        raise FluxLiteError(f"{name}: {exc}") from None


def _parse_module_args(name, argv):
    if registry.companion_class(name) is not None:
        return list(argv)  # a companion module reads its arguments itself
    cls = registry.module_class(name)
    if cls is not None and hasattr(cls, "parse_argv"):
        return cls.parse_argv(list(argv))
    known = {arg.key: arg for arg in registry.module_args(name)}
    args = {}
    for arg in argv:
        key, eq, value = arg.partition("=")
        spec = known.get(key)
        if spec is None or spec.flag == bool(eq):
            raise UsageError(f"unknown argument '{arg}': built-in options are queue-depth, log-level, pool-class")
        args.update(spec.parse(value if eq else None))
    return args


def _depth(value):
    return parse_depth(value)


def load_persisted(broker):
    rec = broker.kvs.get(MODULE_KEY)
    if rec is None:
        return None
    if rec.get("path"):
        # a module file: loaded afresh when this command first needs it (see sched.hosted)
        return hosted.HostedScheduler(broker, rec["path"], rec.get("args") or [], rec["name"],
                                      state=broker.kvs.get(STATE_KEY) or {})
    cls = scheduler_class(rec["name"])
    state = broker.kvs.get(STATE_KEY) or {}
    try:
        return cls(broker, rec.get("args"), state=state)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        if isinstance(exc, FluxLiteError) and not isinstance(exc, ValueError):
            raise
        raise DamagedError(STATE_KEY, f"the scheduler cannot load it: {exc}") from None


def persisted_unloads(broker):
    """Does the persisted scheduler module have an unload hook (something
    it leaves in other modules)? True when it cannot be told without
    loading it (a module file, an unknown or damaged record)."""
    rec = broker.kvs.get(MODULE_KEY)
    if not isinstance(rec, dict) or rec.get("path") or not isinstance(rec.get("name"), str):
        return True
    cls = registry.module_class(rec["name"])
    return not isinstance(cls, type) or hasattr(cls, "unload")


discard_state = schedstate.discard


def config_module(cfg):
    """The module and args the instance config asks for (sched.module: a
    module file, with sched.module-args; else sched.policy's module)."""
    path = configmod.get_path(cfg, "sched.module")
    if path is not None:
        return path, list(configmod.get_path(cfg, "sched.module-args", []))
    policy = configmod.get_path(cfg, "sched.policy", registry.default_policy())
    cls = registry.policy_module(policy)
    args = {}
    depth = configmod.get_path(cfg, "sched.queue-depth")
    if depth is not None:
        args["queue-depth"] = depth
    args.update(cls.policy_args(policy, cfg))
    partial = configmod.get_path(cfg, "sched.partial-ok")
    if partial is False:
        args["partial-ok"] = False
    return cls.name, args


def load_from_config(broker):
    name, args = config_module(broker.config)
    cls = registry.module_class(name)
    # the modules it needs first, as Flux's modprobe loads them (with rc1's arguments)
    for companion in getattr(cls, "companions", ()):
        if not companion_loaded(broker, companion):
            companion_load(broker, companion, list(getattr(cls, "companion_args", {}).get(companion, ())))
    module_load(broker, name, args)


# -- companion modules (sched.registry.register_companion) ------------------------


def _companion_file(name):
    cls = registry.companion_class(name)
    return None if cls is None else importlib.import_module(cls.__module__)


def companion_loaded(broker, name):
    return broker.companion(name) is not None


def companion_load(broker, name, argv):
    """Load companion module NAME (Fluxion's resource or feasibility module)."""
    mod = _companion_file(name)
    rec = broker.kvs.get(MODULE_KEY)
    if rec is not None and name not in getattr(registry.module_class(rec["name"]) or object, "companions", ()):
        # resource.acquire has one holder: the scheduler that is loaded
        raise FluxLiteError(f"{name}: resource.acquire is held by {rec['name']}: Device or resource busy",
                            errno=EBUSY)
    broker.log("broker", "debug", f"insmod {name}")
    mod.load(broker, list(argv))


def companion_remove(broker, name):
    """Remove companion NAME; a scheduler that needs it stops first (Fluxion's
    qmanager exits when sched-fluxion-resource's notify stream fails)."""
    if not companion_loaded(broker, name):
        raise FluxLiteError(f"{name}: module is not loaded", errno=ENOENT)
    rec = broker.kvs.get(MODULE_KEY)
    cls = registry.module_class(rec["name"]) if rec is not None and not rec.get("path") else None
    if cls is not None and name in getattr(cls, "requires", ()):
        broker.log(cls.name, "err",
                   f"update_on_resource_response: exiting due to {name}.notify failure")
        module_remove(broker)
    broker.log("broker", "debug", f"rmmod {name}")
    _companion_file(name).remove(broker)
    broker.log("broker", "debug", f"module {name} exited")


def loaded_name(broker):
    rec = broker.kvs.get(MODULE_KEY)
    return None if rec is None else rec["name"]


def loaded_path(broker):
    """The file of the loaded module, when it was loaded from one (else None)."""
    rec = broker.kvs.get(MODULE_KEY)
    return None if rec is None else rec.get("path")


def loaded_args(broker):
    rec = broker.kvs.get(MODULE_KEY)
    return {} if rec is None else rec.get("args", {})


def module_load(broker, name, args, progress=None):
    """Instantiate scheduler module NAME (or load the module file NAME) and
    hand it to the broker; it then synchronises with the job manager itself
    (hello, ready)."""
    if broker.kvs.get(MODULE_KEY) is not None:
        current = broker.kvs.get(MODULE_KEY)["name"]
        raise FluxLiteError(f"{name}: a scheduler is already loaded ({current}): service sched is already registered",
                            errno=EEXIST)
    holder = _acquire_holder(broker, None if hosted.is_module_file(name) else scheduler_class(name))
    if holder is not None:
        raise FluxLiteError(f"{name}: resource.acquire is held by {holder}: Device or resource busy", errno=EBUSY)
    if hosted.is_module_file(name):
        return _module_file_load(broker, name, args)
    cls = scheduler_class(name)
    broker.log("broker", "debug", f"insmod {name}")
    if cls.python_module:
        # Flux runs its Python modules in a process of their own
        broker.log("broker", "debug", f"module-python-exec {name} pid={os.getpid()}")
    sched = cls(broker, args, state=None)
    broker.kvs.put(MODULE_KEY, {"name": name, "args": args})
    broker.insmod_scheduler(sched, progress=progress)
    return sched


def _module_file_load(broker, path, args):
    """Load a module file (see sched.hosted). A module that fails to load has
    said why in the log; nothing is left loaded."""
    path = os.path.abspath(path)
    name = hosted.module_name(path)
    broker.log("broker", "debug", f"insmod {name}")
    broker.log("broker", "debug", f"module-python-exec {name} pid={os.getpid()}")
    sched = hosted.HostedScheduler(broker, path, args, name)
    broker.kvs.put(MODULE_KEY, {"name": name, "args": list(args), "path": path})
    try:
        broker.insmod_scheduler(sched)
    except hosted.ModuleError as exc:
        sched.exit(str(exc))
        raise
    return sched


def module_remove(broker, keep_pool=False):
    """Unload the scheduler and forget its state (keep_pool: see schedstate.discard)."""
    rec = broker.kvs.get(MODULE_KEY)
    if rec is None:
        raise FluxLiteError("no scheduler module is loaded", errno=ENOENT)
    name = rec["name"]
    broker.log("broker", "debug", f"rmmod {name}")
    broker.rmmod_scheduler()
    broker.kvs.delete(MODULE_KEY)
    discard_state(broker.kvs, keep_pool=keep_pool)
    broker.log("broker", "debug", f"module {name} exited")
    return name


def _acquire_holder(broker, cls):
    """A loaded companion that holds resource.acquire and that scheduler
    class cls (None: a module file) does not work with, or None."""
    for companion in registry.companion_names():
        if companion not in getattr(cls, "companions", ()) and companion_loaded(broker, companion):
            if getattr(registry.companion_class(companion), "acquires", False):
                return companion
    return None


def _switch_companions(broker, cls):
    """sched reload to another module: Fluxion's modules go when the new
    scheduler does not use them, and come when it does."""
    wanted = getattr(cls, "companions", ())
    for companion in reversed(registry.companion_names()):
        if companion not in wanted and companion_loaded(broker, companion):
            companion_remove(broker, companion)
    for companion in wanted:
        if not companion_loaded(broker, companion):
            companion_load(broker, companion, list(getattr(cls, "companion_args", {}).get(companion, ())))


def module_reload(broker, name=None, args=None, progress=None):
    rec = broker.kvs.get(MODULE_KEY)
    if name is None:
        if rec is None:
            raise FluxLiteError("no scheduler module is loaded", errno=ENOENT)
        name = rec["name"]
    if args is None:
        args = rec["args"] if rec is not None and rec["name"] == name else {}
        if rec is not None and rec.get("path") and rec["name"] == name:
            name = rec["path"]  # reloading a module file: the file again
    # a scheduler class saves its pool through sched.store, which writes only
    # the rank and allocation rows that differ from those it finds: the old
    # module's stay until then (hello rebuilds the same allocations)
    cls = None if hosted.is_module_file(name) else registry.module_class(name)
    keep = rec is not None and isinstance(cls, type) and issubclass(cls, Scheduler)
    if rec is not None:
        module_remove(broker, keep_pool=keep)
    try:
        if not hosted.is_module_file(name):
            _switch_companions(broker, scheduler_class(name))
        sched = module_load(broker, name, args, progress=progress)
    except BaseException:
        if keep:
            schedstate.clear(broker.kvs.conn)  # (no scheduler to save over them)
        raise
    return sched


def _and_list(items):
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _module_file_args(args, queue_depth, reservation_depth, partial_ok):
    """`sched reload` of a module file: its arguments, with the options as
    Flux's module arguments (queue-depth=N, test-hello-nopartial)."""
    if reservation_depth is not None:
        raise UsageError("--reservation-depth applies to flux-lite's policies, not to a module file")
    args = [a for a in args or [] if a != "test-hello-nopartial"
            and not (queue_depth is not None and a.startswith("queue-depth="))]
    if queue_depth is not None:
        args.append(f"queue-depth={queue_depth}")
    if not partial_ok:
        args.append("test-hello-nopartial")
    return args


def reload_args(broker, policy=None, queue_depth=None, reservation_depth=None, partial_ok=True):
    """Module name and args for `sched reload`, starting from what is loaded now."""
    rec = broker.kvs.get(MODULE_KEY)
    if policy is None:
        name, args = (rec.get("path") or rec["name"], rec.get("args")) if rec else config_module(broker.config)
        if hosted.is_module_file(name):
            return name, _module_file_args(args, queue_depth, reservation_depth, partial_ok)
    if rec is not None and rec.get("path"):
        rec = None  # a module file's arguments mean nothing to a policy's module
    current = dict(rec["args"]) if rec else {}
    name = rec["name"] if rec else config_module(broker.config)[0]
    if policy is not None:
        cls = registry.policy_module(policy)
        if cls.name != name:
            current = {}
        name = cls.name
        current.update(cls.policy_args(policy))
    if queue_depth is not None:
        current["queue-depth"] = _depth(queue_depth)
    if reservation_depth is not None:
        takes = [cls for cls in registry.modules().values()
                 if any(a.key == "reservation-depth" for a in cls.module_args)]
        if name not in {cls.name for cls in takes}:
            policies = [p for cls in takes for p in cls.policies]
            raise UsageError(f"--reservation-depth applies to the {_and_list(policies)} policies")
        current["reservation-depth"] = reservation_depth
    current.pop("test-hello-nopartial", None)
    current.pop("partial-ok", None)
    if not partial_ok:
        current["partial-ok"] = False
    return name, current
