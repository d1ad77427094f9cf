"""flux kvs eventlog append / get / wait-event, kvs put -r, kvs dir, kvs
unlink: Flux's outputs and words, namespaces and the guests' rules."""

from click.testing import CliRunner

from flux_lite.cli.main import cli
from flux_lite.formats.jobid import decode

T0 = 1767225600.0
GUEST = {"FLUX_HANDLE_USERID": "4242", "FLUX_HANDLE_ROLEMASK": "2"}


def as_flux(flux, *args, env=None, input=None):
    full = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", **(env or {})}
    r = CliRunner().invoke(cli, [str(a) for a in args], env=full, prog_name="flux", input=input,
                           catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_eventlog_append_get_and_wait_event(flux):
    assert as_flux(flux, "kvs", "eventlog", "append", "test.ev", "foo", '{"a":', "1}") == (0, "", "")
    assert as_flux(flux, "kvs", "eventlog", "append", "-t", "42.5", "test.ev", "bar") == (0, "", "")
    assert as_flux(flux, "kvs", "eventlog", "get", "test.ev") == (
        0, "1767225600.000000 foo a=1\n42.500000 bar\n", "")
    assert as_flux(flux, "kvs", "eventlog", "get", "-u", "test.ev") == (
        0, '{"timestamp":1767225600.0,"name":"foo","context":{"a":1}}\n{"timestamp":42.5,"name":"bar"}\n', "")
    assert as_flux(flux, "kvs", "eventlog", "get", "-u", "-H", "test.ev") == (
        1, "", "flux-kvs: Do not specify --unformatted with --human or --color=always\n")
    assert as_flux(flux, "kvs", "eventlog", "wait-event", "test.ev", "bar") == (0, "42.500000 bar\n", "")
    assert as_flux(flux, "kvs", "eventlog", "wait-event", "-v", "-u", "test.ev", "bar") == (
        0, '{"timestamp":1767225600.0,"name":"foo","context":{"a":1}}\n{"timestamp":42.5,"name":"bar"}\n', "")
    assert as_flux(flux, "kvs", "eventlog", "wait-event", "-q", "test.ev", "foo") == (0, "", "")
    assert as_flux(flux, "kvs", "eventlog", "wait-event", "test.none", "foo") == (
        1, "", "flux-kvs: eventlog path test.none not found\n")
    assert as_flux(flux, "kvs", "eventlog", "wait-event", "-t", "1s", "test.ev", "baz") == (
        1, "", "flux-kvs: wait-event timeout on event 'baz'\n")
    assert flux.now() == T0 + 1  # the timeout's time passed
    assert as_flux(flux, "kvs", "eventlog", "get", "test.none") == (
        1, "", "flux-kvs: flux_kvs_lookup_get: No such file or directory\n")
    # bad contexts and names; a directory; a value that is not an eventlog
    for args in (("test.ev", "x", "notjson"), ("test.ev", "x", "[1]"), ("test.ev", "two words")):
        assert as_flux(flux, "kvs", "eventlog", "append", *args) == (
            1, "", "flux-kvs: eventlog_entry_create: Invalid argument\n")
    assert as_flux(flux, "kvs", "eventlog", "append", "test", "x") == (
        1, "", "flux-kvs: flux_kvs_commit: Is a directory\n")
    flux("kvs", "put", "test.val=1")
    assert as_flux(flux, "kvs", "eventlog", "append", "test.val", "x") == (
        1, "", "flux-kvs: flux_kvs_commit: Operation not supported\n")
    # the owner may append to resource.eventlog, as in Flux; the resource
    # module reads it (and fails on a drain without targets) when loaded again
    assert as_flux(flux, "kvs", "eventlog", "append", "resource.eventlog", "drain") == (0, "", "")
    assert as_flux(flux, "resource", "drain", "-n") == (0, "", "")
    assert as_flux(flux, "module", "load", "resource")[0] == 1
    # a guest may not write the primary namespace
    assert as_flux(flux, "kvs", "eventlog", "append", "test.ev", "x", env=GUEST) == (
        1, "", "flux-kvs: Operation not permitted: kvs eventlog append is for the instance owner\n")


def test_eventlog_get_watch_and_waitcreate(flux):
    job = flux.submit("sleep", "5")
    kvsdir = flux.out("job", "id", "--to=kvs", job).strip()
    # -w follows the job's eventlog as the clock advances; -c stops it
    code, out, err = as_flux(flux, "kvs", "eventlog", "get", "-w", "-c", "8", f"{kvsdir}.eventlog")
    assert (code, [line.split()[1] for line in out.splitlines()], err) == (
        0, ["submit", "validate", "depend", "priority", "alloc", "start", "finish", "release"], "")
    assert flux.now() == T0 + 5
    # without -c it ends when nothing is left to happen (here: at once)
    code, out, err = as_flux(flux, "kvs", "eventlog", "get", "--watch", f"{kvsdir}.eventlog")
    assert code == 1 and out.splitlines()[-1].split()[1] == "clean"
    assert "nothing left to happen under the virtual clock" in err
    # -W: a key another command will create
    assert as_flux(flux, "kvs", "eventlog", "get", "-W", "test.later")[0] == 1


def test_get_watch_waitcreate_and_count(flux):
    """kvs get -w/-W/-A/-c, with Flux's outputs (t1007's and a real 0.88's):
    the value and then each change; a removed or missing key ends it."""
    assert as_flux(flux, "kvs", "get", "-w", "nokey") == (1, "", "flux-kvs: nokey: No such file or directory\n")
    flux("kvs", "put", "a=1")
    assert as_flux(flux, "kvs", "get", "-w", "-c", "1", "a") == (0, "1\n", "")
    assert as_flux(flux, "kvs", "get", "-W", "a") == (0, "1\n", "")
    # under a virtual clock a wait nothing can satisfy fails at once, time untouched
    stalled = "nothing left to happen under the virtual clock (the value can change no more)"
    assert as_flux(flux, "kvs", "get", "-W", "later") == (1, "", f"flux-kvs: later: {stalled}\n")
    assert as_flux(flux, "kvs", "get", "-w", "a") == (1, "1\n", f"flux-kvs: a: {stalled}\n")
    assert flux.now() == T0
    # a job's eventlog: its value once, then after each change; -A only what was appended
    job = flux.submit("sleep", "5")
    key = flux.out("job", "id", "--to=kvs", job).strip() + ".eventlog"
    first = flux.out("kvs", "get", key)
    assert first.endswith("}\n\n")  # the eventlog's text, then get's newline
    code, out, err = as_flux(flux, "kvs", "get", "-w", "-A", "-c", "2", key)
    assert (code, err) == (0, "")
    assert out.startswith(first)
    assert [e.split('"name":"')[1].split('"')[0] for e in out[len(first):].split()] == [
        "finish", "release", "free", "clean"]
    assert flux.now() == T0 + 5
    code, out, _ = as_flux(flux, "kvs", "get", "-w", "-c", "1", key)
    assert (code, out) == (0, flux.out("kvs", "get", key))
    assert as_flux(flux, "kvs", "get", "-w", "-c", "x", "a") == (
        1, "", "get: Option 'count' requires an integer argument\n")


def test_put_append(flux):
    """kvs put -A: Flux appends bytes to the value (a real 0.88's outputs)."""
    for args in (("a=1",), ("-A", "a=2"), ("s=hi",), ("-A", "s=yo"), ("-A", "new=1"), ("-r", "-A", "r=q"),
                 ("-A", "-r", "r=w"), ("d.x=1",)):
        assert as_flux(flux, "kvs", "put", *args) == (0, "", "")
    assert as_flux(flux, "kvs", "get", "a", "s", "new", "r") == (0, "12\nhiyo\n1\nqw\n", "")
    assert as_flux(flux, "kvs", "put", "-A", "d=2") == (1, "", "flux-kvs: flux_kvs_commit: Is a directory\n")
    flux("kvs", "eventlog", "append", "test.ev", "foo")
    assert as_flux(flux, "kvs", "put", "-A", 'test.ev={"timestamp":1.0,"name":"bar"}') == (0, "", "")
    assert [line.split()[1] for line in flux.out("kvs", "eventlog", "get", "test.ev").splitlines()] == [
        "foo", "bar"]
    assert as_flux(flux, "kvs", "put", "-A", "test.ev=notanevent") == (
        1, "", "flux-kvs: flux_kvs_commit: Invalid argument\n")
    assert as_flux(flux, "kvs", "put", "-A", "resource.eventlog=x")[0] == 1  # instance keys are the instance's


def test_job_eventlogs_and_guest_namespaces(flux):
    job = flux.submit("sleep", "5")
    kvsdir = flux.out("job", "id", "--to=kvs", job).strip()
    ns = flux.out("job", "namespace", job).strip()
    # a job's eventlog takes events of other names: job wait-event sees them
    assert as_flux(flux, "kvs", "eventlog", "append", f"{kvsdir}.eventlog", "foobar", '{"foo":"bar"}') == (
        0, "", "")
    assert as_flux(flux, "job", "wait-event", "-m", 'foo="bar"', job, "foobar") == (
        0, '1767225600.000000 foobar foo="bar"\n', "")
    # ... but not the job manager's own (they would change the job's history)
    assert as_flux(flux, "kvs", "eventlog", "append", f"{kvsdir}.eventlog", "clean") == (
        1, "", f"flux-kvs: {kvsdir}.eventlog: refusing to append clean (job data is written by the job manager)\n")
    # another eventlog under the job's directory: job wait-event -p watches it
    flux("kvs", "eventlog", "append", f"{kvsdir}.foobar.eventlog", "foo")
    assert as_flux(flux, "job", "wait-event", "-p", "foobar.eventlog", job, "foo") == (
        0, "1767225600.000000 foo\n", "")
    # the guest namespace is the job's guest directory; the job's owner may write it
    guest = {"FLUX_HANDLE_USERID": "0", "FLUX_HANDLE_ROLEMASK": "2"}
    assert as_flux(flux, "kvs", "eventlog", "append", "-N", ns, "foobar", "foobar", env=guest) == (0, "", "")
    assert as_flux(flux, "kvs", "eventlog", "get", "-N", ns, "foobar") == (0, "1767225600.000000 foobar\n", "")
    assert as_flux(flux, "kvs", "eventlog", "get", f"{kvsdir}.guest.foobar") == (
        0, "1767225600.000000 foobar\n", "")
    assert as_flux(flux, "job", "wait-event", "-p", "guest.foobar", job, "foobar") == (
        0, "1767225600.000000 foobar\n", "")
    # ... another user may not
    assert as_flux(flux, "kvs", "eventlog", "append", "-N", ns, "foobar", "x", env=GUEST) == (
        1, "", "flux-kvs: Operation not permitted: kvs eventlog append is for the instance owner\n")
    assert as_flux(flux, "kvs", "eventlog", "get", "-N", "job-1234", "foobar") == (
        1, "", "flux-kvs: job-1234: Operation not supported\n")
    assert as_flux(flux, "kvs", "unlink", "-N", ns, "foobar") == (0, "", "")
    assert as_flux(flux, "kvs", "get", "-N", ns, "foobar") == (1, "", "flux-kvs: foobar: No such file or directory\n")


def test_put_raw_dir_and_unlink(flux):
    assert as_flux(flux, "kvs", "put", "-r", "test.raw=-", input='{"x":  1}\n') == (0, "", "")
    # get prints the value and a newline, even after the newline it holds (as Flux does)
    assert as_flux(flux, "kvs", "get", "test.raw") == (0, '{"x":  1}\n\n', "")
    assert as_flux(flux, "kvs", "put", "-r", "test.text=not json") == (0, "", "")
    assert as_flux(flux, "kvs", "put", "-r", "test.nokey") == (
        1, "", "flux-kvs: put: you must specify a value as key=value\n")
    flux("kvs", "put", "test.sub.a=1", "test.s=hello")
    flux("kvs", "eventlog", "append", "test.ev", "one")
    flux("kvs", "eventlog", "append", "test.ev", "two")
    assert as_flux(flux, "kvs", "dir", "test") == (0, (
        'test.ev = {"timestamp":1767225600.0,"name":"one"}...\n'
        'test.raw = {"x":  1}\n'
        "test.s = hello\n"
        "test.sub.\n"
        "test.text = not json\n"), "")
    assert as_flux(flux, "kvs", "dir", "-R", "-d", "test") == (
        0, "test.ev\ntest.raw\ntest.s\ntest.sub.a\ntest.text\n", "")
    assert as_flux(flux, "kvs", "dir", "-w", "14", "test.sub") == (0, "test.sub.a ...\n", "")
    assert as_flux(flux, "kvs", "dir", "test.s") == (1, "", "flux-kvs: test.s: Not a directory\n")
    assert as_flux(flux, "kvs", "dir", "nope") == (1, "", "flux-kvs: nope: No such file or directory\n")
    assert as_flux(flux, "kvs", "dir", "a", "b") == (1, "", "flux-kvs: dir: specify zero or one directory\n")
    # unlink: all or nothing
    assert as_flux(flux, "kvs", "unlink", "test.s", "test.sub") == (
        1, "", "flux-kvs: cannot unlink 'test.sub': Directory not empty\n")
    assert as_flux(flux, "kvs", "get", "test.s") == (0, "hello\n", "")
    assert as_flux(flux, "kvs", "unlink", "test.nope") == (
        1, "", "flux-kvs: cannot unlink 'test.nope': No such file or directory\n")
    assert as_flux(flux, "kvs", "unlink", "-f", "test.nope", "test.s") == (0, "", "")
    assert as_flux(flux, "kvs", "unlink", "-R", "test.sub") == (0, "", "")
    assert as_flux(flux, "kvs", "dir", "-d", "test") == (0, "test.ev\ntest.raw\ntest.text\n", "")
    assert as_flux(flux, "kvs", "unlink", "test.raw", env=GUEST) == (
        1, "", "flux-kvs: Operation not permitted: kvs unlink is for the instance owner\n")
    # the instance's own keys stay
    job = flux.submit("true")
    kvsdir = flux.out("job", "id", "--to=kvs", job).strip()
    for key, reason in ((f"{kvsdir}.R", "job data is written by the job manager"),
                        ("resource.R", "the instance's resources"), ("config", "use 'flux-lite config load'"),
                        ("resource", "flux-lite writes it")):
        assert as_flux(flux, "kvs", "unlink", "-R", key) == (
            1, "", f"flux-kvs: {key}: refusing to unlink an instance key ({reason})\n")
    assert as_flux(flux, "kvs", "unlink", "-R", "job")[0] == 1
    assert flux.state(job) in ("INACTIVE", "RUN") and decode(job)


def test_kvs_get_raw_prints_the_stored_bytes_without_a_newline(flux):
    # as Flux 0.88: a string as put, JSON as its text, raw bytes as stored
    flux("kvs", "put", "a=foo", "b=42", 'c={"x":1}')
    flux("kvs", "put", "-r", "d=-", input="raw\nbytes")
    assert flux.out("kvs", "get", "-r", "a") == "foo"
    assert flux.out("kvs", "get", "--raw", "b") == "42"
    assert flux.out("kvs", "get", "-r", "c") == '{"x":1}'
    assert flux.out("kvs", "get", "-r", "d") == "raw\nbytes"
    assert flux.out("kvs", "get", "-r", "a", "b") == "foo42"
    assert flux.out("kvs", "get", "a") == "foo\n"
