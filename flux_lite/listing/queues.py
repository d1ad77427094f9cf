"""The `queue list` listing: one row per queue, as flux-queue's QueueInfo."""

from flux_lite import resources as resmod
from flux_lite.config import queues_of_ranks
from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd
from flux_lite.formats.outputformat import Markup
from flux_lite.listing import AltField, Listing

FORMATS = {
    "default": ("Default flux-queue list format string",
                "?:{queuem:<8.8} ?:{parent:<8.8} {color_enabled}{enabled:>2}{color_off} "
                "{color_started}{started:>2}{color_off} {defaults.timelimit!F:>8} {limits.timelimit!F:>8} "
                "{limits.range.effective.nnodes:>10} {limits.range.effective.ncores:>10} "
                "{limits.range.effective.ngpus:>10}"),
    "policy": ("flux-queue list with policy limits only",
               "?:{queuem:<8.8} ?:{parent:<8.8} {color_enabled}{enabled:>2}{color_off} "
               "{color_started}{started:>2}{color_off} {defaults.timelimit!F:>8} {limits.timelimit!F:>8} "
               "{limits.range.nnodes:>10} {limits.range.ncores:>10} {limits.range.ngpus:>10}"),
    "nodes": ("Show queue status plus all/up/allocated/free nodes",
              "?:{queuem:<8.8} ?:{parent:<8.8} {color_enabled}{enabled:>2}{color_off} "
              "{color_started}{started:>2}{color_off} {resources.all.nnodes:>6} {resources.up.nnodes:>10} "
              "{resources.down.nnodes:>10} {resources.allocated.nnodes:>11} {resources.free.nnodes:>10}"),
}

HEADINGS = {
    "queue": "QUEUE", "queuem": "QUEUE", "parent": "PARENT", "submission": "SUBMIT", "scheduling": "SCHED",
    "enabled": "EN", "started": "ST", "enabled.ascii": "EN", "started.ascii": "ST",
    "color_enabled": "", "color_started": "", "color_off": "",
    "defaults.timelimit": "TDEFAULT", "limits.timelimit": "TLIMIT",
    "limits.range.nnodes": "NNODES", "limits.range.ncores": "NCORES", "limits.range.ngpus": "NGPUS",
    "limits.range.effective.nnodes": "NNODES", "limits.range.effective.ncores": "NCORES",
    "limits.range.effective.ngpus": "NGPUS",
    "limits.min.nnodes": "MINNODES", "limits.max.nnodes": "MAXNODES",
    "limits.min.ncores": "MINCORES", "limits.max.ncores": "MAXCORES",
    "limits.min.ngpus": "MINGPUS", "limits.max.ngpus": "MAXGPUS",
}
for _item in ("nnodes", "ncores", "ngpus"):
    for _state in ("all", "free", "allocated", "up", "down"):
        HEADINGS[f"resources.{_state}.{_item}"] = _item[1:].upper() + (
            "" if _state == "all" else f":{_state[:5].upper()}")


# formats of the [list] table of flux-queue's config, as Flux's FluxQueueConfig("list")
QUEUE_LIST = Listing("flux-queue list", FORMATS, HEADINGS, user_format_errors=False)


class _Attrs:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class _Counts:
    """nnodes/ncores/ngpus of one resource set."""

    def __init__(self, rset):
        self.nnodes = rset.nnodes
        self.ncores = rset.ncores
        self.ngpus = rset.ngpus


class _Range:
    def __init__(self, lo, hi):
        for item in ("nnodes", "ncores", "ngpus"):
            setattr(self, item, f"{getattr(lo, item)}-{getattr(hi, item)}")


class QueueRow:
    """One line of `queue list`: what flux-queue's QueueInfo wrapper offers."""

    def __init__(self, name, parent, is_default, status, limits, defaults, resources, color):
        self.name = name
        self.queue = name or ""
        self.queuem = f"{name}*" if name and is_default else (name or "")
        self.parent = parent or ""
        self.is_enabled = status["enable"]
        self.is_started = status["start"]
        paused = status.get("blocked") == "parent"
        self.submission = "enabled" if self.is_enabled else "disabled"
        self.scheduling = "started" if self.is_started else ("stopped (parent)" if paused else "stopped")
        self.enabled = AltField("\u2714", "y") if self.is_enabled else AltField("\u2717", "n")
        if self.is_started:
            self.started = AltField("\u2714", "y")
        elif paused:
            self.started = AltField("\u23f8", "p")
        else:
            self.started = AltField("\u2717", "n")
        green, red, yellow = Markup("\033[01;32m"), Markup("\033[01;31m"), Markup("\033[01;33m")
        self.color_enabled = (green if self.is_enabled else red) if color else ""
        self.color_started = (green if self.is_started else yellow if paused else red) if color else ""
        self.color_off = Markup("\033[0;0m") if color else ""
        self.limits = limits
        self.defaults = defaults
        self.resources = resources


def _size_limits(qc, name):
    inf = float("inf")
    lo = {}
    hi = {}
    for item in ("nnodes", "ncores", "ngpus"):
        mn = qc.policy_value(name, f"limits.job-size.min.{item}")
        mx = qc.policy_value(name, f"limits.job-size.max.{item}")
        lo[item] = 0 if mn is None or mn < 0 else mn
        hi[item] = inf if mx is None or mx < 0 else mx
    return _Attrs(**lo), _Attrs(**hi)


def _fmt_max(v):
    return "inf" if v == float("inf") else v


def list_rows(broker, names=None, color=False, fields=None):
    """Rows for `queue list` (config order), optionally only the queues named;
    fields (the format's) tell whether allocations must be counted."""
    queues = broker.queues
    qc = queues.config
    all_names = qc.names() if qc.named else [None]
    if names:
        for name in names:
            if name not in qc.defs:
                raise FluxLiteError(f"No such queue: {name}")
        all_names = [n for n in all_names if n in set(names)]
    if fields is None or any(f.startswith(("resources.allocated", "resources.free")) for f in fields):
        status = resmod.resource_status(broker)
    else:
        # allocations need every job holding resources: skip them when not shown
        res = broker.resources
        everything = res.rset
        down = everything.copy_ranks(res.down_ranks())
        status = {"all": everything, "down": down, "up": everything.difference(down)}
    per_queue = queues_of_ranks(broker.config, status["all"]) if qc.named else {}
    rows = []
    for name in all_names:
        if name is None:
            sets = status
        else:
            ranks = per_queue[name] if qc.requires(name) else status["all"].ranks
            sets = {k: v.copy_ranks(v.ranks & ranks) for k, v in status.items()}
        counts = {k: _Counts(v) for k, v in sets.items()}
        counts.setdefault("allocated", None)
        counts.setdefault("free", None)
        lo, hi = _size_limits(qc, name)
        eff = _Attrs(**{i: min(getattr(hi, i), getattr(counts["all"], i)) for i in ("nnodes", "ncores", "ngpus")})
        rng = _Range(lo, _Attrs(**{i: _fmt_max(getattr(hi, i)) for i in ("nnodes", "ncores", "ngpus")}))
        rng.effective = _Range(lo, eff)
        tlimit = qc.policy_value(name, "limits.duration")
        tlimit = fsd.parse_config(str(tlimit)) if tlimit is not None else float("inf")
        tdefault = qc.policy_value(name, "jobspec.defaults.system.duration")
        tdefault = fsd.parse_config(str(tdefault)) if tdefault is not None else float("inf")
        limits = _Attrs(timelimit=tlimit if tlimit > 0 else float("inf"), range=rng, min=lo,
                        max=_Attrs(**{i: _fmt_max(getattr(hi, i)) for i in ("nnodes", "ncores", "ngpus")}))
        defaults = _Attrs(timelimit=tdefault if tdefault > 0 else float("inf"))
        parent = qc.defs[name].parent if name is not None else None
        rows.append(QueueRow(name, parent, name is not None and name == qc.default, queues.status(name),
                             limits, defaults, _Attrs(**counts), color))
    return rows
