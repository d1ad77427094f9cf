"""The broker socket (flux_lite/connector.py), spoken to as libflux's local
connector speaks: the handshake byte, RFC 3 messages in their frames,
responses, errors, ENOSYS, streams and their cancel, concurrent clients, a
client sending garbage; `flux-lite start COMMAND` serving it; and, when a
flux-core build with its test programs is at hand, its `list-jobs`.

The client here is written from RFC 3 and the connector's framing as this
file describes them, not with the server's own encoder.
"""

import errno
import json
import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from flux_lite import services
from flux_lite.connector import Server
from flux_lite.instance import Instance, served_socket, socket_path, state_dir_of_uri

TIMEOUT = 30.0

REQUEST, RESPONSE = 1, 2
TOPIC, PAYLOAD, NORESPONSE, ROUTE, STREAMING = 0x01, 0x02, 0x04, 0x08, 0x40


# -- a client, from the protocol -----------------------------------------------------


def _frame(data):
    if len(data) < 255:
        return bytes([len(data)]) + data
    return b"\xff" + len(data).to_bytes(4, "big") + data


def request_bytes(topic, payload=None, matchtag=1, flags=0, userid=0xFFFFFFFF, rolemask=0, raw=None):
    """A request as flux_rpc sends it: the topic frame, a NUL-terminated JSON
    payload frame, the PROTO frame; after the connector's 8-byte header."""
    flags |= TOPIC
    body = _frame(topic.encode())
    if payload is not None or raw is not None:
        flags |= PAYLOAD
        body += _frame(raw if raw is not None else json.dumps(payload).encode() + b"\0")
    proto = bytes([0x8E, 1, REQUEST, flags]) + b"".join(
        v.to_bytes(4, "big") for v in (userid, rolemask, 0xFFFFFFFF, matchtag))
    body += _frame(proto)
    return struct.pack("=I", 0xFFEE0012) + len(body).to_bytes(4, "big") + body


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.hello = self._read(1)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self, n):
        data = b""
        while len(data) < n:
            ready, _, _ = select.select([self.sock], [], [], TIMEOUT)
            assert ready, "no answer in time"
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def send(self, topic, payload=None, **kw):
        self.sock.sendall(request_bytes(topic, payload, **kw))

    def recv(self):
        """(topic, errnum, matchtag, flags, payload bytes or None)."""
        header = self._read(8)
        assert struct.unpack("=I", header[:4])[0] == 0xFFEE0012
        body = self._read(int.from_bytes(header[4:], "big"))
        frames, pos = [], 0
        while pos < len(body):
            n, pos = body[pos], pos + 1
            if n == 0xFF:
                n, pos = int.from_bytes(body[pos:pos + 4], "big"), pos + 4
            frames.append(body[pos:pos + n])
            pos += n
        proto = frames.pop()
        assert len(proto) == 20 and proto[0] == 0x8E and proto[1] == 1
        mtype, flags = proto[2], proto[3]
        errnum, matchtag = int.from_bytes(proto[12:16], "big"), int.from_bytes(proto[16:20], "big")
        assert mtype == RESPONSE
        if flags & ROUTE:
            while frames[0]:
                frames.pop(0)
            frames.pop(0)
        topic = frames.pop(0).decode() if flags & TOPIC else None
        payload = frames.pop(0) if flags & PAYLOAD else None
        assert not frames
        return topic, errnum, matchtag, flags, payload

    def rpc(self, topic, payload=None, matchtag=1, **kw):
        self.send(topic, payload, matchtag=matchtag, **kw)
        return self.recv()

    def closed_by_server(self):
        ready, _, _ = select.select([self.sock], [], [], TIMEOUT)
        return bool(ready) and self.sock.recv(1) == b""


def value(payload):
    assert payload.endswith(b"\0")
    return json.loads(payload[:-1])


def _flux_threads():
    return [t for t in threading.enumerate() if t.name.startswith("flux-lite-")]


@pytest.fixture
def sockdir():
    # (a UNIX socket path must be short: pytest's tmp_path may not be)
    path = tempfile.mkdtemp(prefix="fl-sock-")
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def server(flux, sockdir):
    srv = Server(sockdir / "local-0", flux.state_dir).start()
    yield srv
    srv.close()
    assert not _flux_threads()
    assert not (sockdir / "local-0").exists()


@pytest.fixture
def real_clock(tmp_path, sockdir):
    """A real-clock instance and its socket: waits there are real waits."""
    from conftest import Flux

    flux = Flux(tmp_path / "real")
    flux("start", "--test-size=2")
    srv = Server(sockdir / "local-0", flux.state_dir).start()
    yield flux, srv
    srv.close()
    assert not _flux_threads()


# -- the handshake and requests ----------------------------------------------------------


def test_handshake_and_a_request(server):
    with Client(server.path) as c:
        assert c.hello == b"\0"
        topic, errnum, tag, flags, payload = c.rpc("attr.get", {"name": "size"}, matchtag=7)
        assert (topic, errnum, tag) == ("attr.get", 0, 7)
        assert value(payload) == {"value": "4", "flags": 0}
        # as Flux's broker sends it: routed (an empty route stack)
        assert flags & ROUTE


def test_the_socket_is_the_owners_alone(server):
    assert os.stat(server.path).st_mode & 0o777 == 0o700
    assert server.uri == f"local://{server.path}"


def test_error_responses_carry_errnum_and_text(server):
    with Client(server.path) as c:
        topic, errnum, tag, _, payload = c.rpc("attr.get", {"name": "nosuch"}, matchtag=3)
        assert (topic, errnum, tag, payload) == ("attr.get", errno.ENOENT, 3, None)
        # a malformed request: EPROTO (no payload, a payload that is no JSON text)
        assert c.rpc("job-list.list-id")[1] == errno.EPROTO
        assert c.rpc("job-list.list-id", raw=b"{not json")[1] == errno.EPROTO
        assert c.rpc("job-list.list-id", raw=b'{"id": 1, "attrs": []}')[1] == errno.EPROTO  # (no NUL)
        assert c.rpc("job-list.list-id", raw=b"[1]\0")[1] == errno.EPROTO
        # a refusal with Flux's words: the text is the payload
        _, errnum, _, _, payload = c.rpc("job-manager.urgency", {"id": 12345, "urgency": 3})
        assert errnum == errno.ENOENT and payload.endswith(b"\0") and len(payload) > 1


def test_unknown_topics_are_enosys(server):
    with Client(server.path) as c:
        topic, errnum, _, _, payload = c.rpc("nosuch.service", {})
        assert (topic, errnum) == ("nosuch.service", errno.ENOSYS)
        assert payload == b"No service matching nosuch.service is registered\0"


def test_event_subscriptions_succeed(server):
    with Client(server.path) as c:
        assert c.rpc("event.subscribe", {"topic": "job-state"})[1] == 0
        assert c.rpc("event.unsubscribe", {"topic": "job-state"})[1] == 0


def test_noresponse_requests_get_none(server, flux):
    flux("queue", "stop")  # (the job stays pending: its urgency may change)
    jobid = flux.submit("-n1", "true")
    with Client(server.path) as c:
        c.send("job-manager.urgency", {"id": int(flux.out("job", "id", jobid)), "urgency": 5}, matchtag=0,
               flags=NORESPONSE)
        # the next answer is the next request's: the first one was served in order, silently
        topic, errnum, tag, _, payload = c.rpc("job-list.list-id", {"id": int(flux.out("job", "id", jobid)),
                                                                    "attrs": ["urgency"]}, matchtag=9)
        assert (topic, errnum, tag) == ("job-list.list-id", 0, 9)
        assert value(payload)["job"]["urgency"] == 5


def test_requests_are_one_transaction_each_and_see_the_cli(server, flux):
    with Client(server.path) as c:
        assert value(c.rpc("job-manager.list", {"max_entries": 0})[4]) == {"jobs": []}
        jobid = int(flux.out("job", "id", flux.submit("-n1", "sleep", "60")))
        jobs = value(c.rpc("job-manager.list", {"max_entries": 0})[4])["jobs"]
        assert [j["id"] for j in jobs] == [jobid]


def test_requester_credentials_decide_access(server, flux):
    flux("queue", "stop")
    jobid = int(flux.out("job", "id", flux.submit("-n1", "sleep", "60")))
    with Client(server.path) as c:
        # an owner's message may carry another user's credentials (FLUX_HANDLE_USERID)
        _, errnum, _, _, _ = c.rpc("job-manager.urgency", {"id": jobid, "urgency": 20},
                                   userid=os.getuid() + 4242, rolemask=2)
        assert errnum == errno.EPERM
        assert c.rpc("job-manager.urgency", {"id": jobid, "urgency": 20})[1] == 0


# -- streams ------------------------------------------------------------------------------


def test_a_stream_ends_with_enodata(server, flux):
    jobid = int(flux.out("job", "id", flux.submit("-n1", "--setattr=exec.test.run_duration=5s", "true")))
    with Client(server.path) as c:
        c.send("job-info.eventlog-watch", {"id": jobid, "path": "eventlog", "flags": 0}, matchtag=4,
               flags=STREAMING)
        names = []
        while True:
            topic, errnum, tag, flags, payload = c.recv()
            assert tag == 4 and flags & STREAMING
            if errnum:
                assert errnum == errno.ENODATA and payload is None
                break
            names.append(json.loads(value(payload)["event"])["name"])
        assert names[0] == "submit" and names[-1] == "clean" and "finish" in names


def test_update_watch_follows_r_and_jobspec_until_the_job_ends(real_clock):
    # (real time: under a virtual clock a watch lets simulated time pass, to the job's end)
    flux, server = real_clock
    jobid = int(flux.out("job", "id", flux.submit("-n1", "-t", "10m", "sleep", "300")))
    start = json.loads(flux.out("job", "info", str(jobid), "R"))["execution"]["starttime"]
    with Client(server.path) as c:
        _, errnum, _, _, payload = c.rpc("job-info.update-lookup", {"id": jobid, "key": "R", "flags": 0})
        assert errnum == 0 and value(payload)["R"]["execution"]["expiration"] == start + 600
        c.send("job-info.update-watch", {"id": jobid, "key": "R", "flags": 0}, matchtag=2, flags=STREAMING)
        c.send("job-info.update-watch", {"id": jobid, "key": "jobspec", "flags": 0}, matchtag=3, flags=STREAMING)
        first = {tag: value(p) for _, _, tag, _, p in (c.recv(), c.recv())}
        assert first[2]["R"]["execution"]["expiration"] == start + 600
        assert first[3]["jobspec"]["attributes"]["system"]["duration"] == 600
        flux("update", str(jobid), "duration=20m")
        flux("cancel", str(jobid))
        got = {2: [], 3: []}
        ended = set()
        while ended != {2, 3}:
            _, errnum, tag, _, payload = c.recv()
            if errnum:
                assert errnum == errno.ENODATA
                ended.add(tag)
            else:
                got[tag].append(value(payload))
        assert [r["R"]["execution"]["expiration"] for r in got[2]] == [start + 1200]
        assert [j["jobspec"]["attributes"]["system"]["duration"] for j in got[3]] == [1200.0]
        # refusals, in job-info's words
        _, errnum, _, _, payload = c.rpc("job-info.update-watch", {"id": jobid, "key": "foo", "flags": 0},
                                         flags=STREAMING)
        assert (errnum, payload) == (errno.EINVAL, b"update-watch unsupported key specified\0")
        _, errnum, _, _, payload = c.rpc("job-info.update-watch", {"id": jobid, "key": "R", "flags": 0})
        assert (errnum, payload) == (errno.EPROTO, b"update-watch request rejected without streaming RPC flag\0")
        _, errnum, _, _, payload = c.rpc("job-info.update-lookup", {"id": jobid, "key": "jobspec", "flags": 0})
        assert (errnum, payload) == (errno.EINVAL, b"update-lookup unsupported key specified\0")


def test_a_streaming_job_list_request_gets_a_job_a_response(server, flux):
    request = {"max_entries": 10, "attrs": ["state"]}
    with Client(server.path) as c:
        assert c.rpc("job-list.list", request, flags=STREAMING)[1] == errno.ENODATA  # (no job: no response)
        ids = [int(flux.out("job", "id", flux.submit("-n1", "sleep", "60"))) for _ in range(3)]
        c.send("job-list.list", request, matchtag=2, flags=STREAMING)
        answers = [c.recv() for _ in range(4)]
        assert [a[1] for a in answers] == [0, 0, 0, errno.ENODATA]
        payloads = [value(a[4]) for a in answers[:3]]
        assert [p.get("version") for p in payloads] == [1, None, None]
        # without the flag: one response, all the jobs, in the same order
        listed = [j["id"] for j in value(c.rpc("job-list.list", request)[4])["jobs"]]
        assert [p["jobs"][0]["id"] for p in payloads] == listed and sorted(listed) == ids
        # a one-response service asked to stream answers once, as Flux's do
        _, errnum, _, flags, payload = c.rpc("attr.get", {"name": "size"}, flags=STREAMING)
        assert errnum == 0 and flags & STREAMING and value(payload)["value"] == "4"
        _, errnum, _, _, payload = c.rpc("job-list.list", {"max_entries": 5, "attrs": ["foo"]}, flags=STREAMING)
        assert errnum == errno.EINVAL and b"foo is not a valid attribute" in payload


def test_an_eventlog_watch_with_initial_sentinel(server, flux):
    jobid = int(flux.out("job", "id", flux.submit("-n1", "--setattr=exec.test.run_duration=5s", "true")))
    before = flux.eventlog(str(jobid))
    with Client(server.path) as c:
        c.send("job-info.eventlog-watch", {"id": jobid, "path": "eventlog", "flags": 2}, matchtag=4,
               flags=STREAMING)
        got = []
        while True:
            _, errnum, _, _, payload = c.recv()
            if errnum:
                assert errnum == errno.ENODATA
                break
            got.append("sentinel" if payload is None else json.loads(value(payload)["event"])["name"])
        # what was there, the sentinel (an empty response), then what came after it
        assert got[:len(before) + 1] == before + ["sentinel"]
        assert got[-1] == "clean" and got.count("sentinel") == 1
        # a job that has ended: its whole eventlog, then the sentinel
        c.send("job-info.eventlog-watch", {"id": jobid, "path": "eventlog", "flags": 2}, matchtag=5,
               flags=STREAMING)
        responses = []
        while not responses or not responses[-1][1]:
            responses.append(c.recv())
        assert [r[4] is None for r in responses[-3:]] == [False, True, True]  # clean, the sentinel, ENODATA
        assert responses[-1][1] == errno.ENODATA
        # an unknown flag: EPROTO, in job-info's words
        _, errnum, _, _, payload = c.rpc("job-info.eventlog-watch", {"id": jobid, "path": "eventlog", "flags": 499},
                                         flags=STREAMING)
        assert (errnum, payload) == (errno.EPROTO, b"eventlog-watch request rejected with invalid flag\0")


def test_a_streaming_service_wants_a_streaming_request(server, flux):
    jobid = int(flux.out("job", "id", flux.submit("-n1", "true")))
    with Client(server.path) as c:
        assert c.rpc("job-info.eventlog-watch", {"id": jobid, "path": "eventlog", "flags": 0})[1] == errno.EPROTO


def test_an_open_stream_blocks_nothing_and_its_cancel_ends_it(real_clock):
    flux, srv = real_clock
    flux("kvs", "put", "test.key=1")
    with Client(srv.path) as watcher, Client(srv.path) as other:
        watcher.send("kvs-watch.lookup", {"key": "test.key", "namespace": "primary", "flags": 4}, matchtag=11,
                     flags=STREAMING)
        assert watcher.recv()[1] == 0  # the value now; the next waits for a change
        # the same connection and another one are served meanwhile
        assert value(watcher.rpc("attr.get", {"name": "size"}, matchtag=12)[4])["value"] == "2"
        assert value(other.rpc("attr.get", {"name": "size"})[4])["value"] == "2"
        # a commit reaches the stream
        flux("kvs", "put", "test.key=2")
        topic, errnum, tag, _, payload = watcher.recv()
        assert (topic, errnum, tag) == ("kvs-watch.lookup", 0, 11)
        # the cancel (a noresponse request naming the stream's matchtag) ends it with ENODATA
        watcher.send("kvs-watch.cancel", {"matchtag": 11}, matchtag=0, flags=NORESPONSE)
        assert watcher.recv()[1:3] == (errno.ENODATA, 11)
        assert other.rpc("attr.get", {"name": "size"})[1] == 0


def test_a_waiting_request_blocks_nothing(real_clock):
    flux, srv = real_clock
    jobid = int(flux.out("job", "id", flux.submit("--flags=waitable", "-n1", "sleep", "600")))
    with Client(srv.path) as c:
        c.send("job-manager.wait", {"id": jobid}, matchtag=5)
        assert c.rpc("attr.get", {"name": "size"}, matchtag=6)[1:3] == (0, 6)
        flux("cancel", str(jobid))
        topic, errnum, tag, _, payload = c.recv()
        assert (topic, errnum, tag) == ("job-manager.wait", 0, 5)
        answer = value(payload)
        assert answer["id"] == jobid and answer["success"] is False


def test_closing_the_server_ends_a_waiting_request(real_clock):
    flux, srv = real_clock
    jobid = int(flux.out("job", "id", flux.submit("--flags=waitable", "-n1", "sleep", "600")))
    with Client(srv.path) as c:
        c.send("job-manager.wait", {"id": jobid}, matchtag=5)
        assert c.rpc("attr.get", {"name": "size"}, matchtag=6)[1] == 0  # (the wait has begun)
        srv.close()  # returns: the wait was told to end (the fixture checks that its thread is gone)
        with pytest.raises(EOFError):
            while True:
                c.recv()


def test_closing_the_server_ends_open_streams_and_clients(real_clock):
    flux, srv = real_clock
    flux("kvs", "put", "test.key=1")
    c = Client(srv.path)
    try:
        c.send("kvs-watch.lookup", {"key": "test.key", "namespace": "primary", "flags": 4}, matchtag=1,
               flags=STREAMING)
        assert c.recv()[1] == 0
        srv.close()  # (the fixture checks that every thread is gone)
        assert not os.path.exists(srv.path)
        with pytest.raises(EOFError):
            while True:
                c.recv()
    finally:
        c.close()


def test_a_client_going_away_ends_its_streams(real_clock):
    flux, srv = real_clock
    flux("kvs", "put", "test.key=1")
    c = Client(srv.path)
    c.send("kvs-watch.lookup", {"key": "test.key", "namespace": "primary", "flags": 4}, matchtag=1,
           flags=STREAMING)
    assert c.recv()[1] == 0
    c.close()
    # the server is still there for others
    with Client(srv.path) as other:
        assert other.rpc("attr.get", {"name": "size"})[1] == 0


# -- concurrency and bad clients ------------------------------------------------------------


def test_two_clients_at_once(server, flux):
    jobid = int(flux.out("job", "id", flux.submit("-n1", "sleep", "60")))
    results = {}

    def ask(name):
        with Client(server.path) as c:
            for tag in range(1, 21):
                c.send("job-list.list-id", {"id": jobid, "attrs": ["state"]}, matchtag=tag)
            results[name] = [c.recv() for _ in range(20)]

    threads = [threading.Thread(target=ask, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    for name in ("a", "b"):
        assert [r[2] for r in results[name]] == list(range(1, 21))
        assert all(r[1] == 0 and value(r[4])["job"]["id"] == jobid for r in results[name])


@pytest.mark.parametrize("garbage", [
    b"hello world, this is no flux message",  # bad magic
    struct.pack("=I", 0xFFEE0012) + (5).to_bytes(4, "big") + b"\x03abc",  # no PROTO frame
    struct.pack("=I", 0xFFEE0012) + (21).to_bytes(4, "big") + b"\x14" + b"\x00" * 20,  # bad PROTO magic
    struct.pack("=I", 0xFFEE0012) + (0x7FFFFFFF).to_bytes(4, "big"),  # far too large
    struct.pack("=I", 0xFFEE0012) + (40).to_bytes(4, "big") + b"\x05ab",  # closed inside a message
    request_bytes("attr.get", {"name": "size"})[:-3],  # truncated, then closed
])
def test_garbage_closes_that_client_only(server, garbage, capfd):
    with Client(server.path) as other:
        with Client(server.path) as bad:
            bad.sock.sendall(garbage)
            bad.sock.shutdown(socket.SHUT_WR)
            assert bad.closed_by_server()
        assert value(other.rpc("attr.get", {"name": "size"})[4])["value"] == "4"
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err


def test_a_frame_with_a_bad_topic_or_type_closes_the_client(server):
    proto = bytes([0x8E, 1, 0x03, TOPIC]) + b"\0" * 16  # type 3: no message type
    body = _frame(b"attr.get") + _frame(proto)
    with Client(server.path) as bad:
        bad.sock.sendall(struct.pack("=I", 0xFFEE0012) + len(body).to_bytes(4, "big") + body)
        assert bad.closed_by_server()
    proto = bytes([0x8E, 1, REQUEST, TOPIC]) + b"\0" * 16
    body = _frame(b"\xff\xfe") + _frame(proto)
    with Client(server.path) as bad:
        bad.sock.sendall(struct.pack("=I", 0xFFEE0012) + len(body).to_bytes(4, "big") + body)
        assert bad.closed_by_server()


# -- the job manager's list -------------------------------------------------------------------


def test_job_manager_list_orders_as_the_job_manager(flux):
    # nothing runs: every job waits in the alloc queue (or is held)
    flux("queue", "stop")
    ids = {}
    for urgency in (16, 20, 0, 31):
        ids[urgency] = int(flux.out("job", "id", flux.submit(f"--urgency={urgency}", "-n1", "true")))
    with Instance.open(flux.state_dir) as inst:
        jobs = services.call(inst, "job-manager.list", {"max_entries": 0})["jobs"]
        assert [j["id"] for j in jobs][:3] == [ids[31], ids[20], ids[16]]
        assert {j["id"] for j in jobs} == set(ids.values())
        held = next(j for j in jobs if j["id"] == ids[0])
        assert held["priority"] == 0 and held["urgency"] == 0 and held["state"] == 8
        assert held["userid"] == os.getuid() and isinstance(held["t_submit"], float)
        assert [j["id"] for j in services.call(inst, "job-manager.list", {"max_entries": 2})["jobs"]] \
            == [ids[31], ids[20]]
        with pytest.raises(Exception) as info:
            services.call(inst, "job-manager.list", {"max_entries": -1})
        assert info.value.errno == errno.EPROTO


def test_job_manager_list_shows_zombies(flux):
    jobid = int(flux.out("job", "id", flux.submit("--flags=waitable", "-n1", "true")))
    flux.advance("1m")
    with Instance.open(flux.state_dir) as inst:
        jobs = services.call(inst, "job-manager.list", {"max_entries": 0})["jobs"]
    assert [(j["id"], j["state"]) for j in jobs] == [(jobid, 64)]
    flux("job", "wait", str(jobid))
    with Instance.open(flux.state_dir) as inst:
        assert services.call(inst, "job-manager.list", {"max_entries": 0})["jobs"] == []


# -- flux-lite start COMMAND and FLUX_URI --------------------------------------------------------


CLIENT_SCRIPT = """
import json, os, socket, struct, sys
sys.path.insert(0, sys.argv[1])
from test_connector import Client
uri = os.environ["FLUX_URI"]
assert uri.startswith("local://"), uri
c = Client(uri[len("local://"):])
print(json.dumps({"uri": uri, "hello": c.hello.hex(),
                  "size": json.loads(c.rpc("attr.get", {"name": "size"})[4][:-1])["value"]}))
"""


def _start(*args, env=None):
    full = dict(os.environ, **(env or {}))
    full.pop("FLUX_URI", None)
    return subprocess.run([sys.executable, "-m", "flux_lite", "start", *args], capture_output=True, text=True,
                          timeout=120, env=full)


def test_start_serves_the_socket_while_command_runs():
    here = str(Path(__file__).parent)
    r = _start("--test-size=3", sys.executable, "-c", CLIENT_SCRIPT, here)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["hello"] == "00" and out["size"] == "3"
    path = out["uri"][len("local://"):]
    assert os.path.basename(path) == "local-0"
    assert not os.path.exists(os.path.dirname(path))  # the instance is gone, and its socket


def test_flux_package_and_cli_reach_the_instance_through_the_socket_uri():
    script = ("import os, flux; d = os.environ.pop('FLUX_LITE_STATE_DIR'); h = flux.Flux(); "
              "print(h.attr_get('size'), h.attr_get('local-uri') == os.environ['FLUX_URI'], "
              "flux.Flux(os.environ['FLUX_URI']).attr_get('size'))")
    r = _start("--test-size=2", "sh", "-c", f'flux python -c "{script}" && flux getattr local-uri && '
                                            'echo $FLUX_URI')
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "2 True 2"
    assert lines[1] == lines[2] and lines[1].endswith("/local-0")


def test_state_dir_of_a_socket_uri(server, flux, tmp_path):
    assert state_dir_of_uri(flux.state_dir) == flux.state_dir
    assert state_dir_of_uri(str(tmp_path / "nowhere")) == str(tmp_path / "nowhere")
    # the socket outside the state dir is no state dir's
    assert state_dir_of_uri(server.path) == server.path
    assert served_socket(flux.state_dir) is None
    with Server(socket_path(flux.state_dir), flux.state_dir) as srv:
        assert state_dir_of_uri(srv.path) == flux.state_dir
        assert served_socket(flux.state_dir) == socket_path(flux.state_dir)
        assert flux.out("getattr", "local-uri").strip() == srv.uri
    assert flux.out("getattr", "local-uri").strip() == f"local://{flux.state_dir}"


# -- flux-core's own test programs, when a build is at hand ------------------------------------


def _flux_core_build():
    for root in (os.environ.get("FLUX_CORE_SRC"), "/work/build/fc-test"):
        if root and os.access(os.path.join(root, "t/job-manager/list-jobs"), os.X_OK):
            return root
    return None


@pytest.mark.skipif(_flux_core_build() is None, reason="no flux-core build with its test programs "
                                                       "(FLUX_CORE_SRC)")
def test_flux_cores_list_jobs_program():
    root = _flux_core_build()
    list_jobs = os.path.join(root, "t/job-manager/list-jobs")
    rpc = os.path.join(root, "t/request/rpc")
    script = (f"flux submit --urgency=0 -n1 true && flux submit -n1 sleep 100 && "
              f"{list_jobs} && echo --- && {list_jobs} -c 1 && echo --- && "
              f"{rpc} nosuch.topic 38 'No service matching' </dev/null && "
              f"{rpc} job-list.list-id 71 </dev/null && echo rpc-ok")
    r = _start("--test-size=2", "sh", "-c", script)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    first = lines.index("---")
    second = lines.index("---", first + 1)
    jobs = [json.loads(x) for x in lines[2:first]]  # (after the two job ids submit printed)
    assert len(jobs) == 2
    by_state = {j["state"]: j for j in jobs}
    assert by_state[8]["priority"] == 0 and by_state[8]["urgency"] == 0
    assert by_state[16]["priority"] == 16 and "annotations" in by_state[16]
    assert {j["userid"] for j in jobs} == {os.getuid()}
    assert len(lines[first + 1:second]) == 1
    assert lines[-1] == "rpc-ok"


def test_job_manager_getattr(flux):
    flux("queue", "stop")
    jobid = int(flux.out("job", "id", flux.submit("--env=FOO=bar", "-n1", "true")))
    with Instance.open(flux.state_dir) as inst:
        got = services.call(inst, "job-manager.getattr", {"id": jobid, "attrs": ["jobspec", "eventlog"]})
        # the redacted jobspec: no environment
        assert "environment" not in got["jobspec"]["attributes"]["system"]
        assert got["jobspec"]["tasks"][0]["command"] == ["true"]
        assert [e["name"] for e in got["eventlog"]][:2] == ["submit", "validate"]
        for attrs, num, text in ((["noexist"], errno.ENOENT, "unknown attr noexist"),
                                 (["R"], errno.ENOENT, "R is NULL"),
                                 ([1], errno.EPROTO, "attribute list contains non-string")):
            with pytest.raises(Exception) as info:
                services.call(inst, "job-manager.getattr", {"id": jobid, "attrs": attrs})
            assert (info.value.errno, str(info.value)) == (num, text)
        with pytest.raises(Exception) as info:
            services.call(inst, "job-manager.getattr", {"id": 1234, "attrs": ["R"]})
        assert (info.value.errno, str(info.value)) == (errno.EINVAL, "unknown job")


def test_the_older_job_list_request_ands_its_terms(flux):
    one = int(flux.out("job", "id", flux.submit("--job-name=one", "-n1", "sleep", "60")))
    two = int(flux.out("job", "id", flux.submit("--job-name=two", "-n1", "sleep", "60")))
    with Instance.open(flux.state_dir) as inst:
        def ids(**legacy):
            request = {"max_entries": 0, "attrs": [], "userid": -1, "states": 0, "results": 0, **legacy}
            return sorted(j["id"] for j in services.call(inst, "job-list.list", request)["jobs"])

        assert ids() == [one, two]
        assert ids(name="two") == [two]
        assert ids(userid=os.getuid(), name="one") == [one]
        assert ids(userid=os.getuid() + 1) == []
        assert ids(queue="nosuch") == []
        # states and results: both must hold (a running job has no result)
        assert ids(states=16, results=1) == []
        assert ids(states=16) == [one, two]


def test_job_state_pause_hides_later_jobs_from_list_ids(server, flux):
    before = flux.submit("-n1", "sleep", "60")
    with Client(server.path) as c:
        _, errnum, _, _, payload = c.rpc("job-list.job-state-pause", None)
        assert (errnum, payload) == (0, None)  # (no payload, as job-list answers)
        # the owner's alone
        assert c.rpc("job-list.job-state-pause", None, userid=os.getuid() + 1, rolemask=2)[1] == errno.EPERM
        after = flux.submit("-n1", "sleep", "60")
        with Instance.open(flux.state_dir) as inst, inst.read_session() as broker:
            from flux_lite import job_list

            assert job_list.synced(broker, int(flux.out("job", "id", before)))
            assert not job_list.synced(broker, int(flux.out("job", "id", after)))
        # list-ids waits for the later job: under the virtual clock nothing can end that wait
        assert "cannot reach the state" in flux.fails("job", "list-ids", after).stderr
        assert json.loads(flux.out("job", "list-ids", before))["id"] == int(flux.out("job", "id", before))
        assert c.rpc("job-list.job-state-unpause", None)[1] == 0
        assert json.loads(flux.out("job", "list-ids", after))["id"] == int(flux.out("job", "id", after))


def test_requests_leave_no_garbage_when_the_collector_is_off(flux, sockdir):
    # (the console script turns the cyclic collector off: a served request collects what it left)
    import gc

    gc.collect()
    gc.disable()
    try:
        srv = Server(sockdir / "gc", flux.state_dir).start()
        with Client(srv.path) as c:
            for tag in range(1, 31):
                assert c.rpc("job-list.list", {"max_entries": 0, "attrs": ["all"]}, matchtag=tag)[1] == 0
                assert c.rpc("attr.get", {"name": "size"}, matchtag=tag)[1] == 0
        srv.close()  # (joins the threads: their collections are done)
        assert gc.collect() < 30
    finally:
        gc.enable()


def test_a_failing_service_is_an_error_response_not_a_traceback(server, monkeypatch, capfd):
    from flux_lite.services.table import Service

    def boom(instance, payload):
        raise RuntimeError("boom")

    def not_json(instance, payload):
        return {"value": object()}

    monkeypatch.setitem(services._SERVICES, "test.boom", Service("test.boom", boom, False))
    monkeypatch.setitem(services._SERVICES, "test.odd", Service("test.odd", not_json, False))
    monkeypatch.setitem(services._SERVICES, "test.stream", Service("test.stream", boom, True))
    with Client(server.path) as c:
        assert c.rpc("test.boom", {})[1:5:3] == (errno.EINVAL, b"boom\0")
        assert c.rpc("test.odd", {})[1:5:3] == (errno.EPROTO, b"response is not JSON\0")
        assert c.rpc("test.stream", {}, flags=STREAMING)[1:5:3] == (errno.EINVAL, b"boom\0")
        assert c.rpc("attr.get", {"name": "size"})[1] == 0
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err


def test_a_state_dir_too_deep_for_a_socket_gets_one_under_tmp(tmp_path):
    from conftest import Flux

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    flux = Flux(deep)
    flux("start", "--clock=virtual")
    srv = Server.of_instance(flux.state_dir)
    assert srv.path != str(socket_path(flux.state_dir)) and srv.path.startswith("/tmp/")
    with srv, Client(srv.path) as c:
        assert value(c.rpc("attr.get", {"name": "size"})[4])["value"] == "1"
    assert not os.path.exists(os.path.dirname(srv.path))
    # a short one is the instance's own
    with tempfile.TemporaryDirectory(prefix="fl-") as short:
        shallow = Flux(os.path.join(short, "s"))
        shallow("start", "--clock=virtual")
        with Server.of_instance(shallow.state_dir) as srv:
            assert srv.path == str(socket_path(shallow.state_dir))


def test_job_list_constraints_on_t_priority_and_t_sched(flux):
    flux("queue", "stop")
    queued = int(flux.out("job", "id", flux.submit("-n1", "true")))
    waiting = int(flux.out("job", "id", flux.submit(f"--dependency=afterany:{queued}", "-n1", "true")))
    with Instance.open(flux.state_dir) as inst:
        def ids(constraint):
            request = {"max_entries": 0, "attrs": [], "constraint": constraint}
            return sorted(j["id"] for j in services.call(inst, "job-list.list", request)["jobs"])

        # a job still in DEPEND has neither time, which matches nothing
        assert ids({"t_priority": [">=0"]}) == [queued]
        assert ids({"t_sched": [">=0"]}) == [queued]
        assert ids({"t_sched": ["<1"]}) == []
        assert ids({"t_depend": [">=0"]}) == [queued, waiting]


@pytest.mark.parametrize("constraint, text", [
    ({"ranks": [3]}, "ranks value must be a string"),
    ({"hostlist": [1]}, "host value must be a string"),
    ({"t_submit": [0]}, "t_submit value must be a string"),
    ({"t_sched": [1.5]}, "t_sched value must be a string"),
])
def test_job_list_constraint_values_are_strings(flux, constraint, text):
    with Instance.open(flux.state_dir) as inst:
        with pytest.raises(Exception) as info:
            services.call(inst, "job-list.list", {"max_entries": 0, "attrs": [], "constraint": constraint})
    assert (info.value.errno, str(info.value)) == (errno.EPROTO, text)
