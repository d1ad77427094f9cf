"""Job queues (RFC 33): configuration, enable/start state, submission checks.

Without a ``queues`` table an instance has one anonymous queue, enabled and
started. With one, every queue is named, a job must name one (or get the
default queue), and named queues begin life enabled but *stopped*. A virtual
queue (``parent``) shares its parent's resources and is effectively stopped
while its parent is.

Queue state (enable/start and their reasons) belongs to the job manager and
lives in a KVS key of its own, ``job-manager.queue``, holding Flux's
checkpoint form (``{"version": 1, "queue": [...]}``), so it survives every
command, scheduler reloads and dump/restore.
"""

from __future__ import annotations

from errno import EINVAL, EPERM

from flux_lite.config import get_path
from flux_lite.errors import ConfigError, FluxLiteError

STATE_KEY = "job-manager.queue"



# -- configuration -------------------------------------------------------------


class QueueDef:
    """One configured queue."""

    __slots__ = ("name", "requires", "parent", "policy")

    def __init__(self, name, requires=None, parent=None, policy=None):
        self.name = name
        self.requires = requires
        self.parent = parent
        self.policy = policy or {}


class QueueConfig:
    """The queues of a config: definitions in config order and the default."""

    def __init__(self, cfg):
        self.defs = {}
        for name, table in (cfg.get("queues") or {}).items():
            self.defs[name] = QueueDef(name, table.get("requires"), table.get("parent"), table.get("policy"))
        self.default = get_path(cfg, "policy.jobspec.defaults.system.queue")
        self.global_policy = cfg.get("policy") or {}

    @property
    def named(self) -> bool:
        return bool(self.defs)

    def names(self):
        return list(self.defs)

    def resource_def(self, name):
        """The queue whose resources name uses: itself, or a virtual queue's parent."""
        q = self.defs[name]
        return self.defs.get(q.parent, q) if q.parent else q

    def requires(self, name):
        """Properties a job of queue name must have (a virtual queue inherits)."""
        return self.resource_def(name).requires

    def policy_value(self, name, dotted):
        """A policy key for queue name: the queue's own, else the global one."""
        q = self.defs.get(name) if name is not None else None
        while q is not None:
            # a virtual queue's own keys, then its parent's, then the general table
            value = get_path(q.policy, dotted)
            if value is not None:
                return value
            q = self.defs.get(q.parent) if q.parent else None
        return get_path(self.global_policy, dotted)

    def hash_order(self):
        """Queue names in the order Flux's job manager walks its queue hash
        (czmq zhashx: modified Bernstein hash, prime-sized table, new items at
        the head of their chain). `queue status` and the enable/start replies
        list queues in this order; `queue list` uses config order."""
        return zhashx_order(self.names())


_CONFIG_CACHE = {}


def queue_config(cfg) -> QueueConfig:
    hit = _CONFIG_CACHE.get(id(cfg))
    if hit is not None and hit[0] is cfg:
        return hit[1]
    qc = QueueConfig(cfg)
    _CONFIG_CACHE.clear()
    _CONFIG_CACHE[id(cfg)] = (cfg, qc)
    return qc


_PRIMES = (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 43, 47, 53, 59, 61, 103, 107, 109, 113, 127,
           229, 233, 239, 241, 251, 487, 491, 499, 503, 509, 997, 1009, 1013, 1019, 1021)


def _bernstein(key):
    h = 0
    for c in key.encode():
        h = ((33 * h) ^ (c - 256 if c > 127 else c)) & 0xFFFFFFFFFFFFFFFF
    return h


def zhashx_order(names):
    """Iteration order of a czmq zhashx after inserting names in order."""
    prime = 0
    chain_limit = 1
    table = [[] for _ in range(_PRIMES[0])]
    size = 0

    def rehash(new_prime):
        new = [[] for _ in range(_PRIMES[new_prime])]
        for bucket in table:
            for key in bucket:
                new[_bernstein(key) % _PRIMES[new_prime]].insert(0, key)
        return new

    for name in names:
        if size >= _PRIMES[prime] * 75 // 100 and prime + 5 < len(_PRIMES):
            prime += 5
            table = rehash(prime)
            chain_limit += 1
        index = _bernstein(name) % _PRIMES[prime]
        if name in table[index]:
            continue
        if len(table[index]) > chain_limit and prime + 5 < len(_PRIMES):
            prime += 5
            table = rehash(prime)
            index = _bernstein(name) % _PRIMES[prime]
        table[index].insert(0, name)
        size += 1
    return [key for bucket in table for key in bucket]


def _table_error(where, msg):
    return ConfigError(f"error parsing [{where}] config table: {msg}")


def _jansson_type(value):
    """The type name jansson's unpack errors use for a parsed config value."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return {int: "integer", float: "real", str: "string", list: "array", dict: "object"}.get(type(value), "null")


def _unpack(where, table, allowed):
    """jansson's ``{s?o ... !}``: an object holding only the allowed keys."""
    if not isinstance(table, dict):
        raise _table_error(where, f"Expected object, got {_jansson_type(table)}")
    extra = [k for k in table if k not in allowed]
    if extra:
        raise _table_error(where, f"{len(extra)} object item(s) left unpacked: {', '.join(extra)}")


def _is_fsd(value):
    from flux_lite.formats import fsd

    if not isinstance(value, str):  # Flux wants an FSD string, not a number
        return False
    try:
        fsd.parse_config(value)
    except ValueError:
        return False
    return True


def _is_string_array(value, banned=""):
    return isinstance(value, list) and all(
        isinstance(v, str) and not (set(v) & set(banned)) for v in value)


# characters Flux refuses in a queue's required property names
_BANNED_PROPERTY_CHARS = " \t!&'\"`|()"


def _validate_job_size(where, size):
    _unpack(where, size, ("nnodes", "ncores", "ngpus"))
    for key in ("nnodes", "ncores", "ngpus"):  # jansson checks keys in format order
        if key in size and (isinstance(size[key], bool) or not isinstance(size[key], int)):
            raise _table_error(where, f"Expected integer, got {_jansson_type(size[key])}")
    if any(v < -1 for v in size.values()):
        raise _table_error(where, "values must be >= -1")


def validate_policy(policy, where):
    """A [policy] table (global or per queue), as Flux's conf_policy checks
    it: jobspec defaults, limits, access and the scheduler table. Returns the
    default queue it names, if any."""
    _unpack(where, policy, ("jobspec", "limits", "access", "scheduler"))
    default_queue = None
    if "jobspec" in policy:
        jw = f"{where}.jobspec"
        jobspec = policy["jobspec"]
        _unpack(jw, jobspec, ("defaults",))
        if "defaults" in jobspec:
            _unpack(jw, jobspec["defaults"], ("system",))
            system = jobspec["defaults"].get("system", {})
            _unpack(jw, system, ("duration", "queue"))
            if "duration" in system and not _is_fsd(system["duration"]):
                raise _table_error(jw, "'defaults.system.duration' is not a valid FSD")
            if "queue" in system:
                if not isinstance(system["queue"], str):
                    raise _table_error(jw, "'defaults.system.queue' is not a string")
                default_queue = system["queue"]
    if "limits" in policy:
        lw = f"{where}.limits"
        limits = policy["limits"]
        _unpack(lw, limits, ("job-size", "duration"))
        if "duration" in limits and not _is_fsd(limits["duration"]):
            raise _table_error(lw, "'duration' is not a valid FSD")
        if "job-size" in limits:
            size = limits["job-size"]
            _unpack(f"{lw}.job-size", size, ("min", "max"))
            # Flux names these tables [...limits.min] / [...limits.max]
            for bound in ("min", "max"):
                if bound in size:
                    _validate_job_size(f"{lw}.{bound}", size[bound])
    if "access" in policy:
        aw = f"{where}.access"
        access = policy["access"]
        _unpack(aw, access, ("allow-user", "allow-group"))
        for key in ("allow-user", "allow-group"):
            if key in access and not _is_string_array(access[key]):
                raise _table_error(aw, f"'{key}' must be a string array")
    return default_queue


def validate_queues(cfg):
    """Check [queues] and the default queue, with Flux's messages and in
    Flux's order: each entry's syntax first, then parent relationships."""
    queues = cfg.get("queues")
    if queues is not None:
        if not isinstance(queues, dict):
            raise ConfigError("error parsing [queues] config table: not a table")
        for name, table in queues.items():
            where = f"queues.{name}"
            _unpack(where, table, ("policy", "requires", "parent"))
            parent = table.get("parent")
            if "parent" in table and not isinstance(parent, str):
                raise _table_error(where, "'parent' must be a string")
            if "policy" in table:
                if validate_policy(table["policy"], f"{where}.policy") is not None:
                    raise _table_error(where, "'policy' must not define a default queue!")
                if parent is not None and "scheduler" in table["policy"]:
                    raise _table_error(where, "a virtual queue must not set 'policy.scheduler'")
            if "requires" in table:
                if parent is not None:
                    raise _table_error(where, "a virtual queue must not set 'requires'")
                if not _is_string_array(table["requires"], _BANNED_PROPERTY_CHARS):
                    raise _table_error(where, "'requires' must be an array of property strings (RFC 20)")
        for name, table in queues.items():
            parent = table.get("parent")
            if parent is None:
                continue
            where = f"queues.{name}"
            if parent == name:
                raise _table_error(where, "parent queue is itself")
            if parent not in queues:
                raise _table_error(where, f"parent queue '{parent}' is not configured")
            if isinstance(queues[parent], dict) and isinstance(queues[parent].get("parent"), str):
                # inheritance is one level deep (RFC 33)
                raise _table_error(where, f"parent queue '{parent}' is itself a virtual queue")
    default = get_path(cfg, "policy.jobspec.defaults.system.queue")
    if isinstance(default, str) and (not queues or default not in queues):
        raise ConfigError(f"the [policy] config table defines a default queue {default} "
                          "that is not in [queues] table")


# -- state --------------------------------------------------------------------------


def _default_state(named):
    # named queues begin enabled but stopped; the anonymous queue is started
    return {"enable": True, "start": not named, "checkpoint_start": not named,
            "disable_reason": None, "stop_reason": None}


def queue_of(jobspec):
    """attributes.system.queue of a jobspec, or None."""
    try:
        name = jobspec["attributes"]["system"].get("queue")
    except (KeyError, TypeError, AttributeError):
        return None
    return name if isinstance(name, str) else None


class Queues:
    """The job manager's queues for one command (loaded on first use)."""

    def __init__(self, broker):
        self.b = broker
        self.config = queue_config(broker.config)
        self._states = None

    # -- state load/save ---------------------------------------------------------

    @property
    def states(self):
        """name (None for the anonymous queue) -> state dict."""
        if self._states is None:
            named = self.config.named
            keys = self.config.names() if named else [None]
            states = {k: _default_state(named) for k in keys}
            saved = self.b.kvs.get(STATE_KEY) or {}
            for ent in saved.get("queue", []):
                name = ent.get("name")
                if name in states:
                    st = states[name]
                    st["enable"] = bool(ent.get("enable", True))
                    st["disable_reason"] = ent.get("disable_reason")
                    st["start"] = bool(ent.get("start", st["start"]))
                    st["checkpoint_start"] = bool(ent.get("checkpoint_start", st["start"]))
                    st["stop_reason"] = ent.get("stop_reason")
            self._states = states
        return self._states

    def save(self):
        self.b.kvs.put(STATE_KEY, {"version": 1, "queue": self._entries(checkpointed=False)})

    def checkpoint(self):
        """Flux's checkpoint form of the queue states (start as checkpointed)."""
        return self._entries(checkpointed=True)

    def _entries(self, checkpointed):
        """The queue states as stored (the live start, and the checkpointed one
        where it differs) or, checkpointed, as Flux's checkpoint has them."""
        out = []
        for name, st in self.states.items():
            start = st["checkpoint_start"] if checkpointed else st["start"]
            ent = {} if name is None else {"name": name}
            ent["enable"] = st["enable"]
            ent["start"] = start
            if not checkpointed and st["checkpoint_start"] != start:
                ent["checkpoint_start"] = st["checkpoint_start"]
            if not st["enable"]:
                ent["disable_reason"] = st["disable_reason"]
            if not start and st["stop_reason"]:
                ent["stop_reason"] = st["stop_reason"]
            out.append(ent)
        return out

    # -- lookups -------------------------------------------------------------------

    def lookup(self, name):
        """The state of queue name (None = the anonymous queue), or Flux's error."""
        if name is not None:
            if not self.config.named or name not in self.config.defs:
                raise FluxLiteError(f"'{name}' is not a valid queue", errno=EINVAL)
            return self.states[name]
        if self.config.named:
            raise FluxLiteError("a named queue is required", errno=EINVAL)
        return self.states[None]

    def is_started(self, name):
        """Would the job manager send alloc requests for queue name's jobs?"""
        if not self.config.named:
            return self.states[None]["start"]
        q = self.config.defs.get(name)
        if q is None:
            return False
        states = self.states
        if not states[name]["start"]:
            return False
        return q.parent is None or states[q.parent]["start"]

    def job_started(self, job) -> bool:
        if not self.config.named:
            return self.states[None]["start"]
        return self.is_started(queue_of(job.jobspec))

    def status(self, name):
        """job-manager.queue-status: enable, start and reasons as Flux reports them."""
        st = self.lookup(name)
        out = {"enable": st["enable"]}
        if not st["enable"]:
            out["disable_reason"] = st["disable_reason"]
        blocked = None
        if not self.b.jm.sched_state.get("online"):
            start, reason, blocked = False, "Scheduler is offline", "scheduler"
        elif not st["start"]:
            start, reason = False, st["stop_reason"]
        else:
            start, reason = True, None
            parent = self.config.defs[name].parent if name is not None else None
            if parent is not None and not self.states[parent]["start"]:
                start, reason, blocked = False, f"parent queue '{parent}' is stopped", "parent"
        out["start"] = start
        if not start and reason:
            out["stop_reason"] = reason
        if blocked:
            out["blocked"] = blocked
        return out

    def status_names(self, name=None, verbose=False):
        """The queues a status report covers, in the job manager's order."""
        if name is None or verbose:
            return self.config.hash_order() if self.config.named else [name]
        self.lookup(name)
        return [name]

    # -- enable/disable and start/stop ------------------------------------------------

    def _targets(self, name, all_queues):
        if name is None:
            if self.config.named and not all_queues:
                raise FluxLiteError("Use --all to apply this command to all queues", errno=EINVAL)
            return list(self.states)
        self.lookup(name)
        return [name]

    def enable(self, name, all_queues, enable, reason=None):
        """job-manager.queue-enable."""
        self._check_owner()
        if not enable and not reason:
            raise FluxLiteError("reason is required for disable", errno=EINVAL)
        for target in self._targets(name, all_queues):
            st = self.states[target]
            st["enable"] = bool(enable)
            st["disable_reason"] = None if enable else reason
        self.save()

    def start(self, name, all_queues, start, reason=None, nocheckpoint=False):
        """job-manager.queue-start: stopping cancels outstanding alloc requests
        of the queue's jobs; starting queues its SCHED jobs for the scheduler."""
        self._check_owner()
        targets = self._targets(name, all_queues)
        for target in targets:
            st = self.states[target]
            st["start"] = bool(start)
            if not nocheckpoint:
                st["checkpoint_start"] = bool(start)
            st["stop_reason"] = None if start else (reason or None)
        self.save()
        affected = set(targets)
        if self.config.named:
            # a virtual queue follows its parent
            affected |= {q.name for q in self.config.defs.values() if q.parent in affected}
        if start:
            self._start_jobs(None if name is None else affected)
        else:
            self._stop_jobs(None if name is None else affected)

    def _check_owner(self):
        from flux_lite import access

        access.require_owner(self.b.instance.identity, None)  # the command prefixes "start: " etc.

    def _jobs_of(self, names):
        from flux_lite.job_manager.job import SCHED

        jm = self.b.jm
        if not jm.index.any_active(SCHED):
            return []
        return [j for j in jm.jobs.values()
                if j.state == SCHED and (names is None or queue_of(j.jobspec) in names)]

    def _start_jobs(self, names):
        jm = self.b.jm
        for job in sorted(self._jobs_of(names), key=lambda j: j.id):
            if not job.queued and not job.alloc_pending and job.priority:
                jm.alloc.enqueue(job)

    def _stop_jobs(self, names):
        jm = self.b.jm
        for job in self._jobs_of(names):
            if job.queued:
                job.queued = False  # its heap entry is now stale
            elif job.alloc_pending:
                jm.alloc.cancel_outstanding(job)

    def alloc_query(self):
        """job-manager.alloc-query: queued, pending-to-scheduler and running counts."""
        from flux_lite.job_manager.job import PENDING, RUNNING, SCHED

        jm = self.b.jm
        if not jm.index.any_active(PENDING | RUNNING):
            return {"queue_length": 0, "alloc_pending": 0, "running": 0}
        if all(st["start"] for st in self.states.values()):
            # every queue started: each SCHED job with a priority and no
            # request out is queued, so the index's columns can count them
            jm.index.save()
            return jm.index.alloc_counts(SCHED)
        jobs = jm.jobs.values()
        queued = sum(1 for j in jobs if j.state == SCHED and j.queued and not j.alloc_pending and j.priority)
        return {"queue_length": queued, "alloc_pending": jm.alloc.outstanding(),
                "running": sum(1 for j in jobs if j.has_resources)}

    # -- submission -------------------------------------------------------------------

    def frobnicate(self, jobspec):
        """What job-ingest does to a new jobspec: default queue and duration,
        then the queue's required properties as constraints. Returns a copy
        when something changes."""
        cfg = self.config
        system = (jobspec.get("attributes") or {}).get("system") or {}
        name = system.get("queue")
        if name is None:
            name = cfg.default
        if name is None and cfg.named:
            raise FluxLiteError("no queue specified", errno=EPERM)
        if cfg.named and name not in cfg.defs:
            raise FluxLiteError(f"Invalid queue '{name}' specified", errno=EPERM)
        changes = {}
        if system.get("queue") is None and name is not None:
            changes["queue"] = name
        default_duration = cfg.policy_value(name, "jobspec.defaults.system.duration")
        if default_duration is not None and not system.get("duration"):
            from flux_lite.formats import fsd

            seconds = fsd.parse_config(str(default_duration))
            changes["duration"] = 0.0 if seconds == float("inf") else seconds
        requires = cfg.requires(name) if cfg.named else None
        if requires:
            cons = system.get("constraints")
            if isinstance(cons, dict) and isinstance(cons.get("properties"), list):
                props = list(cons["properties"])
                props.extend(p for p in requires if p not in props)
                changes["constraints"] = dict(cons, properties=props)
            elif cons:
                changes["constraints"] = {"and": [cons, {"properties": list(requires)}]}
            else:
                changes["constraints"] = {"properties": list(requires)}
        if not changes:
            return jobspec
        jobspec = dict(jobspec)
        attrs = dict(jobspec.get("attributes") or {})
        new_system = dict(system)
        new_system.update(changes)
        attrs["system"] = new_system
        jobspec["attributes"] = attrs
        return jobspec

    def submit_check(self, jobspec):
        """job-manager's check at submit: a valid, enabled queue."""
        name = queue_of(jobspec)
        st = self.lookup(name)
        if not st["enable"]:
            where = f" to {name}" if name is not None else ""
            raise FluxLiteError(f"job submission{where} is disabled: {st['disable_reason']}", errno=EINVAL)

    def duration_limit(self, name):
        """The duration limit (seconds) for jobs of queue name, or None."""
        from flux_lite.formats import fsd

        value = self.config.policy_value(name, "limits.duration")
        if value is None:
            return None
        limit = fsd.parse_config(str(value)) if not isinstance(value, (int, float)) else float(value)
        return limit if 0 < limit < float("inf") else None

    def check_job_size(self, name, counts):
        """The .limit-job-size plugin: the request's node, core and GPU counts
        against the job-size limits of queue name (-1 = unlimited, overriding
        a general limit)."""
        if not self.config.global_policy and not self.config.named:
            return
        values = {"nnodes": counts["nnodes"], "ncores": counts["nslots"] * counts["slot_size"],
                  "ngpus": counts["nslots"] * counts["slot_gpus"]}
        for bound, word in (("max", "exceeds"), ("min", "is under")):
            for item in ("nnodes", "ncores", "ngpus"):
                limit = self.config.policy_value(name, f"limits.job-size.{bound}.{item}")
                if not isinstance(limit, int) or limit < 0:
                    continue
                value = values[item]
                if (value > limit) if bound == "max" else (value < limit):
                    where = f" for queue {name}" if name is not None else ""
                    raise FluxLiteError(f"requested {item} ({value}) {word} policy limit of {limit}{where}",
                                        errno=EINVAL)

    # -- update queue= ------------------------------------------------------------------

    def update_check(self, job, new_name):
        """The .update-queue plugin: errors, else the constraints to post with it."""
        from flux_lite.job_manager.job import RUNNING

        if job.state & RUNNING:
            raise FluxLiteError("update of queue for running job not supported", errno=EINVAL)
        system = (job.jobspec or {}).get("attributes", {}).get("system", {})
        current = system.get("queue")
        if current is not None and current == new_name:
            raise FluxLiteError(f"job queue is already set to {new_name}", errno=EINVAL)
        if not isinstance(new_name, str):
            raise FluxLiteError(f"'{new_name}' is not a valid queue", errno=EINVAL)
        newq = self.lookup(new_name)
        if not newq["enable"]:
            raise FluxLiteError(f"queue {new_name} is currently disabled", errno=EINVAL)
        # constraints must be exactly the current queue's: they are replaced
        self.lookup(current)
        expected = None
        if current is not None and self.config.requires(current):
            expected = {"properties": list(self.config.requires(current))}
        cons = system.get("constraints")
        if not ((not cons and not expected) or cons == expected):
            # Flux names the job's current queue here, not the target
            raise FluxLiteError(f"job appears to have non-queue constraints, unable to update queue to {current}",
                                errno=EINVAL)
        requires = self.config.requires(new_name)
        return {"properties": list(requires)} if requires else {}


def with_virtual(cfg, names):
    """names plus the virtual queues whose parent is among them (`jobs -q`)."""
    qc = queue_config(cfg)
    out = set(names)
    out |= {q.name for q in qc.defs.values() if q.parent in out}
    return out


def queues_of_ranks(cfg, rset):
    """name -> IDset of the ranks each queue may use (requires all its properties)."""
    qc = queue_config(cfg)
    out = {}
    for name in qc.names():
        req = qc.requires(name)
        ranks = rset.ranks
        for prop in req or ():
            ranks = ranks & rset.ranks_with_property(prop)
        out[name] = ranks
    return out


# -- drain and idle (job-manager.drain / job-manager.idle) --------------------------


def drained(broker):
    """True once no job is active, else None (a wait check)."""
    from flux_lite.job_manager.job import ACTIVE

    return None if broker.jm.index.any_active(ACTIVE) else True


def idle(broker):
    """The number of pending jobs once no job holds resources, else None."""
    from flux_lite.job_manager.job import PENDING, RUNNING

    jm = broker.jm
    if jm.index.any_active(RUNNING):
        return None
    if not jm.index.any_active(PENDING):
        return 0
    jm.index.save()
    return jm.index.count_active(PENDING)


def reconfigured(broker) -> None:
    """The [queues] table changed: queues that stay keep their state, new ones
    begin stopped (the anonymous queue started); jobs follow their queue's
    new state (outstanding requests of stopped queues are canceled)."""
    broker._queues = None
    queues = broker.queues
    queues.save()  # drops the state of queues no longer configured
    names = list(queues.states)
    started = {n for n in names if queues.is_started(n)}
    if queues.config.named:
        stopped = {q.name for q in queues.config.defs.values()} - started
        # jobs of queues that are gone (or of no queue) cannot be scheduled either
        jobs = queues._jobs_of(None)
        stopped |= {queue_of(j.jobspec) for j in jobs if queue_of(j.jobspec) not in queues.config.defs}
        queues._stop_jobs(stopped)
        queues._start_jobs(started)
    elif None in started:
        queues._start_jobs(None)
    else:
        queues._stop_jobs(None)
