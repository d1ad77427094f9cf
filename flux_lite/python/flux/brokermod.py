"""flux.brokermod: Python broker modules (Flux's BrokerModule API).

A module is a file loaded with ``flux module load PATH.py [ARGS]`` and
entered through ``mod_main(h, *args)`` (or, without one, its only
:class:`BrokerModule` subclass). flux-lite's broker hosts it in the command
that needs it (flux_lite/sched/hosted.py): the handle ``h`` given to
``mod_main`` is connected to the broker, ``run()`` returns once the module is
set up, and the broker then calls the module's handlers for each message it
delivers. Importing this module installs :func:`host_module` as the broker's
way of running a module file (hosted.register_host).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import errno
import json
import sys
import syslog
import time as _real_time
import types
from collections.abc import Callable, Iterator
from typing import Any

import flux.constants as constants
import flux.kvs
from flux.core.handle import Flux
from flux.future import Future
from flux.rpc import _payload
from flux_lite import protocol as rfc27
from flux_lite.errors import FluxLiteError
from flux_lite.sched import hosted

_LEVEL_WORDS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")


class BrokerLogger:
    """A module's logger: lines go to the instance log (flux dmesg) under the
    module's name. ``level`` is a threshold (a syslog number, or a name when
    set); ``log(level, msg)`` and one method per level."""

    LEVEL_NAMES = {name: getattr(syslog, f"LOG_{name.upper()}") for name in _LEVEL_WORDS}
    _NAMES_BY_LEVEL = {v: k for k, v in LEVEL_NAMES.items()}

    def __init__(self, h: Any) -> None:
        self._h = h
        self._level = syslog.LOG_DEBUG  # everything passes until a module sets a level

    @property
    def level(self) -> int:
        return self._level

    @level.setter
    def level(self, value: int | str) -> None:
        if isinstance(value, str):
            if value.lower() not in self.LEVEL_NAMES:
                raise ValueError(f"invalid log level {value!r}: expected one of {', '.join(self.LEVEL_NAMES)}")
            self._level = self.LEVEL_NAMES[value.lower()]
            return
        try:
            self._level = int(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"invalid log level {value!r}") from exc

    @property
    def level_name(self) -> str:
        return self._NAMES_BY_LEVEL.get(self._level, str(self._level))

    def __call__(self, level: int, msg: str) -> None:
        if level <= self._level:
            self._h.log(level, msg)

    def debug(self, msg: str) -> None:
        self(syslog.LOG_DEBUG, msg)

    def info(self, msg: str) -> None:
        self(syslog.LOG_INFO, msg)

    def notice(self, msg: str) -> None:
        self(syslog.LOG_NOTICE, msg)

    def warning(self, msg: str) -> None:
        self(syslog.LOG_WARNING, msg)

    def error(self, msg: str) -> None:
        self(syslog.LOG_ERR, msg)

    def critical(self, msg: str) -> None:
        self(syslog.LOG_CRIT, msg)

    def alert(self, msg: str) -> None:
        self(syslog.LOG_ALERT, msg)

    def emerg(self, msg: str) -> None:
        self(syslog.LOG_EMERG, msg)


def request_handler(topic: str, prefix: bool = True, allow_guest: bool = False) -> Callable:
    """Mark a method as the handler of requests to ``<module name>.<topic>``
    (``topic`` itself with prefix=False); it is called with the message."""

    def mark(func: Callable) -> Callable:
        func._flux_handler = {"topic": topic, "prefix": prefix, "allow_guest": allow_guest}  # type: ignore[attr-defined]
        return func

    return mark


class Message:
    """A message delivered to a handler: ``topic`` and ``payload`` (a dict)."""

    __slots__ = ("topic", "payload", "response", "error", "answered")

    def __init__(self, topic: str, payload: dict) -> None:
        self.topic = topic
        self.payload = payload
        self.response: Any = None
        self.error: tuple[int, str] | None = None
        self.answered = False

    @property
    def payload_str(self) -> str:
        return json.dumps(self.payload)


class _Done(Future):
    """A request the broker answers at once (service registration)."""

    def __init__(self, flux_handle: Any, value: Any = None) -> None:
        super().__init__(flux_handle, lambda: value)


class ModuleHandle(Flux):
    """The handle a hosted module gets: requests go to the broker hosting it,
    responses to the messages it handles go back the same way, and its
    reactor is the broker's (``reactor_run`` returns at once)."""

    def __init__(self, endpoint: Any) -> None:  # connected: no instance to open
        self.url = None
        self.flags = 0
        self.aux: dict[str, Any] = {}
        self._endpoint = endpoint
        self._instance = None
        self._watched = collections.deque()
        self._stopped = False
        self.stopped_with_error = False
        self.module: BrokerModule | None = None
        self.handlers: dict[str, Callable[[Message], Any]] = {}

    @property
    def handle(self) -> ModuleHandle:
        """What Flux's C calls take (``lib.flux_get_reactor(h.handle)``)."""
        return self

    @property
    def instance(self) -> Any:
        raise OSError(errno.ENOSYS, "a hosted module reaches the instance through its broker")

    def reactor_now(self) -> float:
        return self._endpoint.now

    def _call(self, topic: str, payload: dict) -> Any:
        if topic == "kvs.lookup":  # the R of a job, and the like: plain values
            value = self._endpoint.kvs_get(payload["key"])
            return {"key": payload["key"], "val": flux.kvs._val(json.dumps(value).encode())}
        if topic == "kvs.commit":
            for op in payload.get("ops", []):
                dirent = op.get("dirent") or {}
                if dirent.get("type") != "val":
                    raise rfc27.error(errno.ENOSYS, "a hosted module may only put values")
                self._endpoint.kvs_put(op["key"], json.loads(base64.b64decode(dirent["data"])))
            return {}
        return self._endpoint.rpc(topic, payload)

    def _stream(self, topic: str, payload: dict) -> Any:
        return self._endpoint.stream(topic, payload)

    def log(self, level: int, fstring: str, *args: Any) -> None:
        text = fstring % args if args else fstring
        name = _LEVEL_WORDS[level] if 0 <= level < len(_LEVEL_WORDS) else "info"
        self._endpoint.log(name, text)

    def close(self) -> None:
        pass

    # -- responses ----------------------------------------------------------------

    def respond(self, msg: Message, payload: Any = None) -> None:
        """Answer msg. Responses to sched.alloc are a stream (annotations, then
        one final response) carried to the job manager."""
        if msg.topic == rfc27.SCHED_ALLOC:
            self._endpoint.alloc_response(msg.payload["id"], _payload(payload))
            return
        msg.response = payload
        msg.answered = True

    def respond_error(self, msg: Message, errnum: int, errstr: str | None = None) -> None:
        msg.error = (errnum, errstr or "")
        msg.answered = True

    def service_register(self, name: str) -> Future:
        return _Done(self)

    def reactor_run(self, reactor: Any = None, flags: int = 0) -> int:
        """The broker runs the module's work: set-up is over, return."""
        return -1 if self.stopped_with_error else 0

    def reactor_stop_error(self, reactor: Any = None) -> None:
        self._stopped = True
        self.stopped_with_error = True


class BrokerModule:
    """Base of Python broker modules: handlers marked with
    :func:`request_handler` are registered by the constructor; ``run()``
    starts serving. ``self.handle``, ``self.name``, ``self.args``, ``self.log``."""

    def __init__(self, h: Any, *args: str) -> None:
        self._h = h
        self._args = args
        self._name = getattr(getattr(h, "_endpoint", None), "name", "unknown")
        self._stopped_with_error = False
        self.log = BrokerLogger(h)
        if isinstance(h, ModuleHandle):
            h.module = self
        self._register_handlers()

    @property
    def handle(self) -> Any:
        return self._h

    @property
    def name(self) -> str:
        return self._name

    @property
    def args(self) -> tuple[str, ...]:
        return self._args

    def set_running(self) -> None:
        """flux module load may return now (here: it returns once run() does)."""

    def debug_test(self, flag: int, clear: bool = False) -> bool:
        """Is debug bit flag set (``flux module debug --setbit``)? clear: and clear it."""
        return bool(self._h._endpoint.debug_test(flag, clear))

    def stop(self) -> None:
        self._h.reactor_stop()

    def stop_error(self) -> None:
        """End the module with an error (the broker unloads it)."""
        self._stopped_with_error = True
        self._h.reactor_stop_error()

    def run(self) -> None:
        if self._h.reactor_run() < 0 or self._stopped_with_error:
            raise OSError("reactor exited with error")

    def _register_handlers(self) -> None:
        handlers = getattr(self._h, "handlers", None)
        if handlers is None:
            return
        for cls in type(self).__mro__:
            for attr, func in cls.__dict__.items():
                spec = getattr(func, "_flux_handler", None)
                if spec is None:
                    continue
                topic = f"{self._name}.{spec['topic']}" if spec["prefix"] else spec["topic"]
                handlers.setdefault(topic, getattr(self, attr))  # a subclass's handler wins

    # -- what the broker drives (a module without a scheduling loop has none) --------

    def _hosted_needs_pass(self) -> bool:
        return False

    def _hosted_run_pass(self) -> None:
        pass

    def _hosted_forecast(self) -> None:
        pass

    def _hosted_acquire_update(self, data: dict) -> None:
        pass


def resolve_entry_point(mod: Any) -> Callable:
    """mod_main, or (without one) the entry point of the module's only
    BrokerModule subclass; ValueError when there is neither, or several."""
    mod_main = getattr(mod, "mod_main", None)
    if mod_main is not None:
        return mod_main
    classes = [v for v in vars(mod).values()
               if isinstance(v, type) and issubclass(v, BrokerModule) and v.__module__ == mod.__name__]
    if len(classes) == 1:
        cls = classes[0]
        return lambda h, *args: cls(h, *args).run()
    if classes:
        names = ", ".join(c.__name__ for c in classes)
        raise ValueError(f"multiple BrokerModule subclasses found ({names}); define mod_main()")
    raise ValueError("no mod_main() or BrokerModule subclass found")


# the clocks of the hosted modules being run, innermost last (see _sim_time)
_CLOCKS: list[Callable[[], float]] = []


def _now() -> float:
    return _CLOCKS[-1]() if _CLOCKS else _real_time.time()


def _monotonic() -> float:
    return _CLOCKS[-1]() if _CLOCKS else _real_time.monotonic()


# The `time` module a hosted module's code sees: while the broker runs the
# module, its clocks read the instance's virtual clock; otherwise, and for
# every other name, the real module's (looked up when used, so that a test
# patching time.time is seen too).
_SIM_TIME = types.ModuleType("time", "time, on the instance's virtual clock while a hosted module runs")
_SIM_TIME.time = _now  # type: ignore[attr-defined]
_SIM_TIME.monotonic = _monotonic  # type: ignore[attr-defined]
_SIM_TIME.time_ns = lambda: int(_now() * 1e9)  # type: ignore[attr-defined]
_SIM_TIME.__getattr__ = lambda name: getattr(_real_time, name)  # type: ignore[attr-defined]


@contextlib.contextmanager
def _sim_time(clock: Callable[[], float]) -> Iterator[None]:
    _CLOCKS.append(clock)
    try:
        yield
    finally:
        _CLOCKS.pop()


def _patch_time(glb: dict) -> None:
    if glb is globals():
        return  # (this module keeps the real clock it reads between runs)
    for key, value in list(glb.items()):
        if value is _real_time:
            glb[key] = _SIM_TIME


def _use_sim_time(module: BrokerModule) -> None:
    """A simulation runs in simulated time: the code of the module (its file
    and those it took its classes from), of its pool's classes, and of the
    flux.resource pools (which stamp end times with time.time(), as Flux's
    do) reads the virtual clock through `time` while the broker runs it."""
    classes = list(type(module).__mro__)
    pool = getattr(module, "_resources", None)
    if pool is not None:
        classes += list(type(pool).__mro__) + list(type(getattr(pool, "impl", pool)).__mro__)
    for cls in classes:
        for func in cls.__dict__.values():
            glb = getattr(func, "__globals__", None)
            if glb is not None:
                _patch_time(glb)
    for name, mod in list(sys.modules.items()):
        if name.startswith("flux.resource.") and mod is not None:
            _patch_time(vars(mod))


class _Running:
    """A module the broker drives (hosted.register_host's contract)."""

    def __init__(self, h: ModuleHandle) -> None:
        self.h = h

    @property
    def stopped(self) -> bool:
        return self.h.stopped_with_error

    @property
    def needs_pass(self) -> bool:
        mod = self.h.module
        return mod is not None and mod._hosted_needs_pass()

    def run_pass(self) -> None:
        if self.h.module is not None:
            with _sim_time(self.h.reactor_now):
                self.h.module._hosted_run_pass()

    def forecast(self) -> None:
        if self.h.module is not None:
            with _sim_time(self.h.reactor_now):
                self.h.module._hosted_forecast()

    def deliver(self, topic: str, payload: dict) -> Any:
        with _sim_time(self.h.reactor_now):
            return self._deliver(topic, payload)

    def _deliver(self, topic: str, payload: dict) -> Any:
        if topic == "resource.acquire":  # an update of the acquired resources
            if self.h.module is not None:
                self.h.module._hosted_acquire_update(payload)
            return {}
        handler = self.h.handlers.get(topic)
        if handler is None:
            raise FluxLiteError(f"{topic}: unknown method", errno=errno.ENOSYS)
        msg = Message(topic, payload)
        handler(msg)
        if msg.error is not None:
            raise FluxLiteError(msg.error[1] or errno.errorcode.get(msg.error[0], ""), errno=msg.error[0])
        if msg.answered:
            return {} if msg.response is None else _payload(msg.response)
        return None


def host_module(endpoint: Any, mod: Any, args: list[str]) -> _Running:
    """Run a loaded module file's entry point with a handle on endpoint."""
    entry = resolve_entry_point(mod)
    h = ModuleHandle(endpoint)
    running = _Running(h)
    with _sim_time(h.reactor_now):
        entry(h, *args)
    if h.module is not None:
        _use_sim_time(h.module)
    return running


hosted.register_host(host_module)

__all__ = ["BrokerLogger", "BrokerModule", "ModuleHandle", "request_handler", "resolve_entry_point",
           "constants"]
