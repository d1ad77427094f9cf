"""The broker's local socket: what libflux's `local://` connector talks to.

Programs linked against Flux's own libflux (flux-core's test programs,
anything calling flux_open) reach a broker through FLUX_URI, a UNIX socket
(`local:///path/to/socket`). flux-lite has no broker process, so `flux-lite
start COMMAND` runs a `Server` in a thread for as long as COMMAND runs: it
accepts connections, answers requests by topic from the services table
(the one flux-lite's own `flux` package reaches), each request one session
of the instance, as every CLI command is.

The wire, as libflux writes it (written from reading flux-core, not copied):

* on connect the server writes one byte: 0 to accept, an errno to refuse;
  the client sends nothing first;
* each message then is an 8-byte header, IOBUF_MAGIC in the host's byte
  order and the length of what follows in network order, then the message:
  a run of frames, each a length (one byte under 255, else 0xff and four
  bytes in network order) and that many bytes. The frames are the routes
  and an empty delimiter (with FLAG_ROUTE), the topic (FLAG_TOPIC), the
  payload (FLAG_PAYLOAD: a JSON text ends with a NUL) and last the 20-byte
  RFC 3 PROTO frame: magic 0x8e, version 1, type, flags, then userid,
  rolemask, aux1 (a request's nodeid, a response's errnum) and aux2 (the
  matchtag) as 32-bit network-order integers.

A response copies the request's topic, matchtag and flags (less payload and
noresponse), with errnum in aux1 and an error text as its payload; a stream
ends with ENODATA, as Flux's streaming services end theirs. A client whose
bytes do not parse is disconnected; nothing it sends stops the server.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import queue
import selectors
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flux_lite import services
from flux_lite.access import ROLE_OWNER, Identity
from flux_lite.errors import FluxLiteError
from flux_lite.instance import SOCKET_NAME, Instance, socket_path

# -- the wire ------------------------------------------------------------------

IOBUF_MAGIC = 0xFFEE0012
PROTO_MAGIC = 0x8E
PROTO_VERSION = 1
PROTO_SIZE = 20

REQUEST, RESPONSE, EVENT, CONTROL = 0x01, 0x02, 0x04, 0x08

FLAG_TOPIC = 0x01
FLAG_PAYLOAD = 0x02
FLAG_NORESPONSE = 0x04
FLAG_ROUTE = 0x08
FLAG_UPSTREAM = 0x10
FLAG_PRIVATE = 0x20
FLAG_STREAMING = 0x40
FLAG_USER1 = 0x80

USERID_UNKNOWN = 0xFFFFFFFF
ROLE_NONE = 0
ROLE_LOCAL = 4  # the broker adds it to what comes through its local socket
NODEID_ANY = 0xFFFFFFFF

# a message larger than this is no client's: its connection is closed
MAX_MESSAGE = 1 << 30
# the longest path a UNIX socket may have (sun_path, less its NUL)
MAX_SOCKET_PATH = 107

_MAGIC = struct.Struct("=I")  # the header's magic: host byte order
_SIZE = struct.Struct("!I")  # the header's size: network byte order
HEADER_SIZE = 8
_PROTO = struct.Struct("!BBBBIIII")


class ProtocolError(ValueError):
    """Bytes that are no Flux message."""


@dataclass
class Message:
    """One RFC 3 message."""

    type: int
    flags: int = 0
    userid: int = USERID_UNKNOWN
    rolemask: int = ROLE_NONE
    aux1: int = 0  # nodeid (request), errnum (response), sequence (event)
    aux2: int = 0  # matchtag
    topic: str | None = None
    payload: bytes | None = None
    routes: list[bytes] = field(default_factory=list)

    @property
    def matchtag(self) -> int:
        return self.aux2

    @property
    def errnum(self) -> int:
        return self.aux1

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)

    def json(self) -> Any:
        """The payload as JSON (None without one); ProtocolError unless it is
        a NUL-terminated JSON text, as flux_msg_get_string wants it."""
        if self.payload is None:
            return None
        if not self.payload.endswith(b"\0"):
            raise ProtocolError("payload is not a string")
        try:
            return json.loads(self.payload[:-1].decode())
        except (ValueError, UnicodeDecodeError):
            raise ProtocolError("payload is not JSON") from None

    def error_text(self) -> str | None:
        """An error response's text, if it has one."""
        if self.payload is None or not self.payload.endswith(b"\0"):
            return None
        return self.payload[:-1].decode(errors="replace")


def json_payload(value: Any) -> bytes:
    """A JSON value as a payload: compact text and its NUL."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\0"


def _frame(data: bytes) -> bytes:
    n = len(data)
    return (bytes([n]) if n < 0xFF else b"\xff" + struct.pack("!I", n)) + data


def encode(msg: Message) -> bytes:
    """The bytes of msg on the socket, header included."""
    flags = msg.flags & ~(FLAG_TOPIC | FLAG_PAYLOAD)
    frames = []
    if msg.has(FLAG_ROUTE):
        frames += [_frame(r) for r in msg.routes] + [_frame(b"")]
    if msg.topic is not None:
        flags |= FLAG_TOPIC
        frames.append(_frame(msg.topic.encode()))
    if msg.payload is not None:
        flags |= FLAG_PAYLOAD
        frames.append(_frame(msg.payload))
    frames.append(_frame(_PROTO.pack(PROTO_MAGIC, PROTO_VERSION, msg.type, flags, msg.userid, msg.rolemask,
                                     msg.aux1, msg.aux2)))
    body = b"".join(frames)
    return _MAGIC.pack(IOBUF_MAGIC) + _SIZE.pack(len(body)) + body


def decode(body: bytes) -> Message:
    """The message in body (the bytes after the header); ProtocolError if malformed."""
    frames = []
    pos, size = 0, len(body)
    while pos < size:
        n = body[pos]
        pos += 1
        if n == 0xFF:
            if size - pos < 4:
                raise ProtocolError("truncated frame length")
            (n,) = struct.unpack_from("!I", body, pos)
            pos += 4
        if size - pos < n:
            raise ProtocolError("truncated frame")
        frames.append(body[pos:pos + n])
        pos += n
    if not frames or len(frames[-1]) != PROTO_SIZE:
        raise ProtocolError("no PROTO frame")
    magic, version, mtype, flags, userid, rolemask, aux1, aux2 = _PROTO.unpack(frames[-1])
    if magic != PROTO_MAGIC or version != PROTO_VERSION:
        raise ProtocolError("bad PROTO magic or version")
    if mtype not in (REQUEST, RESPONSE, EVENT, CONTROL):
        raise ProtocolError("bad message type")
    msg = Message(mtype, flags, userid, rolemask, aux1, aux2)
    rest = frames[:-1]
    i = 0
    if flags & FLAG_ROUTE:
        while i < len(rest) and rest[i]:
            msg.routes.append(rest[i])
            i += 1
        i += 1  # the delimiter
    try:
        if flags & FLAG_TOPIC:
            msg.topic = rest[i].decode()
            i += 1
        if flags & FLAG_PAYLOAD:
            msg.payload = rest[i]
            i += 1
    except IndexError:
        raise ProtocolError("missing frame") from None
    except UnicodeDecodeError:
        raise ProtocolError("topic is not UTF-8") from None
    if i != len(rest):
        raise ProtocolError("unexpected frames")
    return msg


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    """n bytes, or None at end of file before the first; ProtocolError at
    end of file inside them."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError("connection closed inside a message")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_message(sock: socket.socket) -> Message | None:
    """The next message from sock, None at end of file; ProtocolError if malformed."""
    header = _recv_exactly(sock, HEADER_SIZE)
    if header is None:
        return None
    (magic,), (size,) = _MAGIC.unpack_from(header), _SIZE.unpack_from(header, 4)
    if magic != IOBUF_MAGIC:
        raise ProtocolError("bad message magic")
    if size > MAX_MESSAGE:
        raise ProtocolError("message too large")
    body = _recv_exactly(sock, size) if size else b""
    if body is None:
        raise ProtocolError("connection closed inside a message")
    return decode(body)


def response_to(request: Message, payload: Any = None, errnum: int = 0, errstr: str | None = None) -> Message:
    """The response to request (flux_response_derive): its topic, matchtag,
    routes, flags and credentials, a JSON payload, or errnum and an error
    text. As from Flux's broker, it is routed (the broker's hop popped: an
    empty route stack) and carries the requester's credentials."""
    keep = FLAG_UPSTREAM | FLAG_PRIVATE | FLAG_STREAMING | FLAG_USER1
    msg = Message(RESPONSE, request.flags & keep | FLAG_ROUTE, request.userid, request.rolemask, errnum,
                  request.matchtag, request.topic, None, list(request.routes))
    if errnum:
        if errstr:
            msg.payload = errstr.encode() + b"\0"
    elif payload is not None:
        msg.payload = json_payload(payload)
    return msg


# -- the server -------------------------------------------------------------------

# broker-internal requests libflux sends by itself, answered here: event
# subscriptions (flux-lite publishes no events on the socket)
_ACCEPTED = frozenset({"event.subscribe", "event.unsubscribe"})

# a streaming request's cancel topic -> the topic it cancels; its payload
# names the stream by matchtag, and the stream ends with ENODATA
_CANCELS = {"kvs-watch.cancel": "kvs-watch.lookup", "job-info.eventlog-watch-cancel": "job-info.eventlog-watch",
            "job-info.update-watch-cancel": "job-info.update-watch"}


def _guarded(target: Callable[..., None], on_error: Callable[[], None]) -> Callable[..., None]:
    """A thread's target that never ends in a traceback: an unexpected
    error ends what the thread served (on_error: its connection), not the
    server, and prints nothing."""

    def run(*args: Any) -> None:
        try:
            target(*args)
        except Exception:
            on_error()

    return run


def _collect() -> None:
    """After a request: the console script runs with the cyclic collector off
    (a command is short), but `flux-lite start` serves requests for as long
    as COMMAND runs, and each leaves a broker whose parts point at each other."""
    if not gc.isenabled():
        gc.collect(1)


def _error_of(exc: BaseException) -> tuple[int, str | None]:
    """(errnum, error text) of a failed request."""
    if isinstance(exc, FluxLiteError):
        num = exc.errno or errno.EINVAL
        text: str | None = exc.message
    elif isinstance(exc, OSError):
        num = exc.errno or errno.EIO
        text = exc.strerror
    else:
        num, text = errno.EINVAL, str(exc) or type(exc).__name__
    if text == os.strerror(num):
        text = None  # (Flux's client says strerror without one)
    return num, text


class _Connection:
    """One client: a reader thread, a worker serving its requests in order,
    and a thread for each stream or waiting request."""

    def __init__(self, server: Server, sock: socket.socket, uid: int) -> None:
        self.server = server
        self.sock = sock
        self.uid = uid
        self.rolemask = ROLE_OWNER | ROLE_LOCAL
        self._send_lock = threading.Lock()
        self._queue: queue.Queue[Message | None] = queue.Queue()
        self._streams: dict[int, tuple[str, threading.Event]] = {}  # matchtag -> (topic, its cancel)
        self._lock = threading.Lock()
        self._threads: list[tuple[threading.Thread, threading.Event]] = []  # (a stream's or a wait's, its cancel)
        self.closed = threading.Event()
        self.reader = threading.Thread(target=_guarded(self._read, self.shutdown), name="flux-lite-conn",
                                       daemon=True)
        self.worker = threading.Thread(target=_guarded(self._work, self.shutdown), name="flux-lite-worker",
                                       daemon=True)

    def start(self) -> None:
        self.reader.start()
        self.worker.start()

    # -- sending ------------------------------------------------------------

    def send(self, msg: Message) -> bool:
        data = encode(msg)
        with self._send_lock:
            if self.closed.is_set():
                return False
            try:
                self.sock.sendall(data)
            except OSError:
                self.shutdown()
                return False
        return True

    def respond(self, request: Message, payload: Any = None, errnum: int = 0, errstr: str | None = None) -> bool:
        if request.has(FLAG_NORESPONSE):
            return True
        try:
            response = response_to(request, payload, errnum, errstr)
        except (TypeError, ValueError):  # (a service's answer that is no JSON: never expected)
            response = response_to(request, errnum=errno.EPROTO, errstr="response is not JSON")
        return self.send(response)

    # -- reading --------------------------------------------------------------

    def _read(self) -> None:
        try:
            while not self.closed.is_set():
                try:
                    msg = read_message(self.sock)
                except (ProtocolError, OSError):
                    break  # a client that speaks no Flux is disconnected
                if msg is None:
                    break
                if msg.type == REQUEST:
                    try:
                        self._dispatch(msg)
                    except Exception as exc:  # (no thread to serve it, ...): that request fails
                        num, text = _error_of(exc)
                        self.respond(msg, errnum=num, errstr=text)
                # (responses, events and control messages from a client go nowhere)
        finally:
            self.shutdown()
            self._queue.put(None)

    def _credentials(self, msg: Message) -> None:
        """The requester, as the broker's auth sets it: an owner's message
        keeps the credentials it carries (FLUX_HANDLE_USERID, ...)."""
        if msg.userid == USERID_UNKNOWN:
            msg.userid = self.uid
        if msg.rolemask == ROLE_NONE:
            msg.rolemask = self.rolemask

    def _dispatch(self, msg: Message) -> None:
        self._credentials(msg)
        topic = msg.topic or ""
        if topic in _ACCEPTED:
            self.respond(msg, {})
            return
        if topic in _CANCELS:
            self._cancel(msg)
            return
        try:
            svc = services.lookup(topic)
        except FluxLiteError:
            self.respond(msg, errnum=errno.ENOSYS, errstr=f"No service matching {topic} is registered")
            return
        if svc.streaming and not msg.has(FLAG_STREAMING):
            name = topic.split(".", 1)[-1]
            self.respond(msg, errnum=errno.EPROTO, errstr=f"{name} request rejected without streaming RPC flag")
        elif svc.streaming or msg.has(FLAG_STREAMING) and svc.streamed is not None:
            cancel = threading.Event()
            with self._lock:
                self._streams[msg.matchtag] = (topic, cancel)
            self._spawn(self._stream, msg, cancel)
        elif svc.waits:
            # (in a thread of its own, so that the connection's other requests go on)
            self._spawn(self._wait, msg, threading.Event())
        else:
            self._queue.put(msg)

    def _cancel(self, msg: Message) -> None:
        try:
            payload = msg.json()
        except ProtocolError:
            payload = None
        tag = payload.get("matchtag") if isinstance(payload, dict) else None
        if not isinstance(tag, int) or isinstance(tag, bool):
            self.respond(msg, errnum=errno.EPROTO)
            return
        with self._lock:
            stream = self._streams.get(tag)
        if stream is not None and stream[0] == _CANCELS[msg.topic or ""]:
            stream[1].set()
        self.respond(msg, {})

    def _spawn(self, target: Callable[[Message, threading.Event], None], msg: Message,
               cancel: threading.Event) -> None:
        thread = threading.Thread(target=_guarded(target, self.shutdown), args=(msg, cancel),
                                  name="flux-lite-stream", daemon=True)
        with self._lock:
            self._threads = [(t, c) for t, c in self._threads if t.is_alive()]
            self._threads.append((thread, cancel))
            if self.closed.is_set():
                cancel.set()
        thread.start()

    # -- serving ----------------------------------------------------------------

    def _work(self) -> None:
        with self.server.instance() as instance:
            while True:
                msg = self._queue.get()
                if msg is None or self.closed.is_set():
                    return
                self._serve_one(instance, msg)

    def _prepare(self, instance: Instance | None, msg: Message) -> tuple[Instance, str, dict]:
        """(instance, topic, payload) of a request, the instance acting for
        its sender; ProtocolError if its payload is no JSON object."""
        if instance is None:
            raise self.server.open_error or FluxLiteError("no instance", errno=errno.ENOENT)
        payload = msg.json()
        if payload is not None and not isinstance(payload, dict):
            raise ProtocolError("payload is not an object")
        instance.identity = self.server.identity(instance, msg)
        return instance, msg.topic or "", payload or {}

    def _serve_one(self, instance: Instance | None, msg: Message) -> None:
        try:
            result = services.call(*self._prepare(instance, msg))
        except ProtocolError:
            self.respond(msg, errnum=errno.EPROTO)
        except Exception as exc:  # every failure is the client's error response
            self.respond(msg, errnum=_error_of(exc)[0], errstr=_error_of(exc)[1])
        else:
            self.respond(msg, result)
        finally:
            _collect()

    def _wait(self, msg: Message, cancel: threading.Event) -> None:
        with self.server.instance(cancel) as instance:
            self._serve_one(instance, msg)

    def _stream(self, msg: Message, cancel: threading.Event) -> None:
        try:
            with self.server.instance(cancel) as instance:
                try:
                    responses: Iterator[Any] = services.stream(*self._prepare(instance, msg))
                    for response in responses:
                        if cancel.is_set() or not self.respond(msg, response):
                            break
                    self.respond(msg, errnum=errno.ENODATA)
                except ProtocolError:
                    self.respond(msg, errnum=errno.EPROTO)
                except Exception as exc:  # the stream ends with the client's error response
                    num, text = _error_of(exc)
                    self.respond(msg, errnum=num, errstr=None if num == errno.ENODATA else text)
        finally:
            with self._lock:
                self._streams.pop(msg.matchtag, None)
            _collect()

    # -- ending -------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop serving: the socket is shut, every stream told to end."""
        if self.closed.is_set():
            return
        self.closed.set()
        with self._lock:
            for _thread, cancel in self._threads:
                cancel.set()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def join(self, timeout: float | None = None) -> None:
        self.reader.join(timeout)
        self.worker.join(timeout)
        with self._lock:
            threads = [t for t, _ in self._threads]
        for thread in threads:
            thread.join(timeout)
        with contextlib.suppress(OSError):
            self.sock.close()


class Server:
    """The local socket of the instance in state_dir, served in threads.

    `start()` binds and listens (the socket is the owner's alone), `close()`
    disconnects every client, ends their streams, joins every thread and
    removes the socket. Usable as a context manager.
    """

    def __init__(self, path: str | os.PathLike, state_dir: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self.state_dir = os.fspath(state_dir)
        self._own_dir: str | None = None  # a directory made for the socket, removed with it
        self.open_error: FluxLiteError | None = None
        self._listener: socket.socket | None = None
        self._selector: selectors.BaseSelector | None = None
        self._wake_r, self._wake_w = -1, -1
        self._thread: threading.Thread | None = None
        self._connections: list[_Connection] = []
        self._lock = threading.Lock()
        self._stopping = False
        self._owner: int | None = None

    @property
    def uri(self) -> str:
        return f"local://{self.path}"

    @classmethod
    def of_instance(cls, state_dir: str | os.PathLike) -> Server:
        """The server of the instance in state_dir, its socket there (local-0),
        or, when that path is too long for a UNIX socket, in a directory of
        its own under /tmp (the instance's commands find it by
        FLUX_LITE_STATE_DIR all the same)."""
        path = os.fspath(socket_path(state_dir))
        own = None
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            own = tempfile.mkdtemp(prefix="flux-lite-", dir="/tmp")
            path = os.path.join(own, SOCKET_NAME)
        server = cls(path, state_dir)
        server._own_dir = own
        return server

    def start(self) -> Server:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a socket left by a process that is gone
        inst = Instance.open(self.state_dir)
        try:
            self._owner = inst.owner
        finally:
            inst.close()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.path)
            os.chmod(self.path, 0o700)
            listener.listen(64)
        except OSError as exc:
            listener.close()
            self._remove_own_dir()
            raise FluxLiteError(f"{self.path}: cannot listen: {exc.strerror or exc}") from None
        self._listener = listener
        self._wake_r, self._wake_w = os.pipe()
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._thread = threading.Thread(target=_guarded(self._accept_loop, lambda: None), name="flux-lite-socket",
                                        daemon=True)
        self._thread.start()
        return self

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def instance(self, cancel: threading.Event | None = None) -> Iterator[Instance | None]:
        """The instance, opened for one thread (SQLite connections are per
        thread); its waits end when cancel is set. None if it cannot be opened."""
        try:
            inst = Instance.open(self.state_dir)
        except Exception as exc:  # (the requests are answered with it)
            self.open_error = exc if isinstance(exc, FluxLiteError) else FluxLiteError(str(exc), errno=errno.EIO)
            yield None
            return
        inst.cancel = cancel
        try:
            yield inst
        finally:
            inst.close()

    def identity(self, instance: Instance, msg: Message) -> Identity:
        """Who sent msg, as the instance's access rules know it."""
        return Identity.given(instance.owner, msg.userid, msg.rolemask)

    def _accept_loop(self) -> None:
        assert self._selector is not None and self._listener is not None
        while not self._stopping:
            for key, _ in self._selector.select():
                if key.fileobj is not self._listener:
                    return
                try:
                    sock, _addr = self._listener.accept()
                except OSError:
                    continue
                try:
                    self._welcome(sock)
                except Exception:  # (no thread to serve it: that client is turned away, not the others)
                    sock.close()

    def _welcome(self, sock: socket.socket) -> None:
        """The handshake: 0 to a client the owner runs, EPERM to anyone else."""
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", creds)
            if uid != self._owner:
                sock.sendall(bytes([errno.EPERM]))
                sock.close()
                return
            sock.sendall(b"\0")
        except OSError:
            sock.close()
            return
        conn = _Connection(self, sock, uid)
        with self._lock:
            if self._stopping:
                sock.close()
                return
            self._connections = [c for c in self._connections if not c.closed.is_set()]
            self._connections.append(conn)
        conn.start()

    def close(self) -> None:
        if self._thread is None:
            return
        self._stopping = True
        os.write(self._wake_w, b"x")
        self._thread.join()
        self._thread = None
        with self._lock:
            connections = list(self._connections)
            self._connections = []
        for conn in connections:
            conn.shutdown()
        for conn in connections:
            conn.join()
        assert self._selector is not None and self._listener is not None
        self._selector.close()
        self._listener.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self._remove_own_dir()

    def _remove_own_dir(self) -> None:
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)
            self._own_dir = None
