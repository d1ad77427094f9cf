"""The resource module: the instance R, drain state and resource-status.

The instance R (``resource.R``) is written when the instance is created.
Drain and undrain are events in ``resource.eventlog`` (as in Flux); the
drained set is what replaying them yields. The scheduler learns of drains as
"down" ranks, the way Flux's resource.acquire updates tell it.
"""

import json
import math
from errno import EEXIST, EINVAL, ENOENT, ENOSYS

from flux_lite import config as configmod
from flux_lite import protocol
from flux_lite.errors import ConfigError, FluxLiteError, FormatError
from flux_lite.fake_resources import fake_R
from flux_lite.formats import eventlog, fsd, jsontext
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.formats.rset import Rset, rlist_from_dict, rlist_verify, rlite_nodes, verify_modes
from flux_lite.schedstate import allocated_parts
from flux_lite.stored import DamagedError


def _load_json_file(path, what):
    """A JSON file's value for the resource module's config (jansson's
    json_load_file words: "unable to open PATH: ...", line -1)."""
    try:
        return jsontext.load_file(path)
    except jsontext.JSONFileError as exc:
        raise ConfigError(f"{what}{exc.text} on line {exc.line}") from None


def _path_R(cfg):
    """R from [resource] path (when there is no resource.config), checked
    as Flux's resource module reads it (ConfigError with its words), or None."""
    path = configmod.get_path(cfg, "resource.path")
    if path is None or configmod.get_path(cfg, "resource.config"):
        return None
    R = _load_json_file(str(path), "")
    try:
        Rset.from_dict(R)
    except (FormatError, ValueError, TypeError, KeyError, AttributeError):
        # what librlist reads (a rank with gpus and no cores...), stored as flux-lite reads R
        try:
            R = rlist_from_dict(R).to_dict()
        except FormatError as exc:
            raise ConfigError(f"error parsing R: {exc}") from None
    return R


def _with_scheduling(cfg, R, configured):
    """R amended with the JSON of the file [resource] scheduling names
    (Flux: only with resource.path or [resource.config])."""
    path = configmod.get_path(cfg, "resource.scheduling")
    if path is None:
        return R
    if not configured:
        raise ConfigError("resource.scheduling requires resource.path or [resource.config]")
    R = dict(R)
    R["scheduling"] = _load_json_file(str(path), "error loading resource.scheduling: ")
    return R


def build_instance_R(cfg, size=1, hosts=None, cores=4, gpus=0):
    """R for a new instance: from [fake-resources] (Flux's rc1 installs it
    before the resource module loads), else from resource.config, else from
    the file resource.path names, else from the --test-* options;
    resource.scheduling added to a configured R. A ConfigError says it is the resource module's
    (log_name "resource": where Flux logs it)."""
    try:
        return _build_instance_R(cfg, size=size, hosts=hosts, cores=cores, gpus=gpus)
    except ConfigError as exc:
        exc.log_name = "resource"
        raise


def _build_instance_R(cfg, size=1, hosts=None, cores=4, gpus=0):
    fake = cfg.get("fake-resources")
    if fake is not None:
        return fake_R(fake)
    R = _path_R(cfg)
    if R is not None:
        exclude = configmod.get_path(cfg, "resource.exclude")
        if exclude is not None:
            exclude_ranks(Rset.from_dict(R), str(exclude))  # checked now, with Flux's words
        return _with_scheduling(cfg, R, True)
    R = nodes_R(cfg, size=size, hosts=hosts, cores=cores, gpus=gpus)
    return _with_scheduling(cfg, R, bool(configmod.get_path(cfg, "resource.config")))


def configured_R(cfg):
    """Whether the config gives R (resource.config or resource.path)."""
    return bool(configmod.get_path(cfg, "resource.config") or configmod.get_path(cfg, "resource.path"))


def hardware_R(cfg, size=1, hosts=None, cores=4, gpus=0):
    """The nodes' own resources when R is read from resource.path: those
    of the --test-* options, which the resource module verifies R against
    when the instance starts (None otherwise: the nodes are what R says)."""
    if configmod.get_path(cfg, "resource.path") is None or configmod.get_path(cfg, "resource.config"):
        return None
    return nodes_R({}, size=size, hosts=hosts, cores=cores, gpus=gpus)


def nodes_R(cfg, size=1, hosts=None, cores=4, gpus=0):
    """R of the instance's nodes: from resource.config, else from the --test-* options."""
    nodes = []
    entries = configmod.get_path(cfg, "resource.config")
    if entries:
        # Flux's [[resource.config]] rules (librlist): entries may name the same
        # hosts; their cores and gpus add up and properties accumulate, but an
        # id given twice for a host is an error
        seen = {}  # host -> [cores, gpus, properties]
        for ent in entries:
            ids = [_ids(ent[k]) if k in ent else None for k in ("cores", "gpus")]
            for host in Hostlist.parse(ent["hosts"]):
                rec = seen.setdefault(host, [None, None, []])
                for pos, value in enumerate(ids):
                    if value is None:
                        continue
                    if rec[pos] is not None and rec[pos] & value:
                        raise ConfigError("error parsing [resource.config] array: "
                                          "Unable to add rnode: File exists")
                    rec[pos] = value if rec[pos] is None else rec[pos] | value
                for prop in ent.get("properties", []):
                    if prop not in rec[2]:
                        rec[2].append(prop)
        nodes = [(host, IDset.range(0, 3) if c is None else c, g or IDset(), tuple(p))
                 for host, (c, g, p) in seen.items()]
    else:
        if hosts:
            hostlist = list(Hostlist.parse(hosts))
            if size and size != len(hostlist) and size != 1:
                raise FluxLiteError(f"--test-hosts has {len(hostlist)} hosts but --test-size is {size}")
        else:
            if size < 1:
                raise FluxLiteError("--test-size must be at least 1")
            hostlist = [f"node{i}" for i in range(size)]
        if cores < 1:
            raise FluxLiteError("--test-cores must be at least 1")
        if gpus < 0:
            raise FluxLiteError("--test-gpus must not be negative")
        nodes = [(h, cores, gpus, ()) for h in hostlist]
    R = Rset.build(nodes)
    exclude = configmod.get_path(cfg, "resource.exclude")
    if exclude is not None:
        # validated now; applied by Resources.rset. As in Flux, hosts cannot be
        # named before R is known, unless it is configured.
        exclude_ranks(R, str(exclude), by_host=bool(entries))
    return R.to_dict()


def exclude_ranks(rset, text, by_host=True):
    """The ranks resource.exclude names, checked as Flux's resource module
    checks it when it loads: an idset within the instance, or a hostlist of
    the instance's hosts (by_host: only when R is known, i.e. configured or
    the instance is running). ConfigError with Flux's words otherwise."""

    try:
        ids = IDset.parse(text)
    except FormatError:
        ids = None
    if ids is not None:
        if ids and ids.last() >= len(rset.ranks):
            raise ConfigError(f"exclude set {text} is out of range")
        return ids
    if not by_host:
        raise ConfigError(f"error decoding exclude set {text}: R is unavailable for mapping hostnames to ranks")
    error = f"error decoding exclude set {text}: invalid targets: "
    try:
        hosts = Hostlist.parse(text)
    except FormatError:
        raise ConfigError(error + "Hostlist cannot be decoded") from None
    known = {rset.hostname(r): r for r in rset.ranks}
    if len(hosts) > len(known):  # cannot all be the instance's: not expanded
        raise ConfigError(error + f"invalid hosts: {text}")
    missing = [h for h in hosts if h not in known]
    if missing:
        raise ConfigError(error + f"invalid hosts: {Hostlist.from_hosts(missing)}")
    return IDset([known[h] for h in hosts])


def _ids(value):
    """cores or gpus of a resource.config entry: a count (ids 0..N-1), or
    Flux's idset of the ids themselves."""
    if isinstance(value, int):
        return IDset.range(0, value - 1)
    return IDset.parse(str(value))


def targets_to_ranks(rset, text, invalid=None):
    """An idset of ranks, else a hostlist mapped to ranks (Flux's TARGETS).

    `invalid` replaces the message for text that is neither.
    """
    # more targets than the instance has nodes cannot all name one of them:
    # refused before anything is expanded ("0-999999999" is a gigabyte)
    size = len(rset.ranks)
    try:
        ids = IDset.parse(text)
    except FormatError:
        ids = None
    if ids is not None:
        if len(ids) > size:
            raise FluxLiteError(f"{text}: more ranks than the instance has ({size})", errno=EINVAL)
        return ids
    try:
        hosts = Hostlist.parse(text)
    except FormatError:
        raise FluxLiteError(invalid or f"{text}: must be a valid idset or hostlist", errno=EINVAL) from None
    if len(hosts) > size:
        raise FluxLiteError(f"{text}: more hosts than the instance has nodes ({size})", errno=EINVAL)
    wanted = set(hosts)
    ranks = [r for r in rset.ranks if rset.hostname(r) in wanted]
    missing = wanted - {rset.hostname(r) for r in ranks}
    if missing:
        raise FluxLiteError(f"didn't find {sorted(missing)[0]} in instance hostlist", errno=ENOENT)
    return IDset(ranks)


# the resource module's drain state: {rank: {"timestamp", "reason"}} (see Resources.drained)
DRAIN_KEY = "resource.drain-state"
# where the resource module checkpoints its drain state when unloaded, as Flux's
CHECKPOINT_KEY = "checkpoint.resource"
# the resource module's arguments of its last load that outlast it: {"monitor-force-up": true}
MODULE_KEY = "resource.module"


def _journal_truncated(entries, limit):
    """entries as Flux's reslog keeps them under journal-max=limit: each
    entry added in turn, and when there are more than limit, the oldest
    dropped down to limit - 1 and a "truncate" event with the time of the
    last dropped put in front."""
    if len(entries) <= limit:
        return entries
    if limit < 2:
        return [{"timestamp": entries[-1]["timestamp"], "name": "truncate"}]
    # the first overflow leaves limit - 1 entries and a truncate event; each
    # entry after it drops the truncate event and the oldest, adding one again
    # (so the journal ends with the last limit - 1 entries, after a truncate
    # event stamped with the entry just before them)
    kept = entries[-(limit - 1):]
    stamp = entries[-limit]["timestamp"]
    return [{"timestamp": stamp, "name": "truncate"}] + kept


class Resources:
    def __init__(self, broker):
        self.b = broker
        self._R = None
        self._rset = None
        self._drained = None
        self._host_rank = None  # ({rank: host}, {host: first rank}) of the instance R (see _hosts)

    @property
    def instance_R(self):
        if self._R is None:
            self._R = self.b.kvs.get("resource.R")
        return self._R

    @property
    def rset(self):
        """The instance resources, minus ranks excluded by the config."""
        if self._rset is None:
            try:
                rset = Rset.from_dict(self.instance_R)
            except (ValueError, TypeError, KeyError) as exc:
                raise DamagedError("resource.R", str(exc)) from None
            exclude = configmod.get_path(self.b.config, "resource.exclude")
            if exclude is not None:
                rset = rset.remove_ranks(targets_to_ranks(rset, str(exclude)))
            self._rset = rset
        return self._rset

    def config_changed(self):
        self._rset = None

    def set_expiration(self, expiration):
        R = dict(self.instance_R)
        R["execution"] = dict(R["execution"], expiration=expiration)
        self._R = R
        self._rset = None
        self.b.kvs.put_text("resource.R", json.dumps(R))

    # -- targets ------------------------------------------------------------

    def targets_to_ranks(self, text):
        if not text.strip():
            raise FluxLiteError("no targets given (an idset of ranks or a hostlist)", errno=EINVAL)
        return targets_to_ranks(self.rset, text)

    def hostlist_of(self, ranks):
        rset = self.rset
        if any(r not in rset.ranks for r in ranks):
            rset = Rset.from_dict(self.instance_R)  # excluded ranks have names too
            if any(r not in rset.ranks for r in ranks):
                # a broker R has no resources for: its own name
                brokers = self._broker_hosts()
                return str(Hostlist([rset.hostname(r) if r in rset.ranks else brokers.get(r, f"rank{r}")
                                     for r in ranks]))
        return str(Hostlist([rset.hostname(r) for r in ranks]))

    def _broker_hosts(self):
        """{rank: host} of the instance's brokers, as recorded when it was
        created ({} for an instance from before they were)."""
        hardware = self.b.instance.meta.get("hardware")
        try:
            own = rlist_from_dict(hardware)
        except FormatError:
            return {}
        return {rank: own.hostname(rank) for rank in own.ranks} if own.has_nodelist else {}

    # -- drain --------------------------------------------------------------

    @property
    def drained(self):
        """rank -> {"timestamp", "reason"} for drained ranks: the state the
        resource module holds (DRAIN_KEY), replayed from resource.eventlog
        when it was last loaded and kept up by every drain and undrain since,
        so that what a client writes into the eventlog counts only at the
        next load, as in Flux."""
        if self._drained is None:
            saved = self.b.kvs.get(DRAIN_KEY)
            if saved is None:
                self._replay()  # (an instance, or a restored archive, from before the key)
            else:
                self._drained = {int(rank): dict(info) for rank, info in saved.items()}
        return self._drained

    def _replay(self):
        """The drain state as Flux's resource module recovers it: its last
        checkpoint's (CHECKPOINT_KEY; none: nothing drained), then the
        resource.eventlog entries since replayed on it. Returns the time of
        the checkpoint (0 without one)."""
        checkpoint = self._restore_checkpoint()
        entries = self.b.kvs.get_eventlog("resource.eventlog") or []
        try:
            for entry in entries:
                if entry["timestamp"] >= checkpoint:
                    self._apply(entry)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self._drained = None
            raise DamagedError("resource.eventlog", f"bad drain entry: {exc}") from None
        return checkpoint

    def replay(self):
        """The drain state recovered (see _replay) and kept (a malformed
        entry is DamagedError and changes nothing); returns the time of the
        checkpoint it started from (0 without one)."""
        checkpoint = self._replay()
        self._save()
        return checkpoint

    def _save(self):
        self.b.kvs.put(DRAIN_KEY, {str(rank): info for rank, info in sorted(self._drained.items())})

    def _event_ranks(self, ctx):
        """The ranks a drain or undrain event names, as Flux's resource
        module replays them: each rank of its idset paired with the host of
        its nodelist in turn; where that host is no longer the rank's, the
        first rank of that host instead (none if the instance has no such
        host); ranks past the instance size are left out."""
        host_of, rank_of = self._hosts()
        nodelist = ctx.get("nodelist")
        hosts = list(Hostlist(nodelist)) if isinstance(nodelist, str) and nodelist else []
        size = self.size()
        out = []
        for i, rank in enumerate(IDset.parse(ctx["idset"])):
            if i < len(hosts) and host_of.get(rank) != hosts[i]:
                rank = rank_of.get(hosts[i])
                if rank is None:
                    continue
            if rank < size:
                out.append(rank)
        return out

    def _hosts(self):
        """({rank: host}, {host: its first rank}) of the instance R."""
        if self._host_rank is None:
            host_of = self._broker_hosts()
            host_of.update((rank, host) for rank, host, _cores, _gpus in Rset.from_dict(self.instance_R).nodes())
            rank_of: dict = {}
            for rank, host in sorted(host_of.items()):
                rank_of.setdefault(host, rank)
            self._host_rank = (host_of, rank_of)
        return self._host_rank

    def _apply(self, entry):
        ctx = entry.get("context") or {}
        if entry["name"] == "resource-init" and isinstance(ctx.get("drain"), dict):
            # (before v0.62 a restart recorded the whole drain state here)
            size = self.size()
            self._drained = {}
            for ids, info in ctx["drain"].items():
                for rank in IDset.parse(ids):
                    if rank < size:
                        self._drained[rank] = {"timestamp": info["timestamp"], "reason": info.get("reason", "")}
        elif entry["name"] == "drain":
            overwrite = ctx.get("overwrite") or 0
            for rank in self._event_ranks(ctx):
                old = self._drained.get(rank)
                if old is not None and old["reason"] and not overwrite:
                    continue  # a drained rank keeps its reason unless overwritten
                # the time a rank was drained stays unless forced (overwrite=2)
                stamp = entry["timestamp"] if old is None or overwrite == 2 else old["timestamp"]
                self._drained[rank] = {"timestamp": stamp, "reason": ctx.get("reason", "")}
        elif entry["name"] == "undrain":
            for rank in self._event_ranks(ctx):
                self._drained.pop(rank, None)

    def _post(self, name, context):
        entry = {"timestamp": self.b.now, "name": name, "context": context}
        self.b.kvs.append("resource.eventlog", eventlog.encode_entry(self.b.now, name, context))
        _ = self.drained  # load the replayed state before applying to it
        self._apply(entry)
        self._save()

    def drain_targets(self, text):
        """TARGETS of a drain or undrain request, with the resource module's errors."""
        # no targets ("", " ", ",") decode as an empty idset or hostlist: "idset is empty" below
        full = Rset.from_dict(self.instance_R)
        try:
            ranks = IDset.parse(text)
            # checked before anything is expanded ("0-999999999" is a gigabyte)
            if len(ranks) and ranks.last() > max(full.ranks):
                raise FluxLiteError("idset is out of range", errno=EINVAL)
        except FormatError:
            try:
                hosts = Hostlist.parse(text)
            except FormatError:
                raise FluxLiteError("invalid targets: Hostlist cannot be decoded", errno=EINVAL) from None
            names = {full.hostname(r) for r in full.ranks}
            missing = [h for h in hosts if h not in names]
            if missing:
                raise FluxLiteError(f"invalid targets: invalid hosts: {Hostlist(missing)}", errno=EINVAL) from None
            ranks = IDset(r for r in full.ranks if full.hostname(r) in set(hosts))
        if not len(ranks):
            raise FluxLiteError("idset is empty", errno=EINVAL)
        return ranks

    def drain(self, ranks, reason=None, mode=None, force=False):
        """Drain ranks, as Flux's resource.drain: without a mode, ranks already
        drained with a reason, or excluded, are an error; "update" leaves
        them be; "overwrite" replaces their reason, "force-overwrite" their
        time too. force=True is "overwrite"."""
        if force and mode is None:
            mode = "overwrite"
        if mode not in (None, "update", "overwrite", "force-overwrite"):
            raise FluxLiteError("Invalid mode specified", errno=EINVAL)
        ranks = IDset(ranks)
        if mode is None:
            excluded = [r for r in ranks if r not in self.rset.ranks]
            drained = [r for r in ranks if r in self.drained and self.drained[r]["reason"]]
            bad = sorted(set(excluded) | set(drained))
            if bad:
                what = " or ".join(w for w, ids in (("already drained", drained), ("excluded", excluded)) if ids)
                raise FluxLiteError(f"rank{'s' if len(bad) > 1 else ''} {IDset(bad)} {what}",
                                    errno=EEXIST if drained else EINVAL)
        ctx = {"idset": str(ranks), "nodelist": self.hostlist_of(ranks)}
        if reason is not None:
            ctx["reason"] = reason  # no reason: none recorded, as in Flux
        ctx["overwrite"] = {"overwrite": 1, "force-overwrite": 2}.get(mode, 0)
        self._post("drain", ctx)
        self._notify()

    def undrain(self, ranks, mode=None, reason=None):
        """Undrain ranks, as Flux's resource.undrain: without a mode, ranks
        not drained are an error; "update", "overwrite" (1) and
        "force-overwrite" (2) undrain what is drained and say nothing of
        the rest (the event records overwrite, and reason when given)."""
        if mode not in (None, "update", "overwrite", "force-overwrite"):
            raise FluxLiteError(f"invalid undrain mode '{mode}' specified", errno=EINVAL)
        ranks = IDset(ranks)
        notdrained = [r for r in ranks if r not in self.drained]
        if notdrained and mode is None:
            raise FluxLiteError(f"rank{'s' if len(notdrained) > 1 else ''} {IDset(notdrained)} not drained",
                                errno=EEXIST)
        ctx = {"idset": str(ranks), "nodelist": self.hostlist_of(ranks),
               "overwrite": {"overwrite": 1, "force-overwrite": 2}.get(mode, 0)}
        if reason is not None:
            ctx["reason"] = reason
        self._post("undrain", ctx)
        self._notify()

    def checkpoint(self):
        """The drain state as Flux's resource module checkpoints it: ranks
        with the same reason and (whole-second) time grouped into one idset."""
        groups: dict = {}
        for rank, info in sorted(self.drained.items()):
            groups.setdefault((float(round(info["timestamp"])), info.get("reason") or ""), []).append(rank)
        state = {}
        for (stamp, reason), ranks in groups.items():
            ids = IDset(ranks)
            state[str(ids)] = {"timestamp": stamp, "reason": reason, "nodelist": self.hostlist_of(ids)}
        return {"timestamp": self.b.now, "drain_state": state}

    def module_remove(self):
        """The resource module unloaded: as Flux's, it checkpoints its drain
        state (CHECKPOINT_KEY) so that the next load need not replay the
        eventlog from its start (see module_load)."""
        self.b.kvs.put(CHECKPOINT_KEY, self.checkpoint())

    def _restore_checkpoint(self):
        """The drain state of the last checkpoint (none: nothing drained) and
        its time (0 without one); DamagedError when it is malformed (the
        load fails, as Flux's does)."""
        self._drained = {}
        ckpt = self.b.kvs.get(CHECKPOINT_KEY)
        if ckpt is None:
            return 0.0
        try:
            stamp = ckpt["timestamp"]
            state = ckpt["drain_state"]
            if not isinstance(stamp, (int, float)) or isinstance(stamp, bool) or not isinstance(state, dict):
                raise TypeError("timestamp or drain_state")
            for ids, info in state.items():
                if not all(isinstance(info.get(k), str) for k in ("nodelist", "reason")) \
                        or not isinstance(info.get("timestamp"), (int, float)):
                    raise TypeError(ids)
                self._apply({"timestamp": info["timestamp"], "name": "drain",
                             "context": {"idset": ids, "nodelist": info["nodelist"], "reason": info["reason"]}})
        except (KeyError, TypeError, ValueError, AttributeError, FormatError):
            self._drained = None
            self.b.log("resource", "err", f"{CHECKPOINT_KEY}: invalid drain state entry")
            raise DamagedError(CHECKPOINT_KEY, "invalid drain state entry") from None
        return float(stamp)

    def _truncate(self, checkpoint):
        """[resource] history: the eventlog's entries from before the last
        checkpoint dropped (their drains are in it), those within `history`
        of now kept (Flux's truncate_eventlog; default 90 days, "inf" keeps all)."""
        history = fsd.parse_config(configmod.get_path(self.b.config, "resource.history", "90d"))
        if math.isinf(history):
            return
        if history:
            keep_from = self.b.now - history
            if 0 < keep_from < checkpoint:
                checkpoint = keep_from
        entries = self.b.kvs.get_eventlog("resource.eventlog") or []
        kept = [e for e in entries if e["timestamp"] >= checkpoint]
        if len(kept) == len(entries):
            return
        self.b.kvs.delete("resource.eventlog")
        for entry in kept:
            self.b.kvs.append("resource.eventlog", eventlog.encode_entry(
                entry["timestamp"], entry["name"], entry.get("context")))

    def module_load(self, noverify=False, notruncate=False, monitor_force_up=False):
        """The resource module (re)loaded, as Flux's does it: the drain
        state of the last checkpoint, then the resource.eventlog entries
        since replayed (a malformed entry fails the load), the eventlog
        truncated to [resource] history (unless notruncate) and
        resource-define posted, method "configuration" when R is
        configured, else "kvs" (resource.R reused); then rank 0, where
        `module load` loads it, verifies its own resources against R's
        (see verify_self) unless noverify (the module argument) or
        [resource] noverify."""
        self._R = None
        self._rset = None
        self._host_rank = None
        checkpoint = self.replay()  # a malformed entry fails the load (DamagedError)
        if monitor_force_up:
            self.b.kvs.put(MODULE_KEY, {"monitor-force-up": True})
        elif self.b.kvs.get(MODULE_KEY) is not None:
            self.b.kvs.delete(MODULE_KEY)
        _ = self.rset
        row = self.b.kvs.get_raw("resource.eventlog")
        if row is not None and row[0] != "eventlog":
            # a value `kvs put` stored: the module goes on appending to it as an eventlog
            entries = self.b.kvs.get_eventlog("resource.eventlog") or []
            self.b.kvs.delete("resource.eventlog")
            for entry in entries:
                self.b.kvs.append("resource.eventlog", eventlog.encode_entry(
                    entry["timestamp"], entry["name"], entry.get("context")))
        # excluded targets may not be drained: undrained, and the event posted so that
        # they start out undrained if they are included again
        exclude = configmod.get_path(self.b.config, "resource.exclude")
        if exclude is not None:
            ranks = IDset(r for r in targets_to_ranks(Rset.from_dict(self.instance_R), str(exclude))
                          if r in self.drained)
            if ranks:
                self._post("undrain", {"idset": str(ranks), "nodelist": self.hostlist_of(ranks)})
        if not notruncate:
            self._truncate(checkpoint)
        if not noverify and not configmod.get_path(self.b.config, "resource.noverify", False):
            self.verify_self(0)  # (in Flux the node's check drains before the module defines R)
        method = "configuration" if configured_R(self.b.config) else "kvs"
        self.b.kvs.append("resource.eventlog", eventlog.encode_entry(self.b.now, "resource-define", {"method": method}))

    def verify_modes(self):
        """[resource.verify] as a mode per hostname, core and gpu; without
        the table, the resource module's defaults (cores may be more than R
        says, gpus are not checked, the host name must match)."""
        verify = configmod.get_path(self.b.config, "resource.verify")
        if verify is None:
            return {"hostname": "strict", "core": "allow-extra", "gpu": "ignore"}
        return verify_modes(verify)

    def verify_self(self, rank):
        """The check a rank's resource module makes of its node when it
        loads (Flux's topo_verify): the node's own resources (recorded when
        the instance was created: flux-lite's nodes are simulated) against
        what R expects of the rank, under [resource.verify]; a mismatch
        drains the rank with librlist's message as the reason. Returns the
        message, or None when the rank verifies (or the node's resources
        are unknown: an instance from before they were recorded)."""
        hardware = self.b.instance.meta.get("hardware")
        if not isinstance(hardware, dict):
            return None
        try:
            own = rlist_from_dict(hardware)
            expected = rlist_from_dict(self.instance_R)
        except FormatError:
            return None
        if rank not in own.ranks:
            return None
        rc, message = rlist_verify(expected, own.remove_ranks(own.ranks - IDset([rank])), self.verify_modes())
        if rc == 0:
            return None
        self.b.log("resource", "err", f"draining: {message}")
        # Flux's drain_rank: posted even when the rank is drained already
        # (whose reason then stays), with no overwrite flag
        ranks = IDset([rank])
        nodelist = self.hostlist_of(ranks)
        ctx = {"idset": str(ranks), "nodelist": nodelist, "reason": message}
        if rank != 0:
            ctx["overwrite"] = 0  # (another rank asks rank 0's module, mode "update")
        self._post("drain", ctx)
        self.b.log("resource", "info", f"drain idset={rank} nodelist={nodelist} overwrite=0 reason={message}")
        self._notify()
        return message

    def size(self):
        """The instance's number of brokers (ranks): those of the R it
        started with, whatever R a reload gave it since."""
        size = self.b.instance.meta.get("size")
        if isinstance(size, int):
            return size
        ranks = Rset.from_dict(self.instance_R).ranks
        return ranks.last() + 1 if len(ranks) else 0

    def reload(self, R):
        """resource.reload: R (a dict, checked) becomes the instance R,
        posted as Flux's resource module posts it (resource-define
        method=reload). The caller checks that no scheduler holds the
        resources."""
        try:
            Rset.from_dict(R)
        except FormatError:
            # what librlist reads (a rank with gpus and no cores...), stored as flux-lite reads R
            try:
                R = rlist_from_dict(R).to_dict()
            except FormatError as exc:
                raise FluxLiteError(f"invalid R: {exc}", errno=EINVAL) from None
        meta = self.b.instance.meta
        if "size" not in meta:
            # the brokers stay when R changes: their number is kept before R is replaced
            meta = self.b.instance.meta = dict(meta, size=self.size())
            self.b.kvs.put("instance.meta", meta)
        self.b.kvs.put_text("resource.R", json.dumps(R))
        self.b.kvs.append("resource.eventlog",
                          eventlog.encode_entry(self.b.now, "resource-define", {"method": "reload"}))
        self._R = R
        self._rset = None
        self._host_rank = None

    def down_ranks(self):
        return IDset(self.drained)

    # -- journal ------------------------------------------------------------

    def journal(self):
        """resource.journal as Flux's resource module streams it: the
        entries of resource.eventlog (but the resource-define events of
        earlier loads: "historical resource-define events are not
        helpful"), with the module's "restart" event (ranks, online,
        nodelist: the instance's brokers) where it was last loaded (before
        the resource-define it posted) and the "online" event of every
        broker after that resource-define (flux-lite's brokers are all up;
        with the module argument monitor-force-up the restart event says
        so instead). restart and online are not in the KVS, as in Flux.
        [resource] journal-max bounds it as Flux's reslog does: the oldest
        entries dropped for a "truncate" event in front (with the time of
        the last one dropped)."""
        entries = self.b.kvs.get_eventlog("resource.eventlog") or []
        full = Rset.from_dict(self.instance_R)
        size = self.size()
        ranks = str(IDset.range(0, size - 1)) if size else ""
        last = max((i for i, e in enumerate(entries) if e.get("name") == "resource-define"), default=None)
        t0 = entries[last]["timestamp"] if last is not None else self.b.now
        forced = bool((self.b.kvs.get(MODULE_KEY) or {}).get("monitor-force-up"))
        restart = {"timestamp": t0, "name": "restart",
                   "context": {"ranks": ranks, "online": ranks if forced else "", "nodelist": full.nodelist_text()}}
        if last is None:
            out = [restart] + entries
        else:
            online = [{"timestamp": t0, "name": "online", "context": {"idset": ranks}}] if ranks and not forced else []
            earlier = [e for e in entries[:last] if e.get("name") != "resource-define"]
            out = earlier + [restart, entries[last]] + online + entries[last + 1:]
        limit = configmod.get_path(self.b.config, "resource.journal-max", 100000)
        return _journal_truncated(out, limit)

    def journal_targets(self, text):
        """-i/--include of resource eventlog: (ranks, hosts) of TARGETS,
        ranks of the instance or its hosts (Flux's words for others)."""
        full = Rset.from_dict(self.instance_R)
        hosts = [full.hostname(r) for r in sorted(full.ranks)]
        try:
            ranks = IDset.parse(text)
        except FormatError:
            ranks = None
        if ranks is not None:
            if len(ranks) and ranks.last() >= len(hosts):
                raise FluxLiteError(f"invalid targets {text}: rank {ranks.last()} out of range", errno=EINVAL)
            return ranks, set(hosts[r] for r in ranks)
        try:
            wanted = list(Hostlist.parse(text))
        except FormatError:
            raise FluxLiteError(f"invalid targets {text}", errno=EINVAL) from None
        missing = [h for h in wanted if h not in hosts]
        if missing:
            raise FluxLiteError(f"invalid targets {text}: {missing[0]} not found in hostlist", errno=ENOENT)
        return IDset(r for r, h in enumerate(hosts) if h in wanted), set(wanted)

    def _notify(self):
        """Tell the scheduler which ranks are down now (resource.acquire's updates in Flux)."""
        try:
            self.b.rpc(protocol.SCHED_RESOURCE_UPDATE, protocol.resource_update(down=str(self.down_ranks())))
        except FluxLiteError as exc:
            if exc.errno != ENOSYS:  # no scheduler loaded: it acquires afresh when loaded
                raise

    # -- status -------------------------------------------------------------

    def allocated_rset(self):
        """job-manager.resource-status: jobs holding resources + housekeeping.

        While a scheduler is loaded its pool holds exactly those: it is asked
        (sched.resource-status) or its persisted rows are read; otherwise the
        job index's R column (no job records are decoded) is merged in one
        pass."""
        # a loaded scheduler's pool holds exactly that: ask it when this
        # command has it in memory, else read its persisted rows (one per
        # busy rank), rather than every running job's R
        if self.b.scheduler_in_memory():
            try:
                allocated = self.b.rpc(protocol.SCHED_RESOURCE_STATUS, {})["allocated"]
                return self.rset.subset((rank, allocated.cores(rank), allocated.gpus(rank))
                                        for rank in allocated.ranks)
            except FluxLiteError as exc:
                if exc.errno != ENOSYS:
                    raise
        else:
            parts = allocated_parts(self.b.kvs)
            if parts is not None:
                return self.rset.subset(parts)
        parts = []
        for R in self.b.jm.index.held_Rs():
            parts.extend(rlite_nodes(R))
        for rs in self.b.housekeeping.allocated_R().values():
            parts.extend((rank, rs.cores(rank), rs.gpus(rank)) for rank in rs.ranks)
        return self.rset.subset(parts)


def resource_status(broker, source="job-manager"):
    """Rsets for all, allocated, down, up and free.

    source 'job-manager' counts jobs holding resources plus housekeeping (Flux's
    job-manager.resource-status); 'sched' asks the scheduler's pool.
    """
    res = broker.resources
    everything = res.rset
    down = everything.copy_ranks(res.down_ranks())
    if source == "sched":
        try:
            allocated = broker.rpc(protocol.SCHED_RESOURCE_STATUS, {})["allocated"]
        except FluxLiteError as exc:
            if exc.errno != ENOSYS:
                raise
            raise FluxLiteError("sched.resource-status: no scheduler is loaded", errno=ENOSYS) from None
    else:
        allocated = res.allocated_rset()
    up = everything.difference(down)
    free = up.difference(allocated)
    return {"all": everything, "allocated": allocated, "down": down, "up": up, "free": free}


def module_status(broker):
    """resource.status as Flux's resource module answers it: R (every rank,
    excluded ones too, without its scheduling key), the online, offline,
    exclude and torpid idsets, and drain: {idset: {timestamp, reason}}, the
    ranks of one drain (same time, same reason) together."""
    res = broker.resources
    R = {k: v for k, v in res.instance_R.items() if k != "scheduling"}
    full = Rset.from_dict(res.instance_R)
    exclude = IDset()
    text = configmod.get_path(broker.config, "resource.exclude")
    if text is not None:
        exclude = IDset(targets_to_ranks(full, str(text)))
    groups: dict = {}
    for rank, info in sorted(res.drained.items()):
        if rank in full.ranks:
            groups.setdefault((info["timestamp"], info["reason"] or ""), []).append(rank)
    drain = {str(IDset(ranks)): {"timestamp": stamp, "reason": reason} for (stamp, reason), ranks in groups.items()}
    # one machine: every rank's broker is this process, always up
    return {"R": R, "drain": drain, "online": str(IDset(full.ranks)), "offline": "", "exclude": str(exclude),
            "torpid": ""}
