"""A scheduler module from a file: Flux's Python broker modules, hosted.

``flux module load PATH.py [ARGS]`` loads a file written against Flux's
Python API (``flux.scheduler.Scheduler``, ``flux.brokermod.BrokerModule``,
entered through ``mod_main(h, *args)``). The broker carries RFC 27 to it
exactly as to flux-lite's own policies: :class:`HostedScheduler` stands in
the scheduler's slot and forwards each message and request to the module,
and the module's requests (hello, ready, alloc responses, its log lines) come
back through an :class:`Endpoint`, the module's connection to the broker.

The module side -- the handle ``mod_main`` receives, the reactor, the
request handlers -- belongs to the ``flux`` package (layer 7b), which this
layer never imports. It is found through the one plugin point of this file,
:func:`register_host`: importing ``flux.brokermod`` (which every module does,
through ``flux.scheduler`` or directly) installs the function that runs a
loaded file's entry point against an Endpoint.

The module runs synchronously: its reactor returns once it is set up, the
broker delivers messages to its handlers and drives its ``schedule()``
generators to completion. There is no daemon, so a module instance lives
for one command (a replay is one command): when a command that changes the
instance starts, the module is loaded afresh as ``flux module reload`` would
(the job manager hears the previous instance go and requeues its outstanding
requests; hello re-registers the allocations, partly released ones included;
ready; the job manager re-sends the pending requests), quietly: only its
warnings and errors are logged. What a module keeps beyond that is its own
business, as across a reload in Flux.

Errors a module makes end it as Flux's broker ends a module whose reactor
failed: its traceback goes to the log under its name, the job manager hears
it go (pending jobs wait for the next scheduler), and ``sched.module`` is
forgotten. A response the job manager must not see (a second final response
to one request, or R that is not the instance's free resources) is dropped,
logged, and the job is denied (Flux's ``alloc`` exception) instead.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from flux_lite import bindings, notices, schedstate
from flux_lite import protocol as rfc27
from flux_lite.errors import FluxLiteError
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58, kvs_key
from flux_lite.formats.rset import Rset
from flux_lite.schedstate import MODULE_KEY, STATE_KEY

if TYPE_CHECKING:
    from flux_lite.broker import Broker

# the flux package's host (see register_host): (endpoint, loaded file, args) -> a running module
_HOSTS: list[Callable[..., Any]] = []

_LIBRARY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # flux_lite/


def register_host(host: Callable[..., Any]) -> None:
    """The plugin point: install the function that runs a module file.

    ``host(endpoint, module, args)`` calls the file's entry point with a
    handle connected to ``endpoint`` and returns an object the adapter drives:
    ``deliver(topic, payload)`` (a request's response payload, None for a
    message; FluxLiteError for an error response), ``needs_pass``,
    ``run_pass()``, ``forecast()``, ``stopped`` (the module stopped its
    reactor with an error)."""
    _HOSTS[:] = [host]


def is_module_file(name: str) -> bool:
    """Does a `flux module load` argument name a module file rather than a module?"""
    return name.endswith(".py")


def module_name(path: str) -> str:
    """The name Flux gives a module loaded from a file: the file's name without .py."""
    return os.path.basename(path)[:-3]


# messages about requests the job manager requeues when a module instance goes
_REQUEUED = (rfc27.SCHED_ALLOC, rfc27.SCHED_CANCEL, rfc27.SCHED_PRIORITIZE)
# the messages (no response) the job manager sends; the rest are requests
_MESSAGES = (*_REQUEUED, rfc27.SCHED_FREE)


class ModuleError(FluxLiteError):
    """The hosted module failed (the message is the one line the CLI prints)."""


def _module_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """exc's traceback without flux-lite's own frames: the module's code, and
    the flux package calls it made."""
    frames = traceback.extract_tb(exc.__traceback__)
    host = os.path.join(str(bindings.PATH), "flux", "brokermod.py")  # the host's own calls: not the author's
    return [fr for i, fr in enumerate(frames)
            if (not fr.filename.startswith(_LIBRARY_DIR) or fr.filename.startswith(str(bindings.PATH)))
            and (fr.filename != host or i == len(frames) - 1)]


def module_traceback(exc: BaseException) -> list[str]:
    """The lines of exc's traceback a module's author reads (_module_frames)."""
    frames = _module_frames(exc)
    lines = ["Traceback (most recent call last):"]
    lines += [ln.rstrip("\n") for ln in traceback.format_list(frames)]
    lines += [ln.rstrip("\n") for ln in traceback.format_exception_only(type(exc), exc)]
    return [part for ln in lines for part in ln.split("\n")]


class Endpoint:
    """The broker as a hosted module sees it: its requests, its responses to
    sched.alloc, its log lines, the KVS and the clock."""

    def __init__(self, sched: HostedScheduler) -> None:
        self.sched = sched
        self.b = sched.b
        self.name = sched.name

    @property
    def now(self) -> float:
        """The instance's virtual clock (what the module's reactor reads)."""
        return float(self.b.now)

    def debug_test(self, flag: int, clear: bool = False) -> bool:
        flags = self.sched.debug_flags
        hit = bool(flags & flag)
        if hit and clear:
            self.sched.set_debug(flags & ~flag)
        return hit

    def log(self, level: str, text: str) -> None:
        self.b.log(self.name, level, text)

    def rpc(self, topic: str, payload: dict) -> Any:
        """A request of the module, answered at once (FluxLiteError on error)."""
        if topic == rfc27.JM_HELLO:
            if self.sched.reattaching:
                # the running module would hold partly released allocations
                # minus what was freed: ask for them whatever the module says
                payload = dict(payload, **{"partial-ok": True})
            records = self.b.rpc(topic, payload)
            self.sched.hello_records(records)
            return records
        if topic == "resource.acquire":
            return self.sched.acquire()
        if topic.startswith("job-manager."):
            return self.b.rpc(topic, payload)
        raise rfc27.error(rfc27.ENOSYS, f"{topic}: service is not available to a hosted module")

    def stream(self, topic: str, payload: dict) -> Iterator[Any]:
        """A streaming request: its responses one by one."""
        response = self.rpc(topic, payload)
        if isinstance(response, list):
            yield from response
        else:
            yield response

    def kvs_get(self, key: str) -> Any:
        value = self.b.kvs.get(key)
        if value is None:
            raise rfc27.error(rfc27.ENOENT, "No such file or directory")
        return value

    def kvs_put(self, key: str, value: Any) -> None:
        self.b.kvs.put(key, value)

    def alloc_response(self, jobid: int, response: dict) -> None:
        """The module answers sched.alloc for jobid (SUCCESS after it wrote R)."""
        self.sched.alloc_response(jobid, response)


class HostedScheduler:
    """The scheduler slot's occupant for a module file (see the module docstring).

    It answers the broker as flux-lite's own schedulers do (``handle``,
    ``needs_pass``/``run_pass``, ``needs_forecast``/``forecast``, ``save``),
    and keeps what the instance asks a scheduler about without asking the
    module: the allocations its answers made (``sched check``, ``resource
    list``), its debug flags, its open requests.
    """

    python_module = True
    policy = "module"
    description = "a Python scheduler module file"

    def __init__(self, broker: Broker, path: str, args: list[str], name: str | None = None,
                 state: dict | None = None) -> None:
        self.b = broker
        self.path = path
        self.args = list(args)
        self.name = name or module_name(path)
        self.module: Any = None  # the flux package's running module (see register_host)
        self.attached = False
        self.reattaching = False
        self.exited = False
        self.debug_flags = int((state or {}).get("debug", 0))
        self.needs_forecast = False
        self.dirty = state is None
        self.passes = 0
        self.allocs: dict[int, Rset] = {}  # what the module's answers and hello hold
        self._taken: dict[int, tuple[int, int]] = {}  # see _hold
        self.open: set[int] = set()  # alloc requests delivered, not yet answered

    # -- loading --------------------------------------------------------------

    def _exec_file(self) -> Any:
        """Import the module file (as Flux's broker does, by path); the flux
        package is put first on the path, as `flux python` puts it."""
        here = str(bindings.PATH)
        if sys.path[:1] != [here]:
            if here in sys.path:
                sys.path.remove(here)
            sys.path.insert(0, here)
        modname = f"_flux_lite_module_{self.name.replace('-', '_')}"
        spec = importlib.util.spec_from_file_location(modname, self.path)
        if spec is None or spec.loader is None:
            raise ModuleError(f"{self.path}: not a Python module file")
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except FileNotFoundError:
            raise ModuleError(f"{self.path}: No such file or directory") from None
        return mod

    def start(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Load the file and run its entry point: the module registers its
        services, says hello and ready, and returns (its reactor is the broker)."""
        self.attached = True
        try:
            mod = self._exec_file()
            if not _HOSTS:
                raise ModuleError(f"{self.name}: the module does not use the flux package: a Python module "
                                  "is written against flux.brokermod (import flux.scheduler or flux.brokermod)")
            self.module = _HOSTS[0](Endpoint(self), mod, self.args)
        except ModuleError:
            raise
        except Exception as exc:
            self._log_traceback(exc)
            raise ModuleError(f"{self.name}: {_one_line(exc)}") from None
        if self.module.stopped:
            raise ModuleError(f"{self.name}: module exited with error during load")

    def attach(self) -> None:
        """When the command starts (Broker.run), or else when it first needs
        the scheduler: load the module afresh, as a reload does. Requests
        queued for the previous instance are dropped (the job manager
        re-sends them after ready)."""
        if self.attached:
            return
        self.attached = True
        queue = self.b.messages
        # frees stay: one for an allocation hello reports reaches the new instance (see handle)
        kept = [m for m in queue if m[0] not in _REQUEUED]
        queue.clear()
        queue.extend(kept)
        # quiet: the log reads as if the module had run all along (its
        # warnings and errors still show)
        self.reattaching = self.b.log_quiet = True
        try:
            self.b.rpc(rfc27.JM_DISCONNECT, {})
            self.start()
        except ModuleError as exc:
            failure: ModuleError | None = exc
        else:
            failure = None
        finally:
            self.reattaching = self.b.log_quiet = False
        if failure is not None:
            self.exit(str(failure))
            notices.notice(f"{failure}; module exited (see flux dmesg)")

    # -- failures -------------------------------------------------------------------

    def _log_traceback(self, exc: BaseException) -> None:
        for line in module_traceback(exc):
            self.b.log(self.name, "err", line)

    def _fail(self, what: str, exc: BaseException | None) -> None:
        """The module failed in `what`: log why, then it exits."""
        if exc is not None:
            self._log_traceback(exc)
            line = f"{what} raised: {_one_line(exc)}"
        else:
            line = f"{what}: module stopped with an error"
        self.b.log(self.name, "err", line)
        self.exit(line)
        notices.notice(f"{self.name}: {line}; module exited (see flux dmesg)")

    def exit(self, line: str) -> None:
        """Unload, as the broker unloads a module whose reactor failed."""
        self.exited = True
        self.b.log("broker", "err", f"module {self.name} exited with error: {line}")
        self.b.scheduler_exited(self)
        self.b.kvs.delete(MODULE_KEY)
        schedstate.discard(self.b.kvs)

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            out = fn(*args)
        except FluxLiteError:
            raise  # an error response the module chose (respond_error)
        except Exception as exc:
            self._fail(what, exc)
            raise rfc27.error(rfc27.ENOSYS, f"{self.name}: module exited") from None
        if self.module.stopped:
            self._fail(what, None)
            raise rfc27.error(rfc27.ENOSYS, f"{self.name}: module exited")
        return out

    # -- the broker's side ----------------------------------------------------------

    def handle(self, topic: str, msg: dict, cred: rfc27.Cred | None = None) -> Any:
        if not self.attached:
            self.attach()
            if topic in _REQUEUED:
                return None  # addressed to the previous instance, like those attach() dropped
        if self.exited:
            raise rfc27.error(rfc27.ENOSYS, f"{topic}: service is not loaded")
        if topic == rfc27.SCHED_DEBUG:
            if "flags" in msg:
                self.set_debug(msg["flags"])
            return {"flags": self.debug_flags}
        if topic == rfc27.SCHED_ALLOCATIONS:
            return {"allocations": dict(self.allocs)}
        if topic == rfc27.SCHED_RESOURCE_STATUS:
            return {"allocated": self.allocated()}
        if topic == rfc27.SCHED_EXPIRATION_PREVIEW:
            raise rfc27.error(rfc27.ENOSYS, f"{self.name} cannot preview expiration updates")
        if topic == rfc27.SCHED_STATS:
            topic = f"{self.name}.stats-get"
        elif topic == rfc27.SCHED_RESOURCE_UPDATE:
            # flux-lite sends the ranks down now; acquire's updates say both
            update = {k: v for k, v in msg.items() if k == "expiration"}
            if "down" in msg:
                ranks = self.b.resources.rset.ranks
                down = IDset.parse(msg["down"]) & ranks
                update["up"] = str(ranks - down)
                update["down"] = str(down)
            return self._call(topic, self.module.deliver, "resource.acquire", update)
        elif topic == rfc27.SCHED_ALLOC:
            self.open.add(msg["id"])
        elif topic == rfc27.SCHED_FREE:
            if msg["id"] not in self.allocs:
                return None  # not an allocation this instance holds (hello did not report it)
            self._freed(msg)
        elif topic == rfc27.SCHED_CANCEL and msg["id"] not in self.open:
            return None
        if topic in _MESSAGES:
            try:
                self._call(topic, self.module.deliver, topic, msg)
            except FluxLiteError:
                pass  # a message has no one to answer: the module's failure is logged
            return None
        return self._call(topic, self.module.deliver, topic, msg)

    @property
    def needs_pass(self) -> bool:
        return self.module is not None and not self.exited and self.module.needs_pass

    def run_pass(self) -> None:
        self.passes += 1
        try:
            self._call("schedule", self.module.run_pass)
        except FluxLiteError:
            return
        self.needs_forecast = True

    def forecast(self) -> None:
        if self.module is None or self.exited:
            return
        try:
            self._call("forecast", self.module.forecast)
        except FluxLiteError:
            pass

    def timer(self, what: str, jobid: int | None, arg: Any) -> None:
        pass  # a hosted module sets no timers of the broker's

    def save(self) -> None:
        if self.dirty and not self.exited:
            # no "version": the resource module finds no pool rows to read here
            self.b.kvs.put(STATE_KEY, {"hosted": True, "debug": self.debug_flags})
            self.dirty = False

    def set_debug(self, flags: int) -> None:
        self.debug_flags = flags
        self.dirty = True

    def stats(self) -> dict:
        return {"pending_jobs": len(self.open), "allocated_jobs": len(self.allocs)}

    # -- what the instance asks of a scheduler, kept here ----------------------------

    def acquire(self) -> dict:
        """resource.acquire's first response: the instance's resources, which ranks are up."""
        res = self.b.resources
        rset = res.rset
        down = res.down_ranks() & rset.ranks
        out: dict[str, Any] = {"resources": rset.to_dict(), "up": str(rset.ranks - down)}
        if down:
            out["down"] = str(down)
        expiration = res.instance_R["execution"].get("expiration") or 0.0
        if expiration:
            out["expiration"] = expiration
        return out

    def hello_records(self, records: list[dict]) -> None:
        self.allocs.clear()
        self._taken.clear()
        for rec in records:
            R = rec.get("R") or self.b.kvs.get(kvs_key(rec["id"], "R"))
            if R is None:
                continue
            rset = Rset.from_dict(R)
            if rec.get("free"):
                rset = rset.remove_ranks(IDset.parse(rec["free"]))
            self._hold(rec["id"], rset)

    # what the allocations hold, rank -> (core mask, gpu mask): an R is
    # checked against it without building sets (one check per SUCCESS)
    def _hold(self, jobid: int, rset: Rset) -> None:
        self.allocs[jobid] = rset
        taken = self._taken
        for rank, _host, cores, gpus in rset.nodes():
            cm, gm = taken.get(rank, (0, 0))
            taken[rank] = (cm | cores.as_mask(), gm | gpus.as_mask())

    def _release(self, rset: Rset) -> None:
        taken = self._taken
        for rank, _host, cores, gpus in rset.nodes():
            cm, gm = taken.get(rank, (0, 0))
            taken[rank] = (cm & ~cores.as_mask(), gm & ~gpus.as_mask())

    def _freed(self, msg: dict) -> None:
        jobid = msg["id"]
        held = self.allocs.get(jobid)
        if held is None:
            return
        if msg.get("final"):
            del self.allocs[jobid]
            self._release(held)
        else:
            gone = held.intersection(Rset.from_dict(msg["R"]))
            self.allocs[jobid] = held.difference(gone)
            self._release(gone)

    def allocated(self) -> Rset:
        out = Rset()
        for rset in self.allocs.values():
            out = out.union(rset)
        return out

    def alloc_response(self, jobid: int, response: dict) -> None:
        """Check a response of the module before the job manager sees it."""
        rtype = response.get("type")
        if rtype == rfc27.ANNOTATE:
            if jobid in self.open:
                self.b.send(rfc27.JM_ALLOC_RESPONSE, response)
            return
        if jobid not in self.open:
            self.b.log(self.name, "err", f"alloc response for job {f58(jobid)} dropped: "
                                         "the request was answered already (a second final response)")
            return
        self.open.discard(jobid)
        if rtype == rfc27.SUCCESS:
            rset, problem = self._check_R(response.get("R"))
            if rset is None:
                self.b.log(self.name, "err", f"alloc: job {f58(jobid)}: {problem}: request denied")
                notices.notice(f"{self.name}: job {f58(jobid)}: {problem}")
                response = rfc27.alloc_response(jobid, rfc27.DENY,
                                                note=f"scheduler module {self.name}: {problem}")
            else:
                self._hold(jobid, rset)
        self.b.send(rfc27.JM_ALLOC_RESPONSE, response)

    def _check_R(self, R: Any) -> tuple[Rset | None, str]:
        """(R as an Rset, "") if R can be a job's allocation: resources of
        the instance that no other allocation holds; else (None, why not)."""
        try:
            rset = Rset.from_dict(R)
        except Exception as exc:
            return None, f"invalid R: {_one_line(exc)}"
        if rset.is_empty():
            return None, "invalid R: no resources"
        whole = self.b.resources.rset
        taken = self._taken
        outside = clash = False
        for rank, _host, cores, gpus in rset.nodes():
            cm, gm = cores.as_mask(), gpus.as_mask()
            if rank not in whole or cm & ~whole.cores(rank).as_mask() or gm & ~whole.gpus(rank).as_mask():
                outside = True
            held = taken.get(rank)
            if held is not None and (cm & held[0] or gm & held[1]):
                clash = True
        if outside:
            return None, f"R holds resources the instance does not have ({rset.difference(whole).summary()})"
        if clash:
            return None, f"R holds resources allocated to other jobs ({rset.intersection(self.allocated()).summary()})"
        return rset, ""


def _one_line(exc: BaseException) -> str:
    """The exception in one line, with where the module's own code raised it."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    own = [fr for fr in _module_frames(exc) if not fr.filename.startswith(str(bindings.PATH))]
    if own and not isinstance(exc, SyntaxError):  # (a SyntaxError says where already)
        line += f" ({os.path.basename(own[-1].filename)}:{own[-1].lineno})"
    return line
