"""Loading, removing and reloading the scheduler module.

Load: build the pool from the instance R, hello (replayed allocations from
the job manager), ready; then alloc requests flow. Remove: the scheduler's
state is discarded and the job manager's interface is torn down. The chosen
module and its arguments persist in ``sched.module``.
"""

from errno import EEXIST, ENOENT

from flux_lite.errors import FluxLiteError, UsageError

MODULE_KEY = "sched.module"
STATE_KEY = "sched.state"

MODULES = ("sched-simple", "sched-backfill")
POLICY_MODULE = {"fcfs": "sched-simple", "easy": "sched-backfill", "hybrid": "sched-backfill",
                 "conservative": "sched-backfill"}


def scheduler_class(name):
    if name == "sched-simple":
        from flux_lite.sched.simple import SimpleScheduler

        return SimpleScheduler
    if name == "sched-backfill":
        from flux_lite.sched.backfill import BackfillScheduler

        return BackfillScheduler
    raise FluxLiteError(f"{name}: no such scheduler module (known: {', '.join(MODULES)})")


def parse_module_args(name, argv):
    """Flux's module arguments: queue-depth=, mode=, log-level=, test-hello-nopartial, ...

    A bad argument makes the module load fail (exit 1), as in Flux.
    """
    try:
        return _parse_module_args(name, argv)
    except UsageError as exc:
        raise FluxLiteError(f"{name}: {exc}") from None


def _parse_module_args(name, argv):
    args = {}
    for arg in argv:
        key, eq, value = arg.partition("=")
        if key == "queue-depth" and eq:
            args["queue-depth"] = _depth(value)
        elif key == "mode" and eq:
            if value == "unlimited":
                args["queue-depth"] = "unlimited"
            elif value.startswith("limited="):
                n = value[len("limited="):]
                try:
                    limit = int(n)
                except ValueError:
                    limit = 0
                if limit <= 0:
                    raise UsageError(f"mode=limited= requires a positive integer, got '{n}'")
                args["queue-depth"] = limit
            else:
                raise UsageError(f"unknown argument '{arg}': built-in options are queue-depth, log-level, pool-class")
        elif key == "log-level" and eq:
            if value not in ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"):
                raise UsageError(f"log-level='{value}' is invalid")
            args["log-level"] = value
        elif key == "pool-class" and eq:
            if value not in ("Rv1Pool",):
                raise UsageError(f"pool-class='{value}' is invalid")
        elif key == "test-hello-nopartial" and not eq and name == "sched-simple":
            args["test-hello-nopartial"] = True
        elif key == "policy" and eq and name == "sched-backfill":
            if value not in ("easy", "hybrid", "conservative"):
                raise UsageError(f"policy='{value}' is invalid: expected easy, hybrid or conservative")
            args["policy"] = value
        elif key == "reservation-depth" and eq and name == "sched-backfill":
            args["reservation-depth"] = _posint(value, "reservation-depth")
        else:
            raise UsageError(f"unknown argument '{arg}': built-in options are queue-depth, log-level, pool-class")
    return args


def _depth(value):
    if value == "unlimited":
        return "unlimited"
    return _posint(value, "queue-depth", extra=" or 'unlimited'")


def _posint(value, key, extra=""):
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n <= 0:
        raise UsageError(f"{key}='{value}' is invalid: expected a positive integer{extra}")
    return n


def load_persisted(broker):
    rec = broker.kvs.get(MODULE_KEY)
    if rec is None:
        return None
    cls = scheduler_class(rec["name"])
    state = broker.kvs.get(STATE_KEY) or {}
    try:
        return cls(broker, rec.get("args"), state=state)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        from flux_lite.errors import FluxLiteError
        from flux_lite.stored import DamagedError

        if isinstance(exc, FluxLiteError) and not isinstance(exc, ValueError):
            raise
        raise DamagedError(STATE_KEY, f"the scheduler cannot load it: {exc}") from None


def config_module(cfg):
    """The module and args the instance config asks for."""
    from flux_lite import config as configmod

    policy = configmod.get_path(cfg, "sched.policy", "fcfs")
    name = POLICY_MODULE[policy]
    args = {}
    depth = configmod.get_path(cfg, "sched.queue-depth")
    if depth is not None:
        args["queue-depth"] = depth
    if name == "sched-backfill":
        args["policy"] = policy
        rdepth = configmod.get_path(cfg, "sched.reservation-depth")
        if rdepth is not None:
            args["reservation-depth"] = rdepth
    partial = configmod.get_path(cfg, "sched.partial-ok")
    if partial is False:
        args["partial-ok"] = False
    return name, args


def load_from_config(broker):
    name, args = config_module(broker.config)
    module_load(broker, name, args)


def loaded_name(broker):
    rec = broker.kvs.get(MODULE_KEY)
    return None if rec is None else rec["name"]


def module_load(broker, name, args, progress=None):
    if broker.kvs.get(MODULE_KEY) is not None:
        current = broker.kvs.get(MODULE_KEY)["name"]
        raise FluxLiteError(f"{name}: a scheduler is already loaded ({current}): service sched is already registered",
                            errno=EEXIST)
    cls = scheduler_class(name)
    broker.log("broker", "debug", f"insmod {name}")
    sched = cls(broker, args, state=None)
    broker._sched = sched
    broker._sched_loaded = True
    broker.kvs.put(MODULE_KEY, {"name": name, "args": args})
    jm = broker.jm
    records = jm.hello(sched.hello_partial_ok)
    sched.hello(records, progress=progress)
    mode, limit = sched.ready_args()
    jm.ready(mode, limit)
    sched.ready_log()
    sched.dirty = True
    sched.request_pass()
    broker.run()
    return sched


def module_remove(broker):
    rec = broker.kvs.get(MODULE_KEY)
    if rec is None:
        raise FluxLiteError("no scheduler module is loaded", errno=ENOENT)
    name = rec["name"]
    broker.log("broker", "debug", f"rmmod {name}")
    broker.run()  # let queued messages reach the old scheduler first
    broker._sched = None
    broker._sched_loaded = True
    broker.kvs.delete(MODULE_KEY)
    broker.kvs.delete(STATE_KEY)
    broker.jm.sched_teardown()
    broker.log("broker", "debug", f"module {name} exited")
    return name


def module_reload(broker, name=None, args=None, progress=None):
    rec = broker.kvs.get(MODULE_KEY)
    if name is None:
        if rec is None:
            raise FluxLiteError("no scheduler module is loaded", errno=ENOENT)
        name = rec["name"]
    if args is None:
        args = rec["args"] if rec is not None and rec["name"] == name else {}
    if rec is not None:
        module_remove(broker)
    return module_load(broker, name, args, progress=progress)


def reload_args(broker, policy=None, queue_depth=None, reservation_depth=None, partial_ok=True):
    """Module name and args for `sched reload`, starting from what is loaded now."""
    rec = broker.kvs.get(MODULE_KEY)
    current = dict(rec["args"]) if rec else {}
    name = rec["name"] if rec else config_module(broker.config)[0]
    if policy is not None:
        new_name = POLICY_MODULE[policy]
        if new_name != name:
            current = {}
        name = new_name
        if name == "sched-backfill":
            current["policy"] = policy
    if queue_depth is not None:
        current["queue-depth"] = _depth(queue_depth)
    if reservation_depth is not None:
        if name != "sched-backfill":
            raise UsageError("--reservation-depth applies to the easy, hybrid and conservative policies")
        current["reservation-depth"] = reservation_depth
    current.pop("test-hello-nopartial", None)
    current.pop("partial-ok", None)
    if not partial_ok:
        current["partial-ok"] = False
    return name, current
