"""flux-lite dump / restore: Flux's archive layout, two archives a real Flux
0.88 wrote, and round trips.

tests/data/live.tar is `flux dump` of a running 4-node instance: rank 3
drained ("bad disk"), ƒPssvDd completed, ƒUAwqZZ failed (exit 1), ƒZA3RWo
canceled while held, ƒfDQVJX running on ranks 0-2 (duration updated to 15m),
ƒkGx36o pending, ƒo4YgpP held, ƒr41Enj waiting (afterok) on ƒfDQVJX.
tests/data/shutdown.tar is the dump Flux writes at instance exit: rank 3
drained, ƒNVpb11 completed, ƒRVH8yM canceled by the shutdown, ƒVro2AK pending,
ƒZ75Sx7 held, the anonymous queue disabled ("maintenance"). The expected
outcomes below are what Flux 0.88 did when it restarted on each."""

import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import Flux
from hypothesis import given, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent / "data"
LIVE = DATA / "live.tar"
SHUTDOWN = DATA / "shutdown.tar"

FIELDS = ("{id.f58} {state} {status} {result} {urgency} {priority} {ranks} "
          "{exception.type} {exception.note}")


def restored(tmp_path, archive, *args, name="restored"):
    flux = Flux(tmp_path / name)
    result = flux("restore", "--clock=virtual", *args, str(archive))
    return flux, result


def names(flux, jobid):
    return flux.eventlog(jobid)


# -- the archive of a live Flux instance ---------------------------------------------


def test_restore_live_archive_progress_line(tmp_path):
    _, result = restored(tmp_path, LIVE)
    assert result.stdout == ""
    # Flux's own progress line: every key up to 9 (blobs one behind), then the total
    expected = "".join(f"\rflux-lite restore: restored {k} keys ({b} blobs)"
                       for k, b in [(1, 0), (2, 1), (3, 2), (4, 3), (5, 3), (6, 4), (7, 5), (8, 6), (9, 7)])
    assert result.stderr == expected + "\rflux-lite restore: restored 30 keys (57 blobs)\n"


def test_restore_live_archive_jobs(tmp_path):
    flux, _ = restored(tmp_path, LIVE)
    out = flux.out("jobs", "-a", "-o", FIELDS)
    assert out.splitlines() == [
        "JOBID STATE STATUS RESULT URG PRI RANKS EXCEPTION-TYPE EXCEPTION-NOTE",
        "fo4YgpP SCHED SCHED  0 0   ",
        "fkGx36o RUN RUN  16 16 0  ",
        "fr41Enj INACTIVE FAILED FAILED 16   dependency dependency after-success=ƒfDQVJX job never started",
        "ffDQVJX INACTIVE FAILED FAILED 16 16 [0-2] exec failed to create guest ns: No such file or directory",
        "fZA3RWo INACTIVE CANCELED CANCELED 0 0  cancel ",
        "fUAwqZZ INACTIVE FAILED FAILED 16 16 0  ",
        "fPssvDd INACTIVE COMPLETED COMPLETED 16 16 0  ",
    ]


def test_restore_live_archive_eventlogs(tmp_path):
    flux, _ = restored(tmp_path, LIVE)
    now = flux.now()
    # the running job: job-exec cannot recover its guest namespace
    events = flux.events("ffDQVJX")
    assert [e["name"] for e in events] == [
        "submit", "validate", "depend", "priority", "alloc", "start", "jobspec-update", "resource-update",
        "exception", "release", "free", "clean"]
    assert events[8]["context"] == {"type": "exec", "severity": 0, "userid": os.getuid(),
                                    "note": "failed to create guest ns: No such file or directory"}
    assert list(events[8]["context"]) == ["type", "severity", "userid", "note"]
    assert events[9]["context"] == {"ranks": "all", "final": True}
    assert all(e["timestamp"] == now for e in events[8:])
    # pending: flux-restart and a fresh priority, then it runs on the freed nodes
    assert names(flux, "fkGx36o") == ["submit", "validate", "depend", "priority", "flux-restart", "priority",
                                      "alloc", "start"]
    flux.advance("1s")
    assert names(flux, "fkGx36o")[-4:] == ["finish", "release", "free", "clean"]
    # held: flux-restart, priority=0, still held
    events = flux.events("fo4YgpP")
    assert [e["name"] for e in events] == ["submit", "validate", "depend", "priority", "flux-restart", "priority"]
    assert events[-1]["context"] == {"priority": 0}
    # the dependent of the running job
    events = flux.events("fr41Enj")
    assert [e["name"] for e in events] == ["submit", "dependency-add", "validate", "exception", "clean"]
    assert events[3]["context"] == {"type": "dependency", "severity": 0,
                                    "note": "dependency after-success=ƒfDQVJX job never started",
                                    "userid": os.getuid()}
    # inactive jobs are exactly as they were: the archive's eventlog text
    with tarfile.open(LIVE) as tar:
        original = tar.extractfile("job/0000/0003/7f00/0000/eventlog").read().decode()
    assert flux.out("kvs", "get", "job.0000.0003.7f00.0000.eventlog").strip() == original.strip()


def test_restore_live_archive_end_reasons(tmp_path):
    flux, _ = restored(tmp_path, LIVE)
    out = flux.out("jobs", "-a", "-o", "{id.f58} {returncode} {inactive_reason}")
    assert out.splitlines()[3:] == [
        "fr41Enj 1 Exception: type=dependency note=dependency after-success=ƒfDQVJX job never started",
        "ffDQVJX 1 Exit 1",
        "fZA3RWo -128 Canceled",
        "fUAwqZZ 1 Exit 1",
        "fPssvDd 0 Exit 0",
    ]


def test_job_info_J_is_flux_s(tmp_path):
    """`job info ID J` prints J as Flux stores it: for a restored job, the archive's bytes."""
    flux, _ = restored(tmp_path, LIVE)
    with tarfile.open(LIVE) as tar:
        J = tar.extractfile("job/0000/0005/d700/0000/J").read().decode()
    assert flux.out("job", "info", "ffDQVJX", "J") == J + "\n"
    jobid = flux.submit("true")
    _header, payload, mech = flux.out("job", "info", jobid, "J").strip().split(".")
    assert mech == "none" and json.loads(base64.b64decode(payload))["version"] == 1


def test_restore_live_archive_resources_and_drain(tmp_path):
    flux, _ = restored(tmp_path, LIVE)
    R = json.loads(flux.out("kvs", "get", "resource.R"))
    assert R["execution"]["R_lite"] == [{"rank": "0-3", "children": {"core": "0-1"}}]
    assert R["execution"]["nodelist"] == ["vm,vm,vm,vm"]
    status = flux.out("resource", "status").splitlines()
    assert [line.split() for line in status[1:]] == [["avail", "✔", "3", "vm,vm,vm"],
                                                     ["drained", "✔", "1", "vm"]]
    assert "bad disk" in flux.out("resource", "drain")


def test_restore_live_archive_log_and_new_ids(tmp_path):
    from flux_lite.formats.jobid import decode

    flux, _ = restored(tmp_path, LIVE)
    log = flux.dmesg()
    for line in ("kvs.info[0]: restored KVS from checkpoint on 2026-12-01T05:23:54Z",
                 "job-manager.info[0]: restart: 7 jobs",
                 "job-manager.info[0]: restart: 1 running jobs",
                 "job-manager.info[0]: restart: checkpoint.job-manager not found",
                 "job-exec.err[0]: could not recover guest namespace for ffDQVJX",
                 "job-exec.info[0]: job-exception: id=ffDQVJX: failed to create guest ns: No such file or directory"):
        assert line in log
    new = flux.submit("true")
    assert decode(new) > decode("fr41Enj")
    assert decode(flux.submit("true")) > decode(new)


def test_restore_live_archive_job_last(tmp_path):
    flux, _ = restored(tmp_path, LIVE)
    env = {"FLUX_HANDLE_USERID": "0"}  # the archive's jobs are root's
    assert flux.out("job", "last", env=env).strip() == "fr41Enj"
    new = flux.submit("true", env=env)
    assert flux.out("job", "last", env=env).strip() == new


def test_restore_virtual_clock_starts_after_archive(tmp_path):
    flux, _ = restored(tmp_path, LIVE)
    assert flux.now() == 1796102635.0  # the second after the archive's last event


# -- the archive Flux writes at shutdown ------------------------------------------------


def test_restore_shutdown_archive(tmp_path):
    flux, result = restored(tmp_path, SHUTDOWN)
    assert result.stderr.endswith("\rflux-lite restore: restored 21 keys (41 blobs)\n")
    assert flux.out("jobs", "-a", "-o", "{id.f58} {status}").split("\n")[1:5] == [
        "fZ75Sx7 SCHED", "fVro2AK RUN", "fRVH8yM CANCELED", "fNVpb11 COMPLETED"]
    assert names(flux, "fVro2AK") == ["submit", "validate", "depend", "priority", "flux-restart", "priority",
                                      "alloc", "start"]
    flux.advance("1s")
    assert flux.state("fVro2AK") == "INACTIVE"
    assert names(flux, "fZ75Sx7")[-2:] == ["flux-restart", "priority"]
    assert flux.state("fZ75Sx7") == "SCHED"
    # the canceled job keeps its eventlog; no running jobs, and a checkpoint this time
    assert names(flux, "fRVH8yM")[-5:] == ["exception", "finish", "release", "free", "clean"]
    log = flux.dmesg()
    assert "job-manager.info[0]: restart: 0 running jobs" in log
    assert "job-manager.info[0]: restart: checkpoint.job-manager not found" not in log
    assert "drained ✔      1 vm" in flux.out("resource", "status")


def test_restore_shutdown_archive_keeps_checkpoint(tmp_path):
    flux, _ = restored(tmp_path, SHUTDOWN)
    ckpt = json.loads(flux.out("kvs", "get", "checkpoint.job-manager"))
    assert ckpt["max_jobid"] == 21072183296
    # the queue state: disabled with its reason, scheduling started
    assert flux.out("queue", "status") == "Job submission is disabled: maintenance\nScheduling is started\n"
    result = flux.fails("submit", "true")
    assert "maintenance" in result.stderr
    # and a shutdown dump of it carries the state on, as Flux writes it
    out = tmp_path / "again.tar"
    flux("dump", "-q", "--checkpoint", str(out))
    again = json.loads(members(out.read_bytes())["checkpoint/job-manager"][1])
    assert again == {"version": 1, "max_jobid": 21072183296,
                     "queue": [{"enable": False, "start": True, "disable_reason": "maintenance"}]}


def test_restore_live_archive_queue_enabled(tmp_path):
    flux, _ = restored(tmp_path, LIVE)
    assert flux.out("queue", "status") == "Job submission is enabled\nScheduling is started\n"


def test_start_restore_runs_command(tmp_path):
    env = dict(os.environ, FLUX_F58_FORCE_ASCII="1")
    env.pop("FLUX_LITE_STATE_DIR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "flux_lite", "start", f"--restore={SHUTDOWN}", "-q" if False else "--clock=virtual",
         sys.executable, "-m", "flux_lite", "jobs", "-a", "-o", "{id.f58} {status}"],
        check=False, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[1:5] == ["fZ75Sx7 SCHED", "fVro2AK RUN", "fRVH8yM CANCELED",
                                            "fNVpb11 COMPLETED"]


def test_start_restore_with_test_size_overrides_resources(tmp_path):
    flux = Flux(tmp_path / "s")
    result = flux("start", "--clock=virtual", "--test-size=2", "--test-cores=8", f"--restore={LIVE}")
    assert (result.stdout, result.stderr) == ("", "")  # no progress line, as flux start
    R = json.loads(flux.out("kvs", "get", "resource.R"))
    assert R["execution"]["R_lite"] == [{"rank": "0-1", "children": {"core": "0-7"}}]


# -- errors: one line, nothing created ---------------------------------------------------


@pytest.mark.parametrize("content, message", [
    (b"junk\n", "Unrecognized archive format"),
    (b"", "Unrecognized archive format"),
    (LIVE.read_bytes()[:300], "Unrecognized archive format"),
    (LIVE.read_bytes()[:5000], "Truncated tar archive"),
    (LIVE.read_bytes()[:20000], "Truncated tar archive"),
])
def test_restore_bad_archive(tmp_path, content, message):
    path = tmp_path / "bad.tar"
    path.write_bytes(content)
    state = tmp_path / "state"
    flux = Flux(state)
    result = flux.fails("restore", str(path))
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"flux-lite restore: ERROR: {message}"
    assert not state.exists()


def test_restore_missing_archive(tmp_path):
    state = tmp_path / "state"
    result = Flux(state).fails("restore", str(tmp_path / "nonexistent.tar"))
    assert result.stderr == f"flux-lite restore: ERROR: Failed to open '{tmp_path / 'nonexistent.tar'}'\n"
    assert not state.exists()
    result = Flux(state).fails("start", f"--restore={tmp_path / 'nonexistent.tar'}")
    assert "Failed to open" in result.stderr
    assert not state.exists()


def test_restore_refuses_existing_instance(flux, tmp_path):
    result = flux.fails("restore", str(LIVE))
    assert "an instance already exists" in result.stderr
    assert flux.out("jobs", "-a") .count("\n") == 1  # untouched
    flux("restore", "--force", "-q", str(LIVE))
    assert len(flux.out("jobs", "-a").splitlines()) == 8


def test_restore_from_stdin_quiet_and_verbose(tmp_path):
    flux = Flux(tmp_path / "a")
    result = flux("restore", "-q", "-", input=LIVE.read_bytes())
    assert result.stderr == ""
    assert len(flux.out("jobs", "-a").splitlines()) == 8
    result = Flux(tmp_path / "b")("restore", "-v", str(LIVE))
    lines = result.stderr.splitlines()
    assert len(lines) == 30
    assert "job/0000/0005/d700/0000/guest -> job-25081937920::." in lines
    assert lines[0] == "admin/eventlog"


# -- dump ----------------------------------------------------------------------------------


def members(data):
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: (m, tar.extractfile(m).read() if m.isreg() else None) for m in tar}


def busy_instance(flux):
    """Jobs in several states on a 4-node instance (rank 3 drained)."""
    flux("resource", "drain", "3", "bad disk")
    done = flux.submit("-S", "exec.test.run_duration=1ms", "true")
    flux.advance("1s")
    run = flux.submit("-N3", "-t", "10m", "-S", "exec.test.run_duration=600s", "true")
    flux("update", run, "duration=+5m")
    pending = flux.submit("-N1", "-S", "exec.test.run_duration=1s", "true")
    held = flux.submit("--urgency=hold", "true")
    return done, run, pending, held


def test_dump_layout(flux, tmp_path):
    from flux_lite.formats.jobid import decode, kvs_key

    done, run, pending, held = busy_instance(flux)
    out = tmp_path / "x.tar"
    result = flux("dump", str(out))
    n = len(members(out.read_bytes()))
    assert result.stderr.endswith(f"\rflux-lite dump: archived {n} keys\n")
    assert result.stderr.startswith("\rflux-lite dump: archived 1 keys\rflux-lite dump: archived 2 keys")
    entries = members(out.read_bytes())
    flux_paths = sorted(p for p in entries if not p.startswith("flux-lite/"))
    jd = {j: kvs_key(decode(j)).replace(".", "/") for j in (done, run, pending, held)}
    assert flux_paths == sorted(
        ["admin/eventlog", "resource/R", "resource/eventlog"]
        + [f"{jd[j]}/{k}" for j in (done, run, pending, held) for k in ("J", "eventlog", "jobspec")]
        + [f"{jd[j]}/R" for j in (done, run)]
        + [f"{jd[done]}/guest/exec/eventlog", f"{jd[run]}/guest"])
    # the running job's guest namespace is a symlink, as in Flux's live dump
    link, _ = entries[f"{jd[run]}/guest"]
    assert link.issym() and link.linkname == f"job-{decode(run)}::." and link.mtime == 0
    # every entry: mode 0644, owner the dumping user
    for m, _ in entries.values():
        assert m.mode == 0o644 and m.uid == os.getuid() and m.uname == ""
    # J: the unsigned jobspec as Flux encodes it (mechanism none)
    _, J = entries[f"{jd[held]}/J"]
    header, payload, mech = J.decode().split(".")
    assert mech == "none"
    assert base64.b64decode(header) == b"version\0i1\0userid\0i%d\0mechanism\0snone\0" % os.getuid()
    assert json.loads(base64.b64decode(payload))["tasks"][0]["command"] == ["true"]
    # the exec eventlog of the job that ran
    _, log = entries[f"{jd[done]}/guest/exec/eventlog"]
    assert [json.loads(x)["name"] for x in log.decode().splitlines()] == [
        "init", "starting", "recoverable", "complete", "done"]
    # a live dump has no checkpoint; flux-lite's own keys are all under flux-lite/
    assert not any(p.startswith("checkpoint/") for p in entries)
    assert "flux-lite/kvs/instance/meta" in entries and "flux-lite/format" in entries


def test_dump_checkpoint(flux, tmp_path):
    busy_instance(flux)
    out = tmp_path / "x.tar"
    flux("dump", "-q", "--checkpoint", str(out))
    entries = members(out.read_bytes())
    ckpt = json.loads(entries["checkpoint/job-manager"][1])
    assert list(ckpt) == ["version", "max_jobid", "queue"]
    assert ckpt["queue"] == [{"enable": True, "start": True}]
    drains = json.loads(entries["checkpoint/resource"][1])
    assert list(drains) == ["timestamp", "drain_state"]
    assert drains["drain_state"] == {"3": {"timestamp": 1767225600.0, "reason": "bad disk", "nodelist": "node3"}}
    admin = [json.loads(x)["name"] for x in entries["admin/eventlog"][1].decode().splitlines()]
    assert admin == ["start", "finish"]


def test_dump_errors(flux, tmp_path):
    result = flux.fails("dump", str(tmp_path / "x.badext"))
    assert result.stderr == f"flux-lite dump: ERROR: No such format '{tmp_path / 'x.badext'}'\n"
    result = flux.fails("dump", "/nonexistent/dir/x.tar")
    assert result.stderr == "flux-lite dump: ERROR: Failed to open '/nonexistent/dir/x.tar'\n"
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_dump_is_owner_only(flux, tmp_path):
    result = flux.fails("dump", str(tmp_path / "x.tar"), env={"FLUX_HANDLE_ROLEMASK": "2"})
    assert result.stderr.startswith("flux-lite dump: ERROR: ")
    assert not (tmp_path / "x.tar").exists()


def test_dump_as_flux_speaks_flux(flux, tmp_path):
    """Invoked as `flux`, the messages are flux dump's own."""
    from flux_lite.cli.main import cli

    def run(*args):
        return flux.runner.invoke(cli, list(args), prog_name="flux", catch_exceptions=False,
                                  env={"FLUX_LITE_STATE_DIR": flux.state_dir})

    result = run("dump", "/nonexistent/dir/x.tar")
    assert (result.exit_code, result.stderr) == (1, "flux-dump: Failed to open '/nonexistent/dir/x.tar'\n")
    result = run("dump", str(tmp_path / "x.tar"))
    assert result.exit_code == 0
    assert result.stderr.startswith("\rflux-dump: archived 1 keys\rflux-dump: archived 2 keys")
    result = run("dump")
    assert result.exit_code == 1 and result.stderr.startswith("Usage: ")  # liboptparse: exit 1


def test_dump_to_stdout(flux):
    busy_instance(flux)
    result = flux("dump", "-q", "-")
    data = result.stdout_bytes
    assert data[257:262] == b"ustar"
    assert "admin/eventlog" in members(data)


@pytest.mark.parametrize("ext", ["tar", "tgz", "tar.gz", "tar.bz2", "tar.xz", "zip", "cpio"])
def test_dump_formats_round_trip(flux, tmp_path, ext):
    busy_instance(flux)
    out = tmp_path / f"x.{ext}"
    flux("dump", "-q", str(out))
    copy = Flux(tmp_path / "copy")
    copy("restore", "-q", str(out))
    assert copy.out("jobs", "-a") == flux.out("jobs", "-a")


def test_redump_of_flux_archive_keeps_flux_values(tmp_path):
    """A Flux archive restored and dumped again gives back its inactive jobs'
    values byte for byte (J included: it is re-encoded exactly as Flux did)."""
    flux, _ = restored(tmp_path, LIVE)
    out = tmp_path / "again.tar"
    flux("dump", "-q", str(out))
    again = members(out.read_bytes())
    original = members(LIVE.read_bytes())
    for jobdir in ("job/0000/0003/7f00/0000", "job/0000/0004/2700/0000", "job/0000/0004/ea00/0000"):
        for name in ("J", "R", "eventlog", "jobspec", "guest/exec/eventlog"):
            path = f"{jobdir}/{name}"
            if path in original:
                assert again[path][1] == original[path][1], path
    # the once-running job keeps its dangling guest link, as in Flux
    assert again["job/0000/0005/d700/0000/guest"][0].linkname == "job-25081937920::."
    assert again["resource/eventlog"][1] == original["resource/eventlog"][1]


# -- round trip -----------------------------------------------------------------------------

HK_CONFIG = """
job-manager:
  housekeeping:
    release-after: 30s
    duration: 1m
"""

SNAPSHOT_FIELDS = ("{id.f58} {state} {status} {result} {urgency} {priority} {ranks} {nodelist} "
                   "{t_submit} {t_run} {t_inactive} {expiration} {duration} {exception.type} "
                   "{exception.note} {annotations}")


def snapshot(flux):
    out = {
        "jobs": flux.out("jobs", "-a"),
        "fields": flux.out("jobs", "-a", "-o", SNAPSHOT_FIELDS),
        "resource_status": flux.out("resource", "status"),
        "drain": flux.out("resource", "drain"),
        "hk": flux.out("housekeeping", "list"),
        "clock": flux.out("clock"),
        "resource_list": flux.out("resource", "list"),
        "queues": flux.out("queue", "status", "-v"),
        "queue_list": flux.out("queue", "list"),
    }
    ids = flux.out("jobs", "-a", "-no", "{id.f58}").split()
    out["eventlogs"] = {j: flux.out("job", "eventlog", j) for j in ids}
    out["checkpoint"] = flux.out("kvs", "get", "checkpoint.job-manager")
    return out


def every_kind_of_job(flux):
    """One job in each state flux-lite has, housekeeping part way through."""
    flux("resource", "drain", "3", "bad disk")
    flux.submit("-S", "exec.test.run_duration=1s", "true")  # completed
    flux.submit("-S", "exec.test.run_duration=1h", "-t", "2s", "true")  # timeout
    failed = flux.submit("-S", "exec.test.run_duration=1h", "true")
    canceled_pending = flux.submit("--urgency=hold", "true")
    flux.advance("1s")
    flux("job", "raise", "--type=test", failed)  # fatal exception while running -> failed
    flux("cancel", canceled_pending)
    flux.advance("5s")  # housekeeping of the finished ones is now in progress
    running = flux.submit("-t", "10m", "-S", "exec.test.run_duration=5m", "true")
    flux("update", running, "duration=+5m")  # an updated expiration
    flux.submit("-N3", "-S", "exec.test.run_duration=30s", "true")  # pending (SCHED)
    flux.submit("--urgency=hold", "true")  # held
    flux.submit("--urgency=31", "-S", "exec.test.run_duration=1s", "-N2", "true")  # expedited, pending
    flux("job", "urgency", flux.submit("-S", "exec.test.run_duration=2s", "true"), "20")
    flux("job", "raise", "--severity=3", running, "non-fatal")
    flux.submit(f"--dependency=afterok:{running}", "true")  # DEPEND
    flux("queue", "disable", "-m", "maintenance")
    flux.advance("2s")


@pytest.mark.parametrize("checkpoint", [False, True])
def test_round_trip_every_kind_of_job(flux_factory, tmp_path, checkpoint):
    flux = flux_factory("--test-size=4", "--test-cores=2", config=HK_CONFIG)
    every_kind_of_job(flux)
    before = snapshot(flux)
    assert "CLEANUP" in before["fields"] or flux.out("housekeeping", "list").count("\n") > 1
    assert {"COMPLETED", "TIMEOUT", "FAILED", "CANCELED", "RUN", "SCHED", "DEPEND"} <= set(before["fields"].split())
    out = tmp_path / "rt.tgz"
    flux("dump", "-q", *(["--checkpoint"] if checkpoint else []), str(out))
    assert snapshot(flux) == before  # dumping changes nothing
    copy = Flux(tmp_path / "copy")
    copy("restore", "-q", str(out))
    assert snapshot(copy) == before
    # and both carry on identically: the timers came back too
    for step in ("30s", "1m", "10m"):
        flux.advance(step)
        copy.advance(step)
        assert snapshot(copy) == snapshot(flux)
    flux("queue", "enable")
    copy("queue", "enable")
    assert copy.submit("true") == flux.submit("true")


# -- Flux archives with other states (made from live.tar) ------------------------------------


def modified_live(tmp_path, change):
    from flux_lite import archive

    entries = {e.path: e for e in archive.read(str(LIVE))}
    change(entries)
    path = tmp_path / "modified.tar"
    path.write_bytes(archive.encode(list(entries.values()), "tar"))
    return path


def _copy_job(entries, src, dst, edit):
    from flux_lite.archive import Entry

    for name in ("J", "jobspec", "eventlog"):
        old = entries[f"{src}/{name}"]
        entries[f"{dst}/{name}"] = Entry(f"{dst}/{name}", data=edit(name, old.data), mtime=old.mtime)


def test_restore_afterany_dependent_of_running_job_runs(tmp_path):
    """after-finish (afterany) on a job that was running: satisfied when it fails."""
    src, dst = "job/0000/0007/7f00/0000", "job/0000/0007/7f00/0001"

    def edit(name, data):
        text = data.decode()
        if name == "J":
            return data
        return text.replace("after-success", "after-finish").replace('"afterok"', '"afterany"').encode()

    path = modified_live(tmp_path, lambda entries: _copy_job(entries, src, dst, edit))
    flux, _ = restored(tmp_path, path)
    from flux_lite.formats.jobid import encode

    jobid = encode(int("000007" "7f000001", 16), "f58")
    assert names(flux, jobid)[3:] == ["dependency-remove", "depend", "priority", "alloc", "start"]
    assert flux.events(jobid)[3]["context"] == {"description": "after-finish=ƒfDQVJX"}
    assert names(flux, "fr41Enj")[-2:] == ["exception", "clean"]


def test_restore_job_allocated_not_started_and_finished_not_released(tmp_path):
    """A job allocated but not yet started starts; one that finished but was
    not released yet is released, freed and cleaned."""
    from flux_lite.archive import Entry

    def change(entries):
        # ƒPssvDd (completed) cut after finish; ƒUAwqZZ cut after alloc
        for jobdir, keep in (("job/0000/0003/7f00/0000", "finish"), ("job/0000/0004/2700/0000", "alloc")):
            old = entries[f"{jobdir}/eventlog"]
            lines = old.data.decode().splitlines(keepends=True)
            n = next(i for i, line in enumerate(lines) if json.loads(line)["name"] == keep)
            entries[f"{jobdir}/eventlog"] = Entry(old.path, data="".join(lines[:n + 1]).encode(), mtime=old.mtime)
            entries.pop(f"{jobdir}/guest/exec/eventlog")

    flux, _ = restored(tmp_path, modified_live(tmp_path, change))
    assert names(flux, "fPssvDd")[-4:] == ["finish", "release", "free", "clean"]
    assert flux.state("fPssvDd") == "INACTIVE"
    assert names(flux, "fUAwqZZ")[-2:] == ["alloc", "start"]
    assert "job-manager.info[0]: restart: 3 running jobs" in flux.dmesg()


def test_restore_checkpointed_drains_win(tmp_path):
    """checkpoint/resource's drain state, then the eventlog after it."""
    from flux_lite.archive import Entry

    def change(entries):
        ck = {"timestamp": 1796102632.9, "drain_state": {
            "1-2": {"timestamp": 1796102600.0, "reason": "fan", "nodelist": "vm,vm"}}}
        entries["checkpoint/resource"] = Entry("checkpoint/resource", data=json.dumps(ck).encode())

    flux, _ = restored(tmp_path, modified_live(tmp_path, change))
    drain = flux.out("resource", "drain")
    # rank 3 was drained before the checkpoint (and is not in it): not drained;
    # ranks 1-2 are, with the checkpoint's reason
    assert "fan" in drain and "bad disk" not in drain
    assert "drained ✔      2 vm,vm" in flux.out("resource", "status")


# -- the archive formats ----------------------------------------------------------------------


@pytest.mark.parametrize("archive_path", [LIVE, SHUTDOWN])
def test_tar_writer_matches_flux_byte_for_byte(archive_path):
    """Written back, the entries of a Flux archive give Flux's own bytes."""
    from flux_lite import archive

    data = archive_path.read_bytes()
    assert archive.encode(archive.parse(data), "tar", uid=0, gid=0) == data


def test_tar_long_and_non_ascii_names_use_pax(tmp_path):
    from flux_lite import archive

    entries = [archive.Entry("x/" + "y" * 150 + "/" + "z" * 120, data=b"hello"),
               archive.Entry("é/b", data=b"1" * 700), archive.Entry("s", target="t" * 200),
               archive.Entry("ok", data=b"ok", mtime=5)]
    data = archive.encode(entries, "tar")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert [m.name for m in tar] == [e.path for e in entries]
    back = archive.parse(data)
    assert [(e.path, e.data, e.target) for e in back] == [(e.path, e.data, e.target) for e in entries]


@pytest.mark.parametrize("container, compression", [
    ("tar", None), ("tar", "gz"), ("tar", "bz2"), ("tar", "xz"), ("zip", None), ("cpio", None)])
def test_archive_formats_read_back(container, compression):
    from flux_lite import archive

    entries = archive.parse(LIVE.read_bytes())
    data = archive.encode(entries, container, compression)
    back = archive.parse(data)
    assert [(e.path, e.data, e.target) for e in back] == [(e.path, e.data, e.target) for e in entries]
    # cut short, every format fails in one error, never silently
    for cut in (len(data) // 3, len(data) // 2):
        with pytest.raises(archive.ArchiveError):
            archive.parse(data[:cut])


def test_cpio_newc_is_read():
    from flux_lite import archive

    def member(name, mode, body):
        namebytes = name.encode() + b"\0"
        head = b"070701" + b"".join(b"%08X" % v for v in (
            1, mode, 0, 0, 1, 0, len(body), 0, 0, 0, 0, len(namebytes), 0))
        out = head + namebytes
        out += bytes(-len(out) % 4) + body
        return out + bytes(-len(out) % 4)

    data = member("a/b", 0o100644, b"{}") + member("a/c", 0o120644, b"x::.") + member("TRAILER!!!", 0, b"")
    assert [(e.path, e.data, e.target) for e in archive.parse(data)] == [("a/b", b"{}", None), ("a/c", b"", "x::.")]



_LIVE_BYTES = LIVE.read_bytes()


@settings(max_examples=300)
@given(st.binary(max_size=2048) | st.builds(
    lambda cut, pos, byte: _LIVE_BYTES[:cut][:pos] + bytes([byte]) + _LIVE_BYTES[:cut][pos + 1:],
    st.integers(0, len(_LIVE_BYTES)), st.integers(0, len(_LIVE_BYTES)), st.integers(0, 255)))
def test_archive_parse_garbage_fails_cleanly(data):
    """Any bytes: entries, or the archive module's one-line error, nothing else."""
    from flux_lite import archive

    try:
        archive.parse(data)
    except archive.ArchiveError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=60)
@given(pos=st.integers(0, len(_LIVE_BYTES) - 1), byte=st.sampled_from(b'{}[]":,.0a\x00\n'))
def test_restore_damaged_archive_fails_cleanly(tmp_path_factory, pos, byte):
    """A damaged value inside a well-formed archive: restored, or one error and
    no instance; never a traceback."""
    from flux_lite import archive
    from flux_lite import restore as restoremod
    from flux_lite.errors import FluxLiteError

    data = _LIVE_BYTES[:pos] + bytes([byte]) + _LIVE_BYTES[pos + 1:]
    state = tmp_path_factory.mktemp("damaged") / "state"
    try:
        restoremod.restore(state, archive.parse(data), clock="virtual").close()
    except FluxLiteError as exc:
        assert "\n" not in str(exc)
        assert not (state / "kvs.sqlite").exists()


NAMED_QUEUES = """
queues:
  batch: {}
  debug: {}
policy:
  jobspec:
    defaults:
      system:
        queue: batch
"""


@pytest.mark.parametrize("checkpoint", [False, True])
def test_round_trip_named_queue_states(flux_factory, tmp_path, checkpoint):
    flux = flux_factory("--test-size=2", config=NAMED_QUEUES)
    flux("queue", "start", "--all")
    flux("queue", "stop", "-m", "drain day", "debug")
    flux("queue", "disable", "-m", "closed for the rehearsal", "batch")
    flux.submit("--queue=debug", "true")
    before = (flux.out("queue", "status", "-v"), flux.out("queue", "list"), flux.out("jobs", "-a"))
    out = tmp_path / "q.tar"
    flux("dump", "-q", *(["--checkpoint"] if checkpoint else []), str(out))
    copy = Flux(tmp_path / "copy")
    copy("restore", "-q", str(out))
    assert (copy.out("queue", "status", "-v"), copy.out("queue", "list"), copy.out("jobs", "-a")) == before
    if checkpoint:
        ckpt = json.loads(members(out.read_bytes())["checkpoint/job-manager"][1])
        assert sorted(ckpt["queue"], key=lambda q: q["name"]) == [
            {"enable": False, "start": True, "name": "batch", "disable_reason": "closed for the rehearsal"},
            {"enable": True, "start": False, "name": "debug", "stop_reason": "drain day"}]


# -- a flux-lite dump restored by a real Flux --------------------------------------------------


def _real_flux():
    path = os.environ.get("FLUX_LITE_REAL_FLUX") or shutil.which("flux")
    if not path:
        return None
    try:
        out = subprocess.run([path, "version"], check=False, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if "libflux-core" in out else None


REAL_FLUX = _real_flux()


@pytest.mark.skipif(REAL_FLUX is None, reason="no real Flux (flux on PATH, or FLUX_LITE_REAL_FLUX)")
@pytest.mark.parametrize("checkpoint", [False, True])
def test_real_flux_restores_a_flux_lite_dump(flux_factory, tmp_path, checkpoint):
    """`flux start --test-size=4 -Scontent.restore=DUMP` lists the same jobs:
    inactive ones identical, pending ones pending; the running one fails and
    its dependent too, as after any Flux restart; drain and queue state kept."""
    import socket

    host = socket.gethostname()  # Flux's test instance names its ranks after this host
    flux = flux_factory(f"--test-hosts={host},{host},{host},{host}", "--test-cores=2")
    flux("resource", "drain", "3", "bad disk")
    flux.submit("-S", "exec.test.run_duration=1s", "true")
    flux.submit("-S", "exec.test.run_duration=1h", "-t", "2s", "true")
    failed = flux.submit("-S", "exec.test.run_duration=1h", "true")
    held = flux.submit("--urgency=hold", "true")
    flux.advance("1s")
    flux("job", "raise", "-t", "test", failed)
    flux("cancel", held)
    flux.advance("5s")
    running = flux.submit("-N3", "-t", "10m", "-S", "exec.test.run_duration=600s", "true")
    flux("update", running, "duration=+5m")
    flux.submit("-N1", "-S", "exec.test.run_duration=1s", "true")
    flux.submit("--urgency=hold", "-S", "exec.test.run_duration=1s", "true")
    dependent = flux.submit(f"--dependency=afterok:{running}", "-S", "exec.test.run_duration=1s", "true")
    flux("queue", "disable", "-m", "maintenance")
    fields = "{id.f58} {status} {ntasks} {nnodes} {runtime:0.3f} {nodelist} {exception.type} {exception.note}"
    lite = {line.split()[0]: line for line in flux.out("jobs", "-a", "-no", fields).splitlines()}
    lite_logs = {j: flux.out("job", "eventlog", j) for j in lite}
    out = tmp_path / "dump.tar"
    flux("dump", "-q", *(["--checkpoint"] if checkpoint else []), str(out))

    script = tmp_path / "inside.sh"
    script.write_text(
        f"flux jobs -a -no '{fields}'\necho @@\n"
        + "".join(f"flux job eventlog {j}; echo @@\n" for j in lite)
        + "flux resource drain -no '{ranks} {reason}'\necho @@\nflux queue status\n"
        + f"flux dump -q {tmp_path / 'back.tar'}\n")
    env = dict(os.environ, FLUX_F58_FORCE_ASCII="1", LANG="C.UTF-8")
    proc = subprocess.run([REAL_FLUX, "start", "--test-size=4", f"-Scontent.restore={out}", "sh", str(script)],
                          check=False, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    parts = proc.stdout.split("@@\n")
    real = {line.split()[0]: line for line in parts[0].splitlines()}
    assert set(real) == set(lite)
    for jobid, line in lite.items():
        status = line.split()[1]
        if status in ("COMPLETED", "FAILED", "CANCELED", "TIMEOUT"):
            assert real[jobid] == line  # inactive: identical
            assert parts[1 + list(lite).index(jobid)] == lite_logs[jobid]
    assert real[running].split()[1:2] == ["FAILED"]
    assert "failed to create guest ns" in real[running]
    assert real[dependent].split()[1] == "FAILED" and "job never started" in real[dependent]
    held_now = [j for j, line in lite.items() if line.split()[1] == "SCHED" and "held" not in line]
    for jobid in lite:
        if lite[jobid].split()[1] == "SCHED" and jobid not in (running, dependent):
            log = parts[1 + list(lite).index(jobid)]
            assert "flux-restart" in log  # pending at the dump: restarted by Flux
    assert held_now  # (the scenario has pending jobs)
    assert parts[-2].split(None, 1) == ["3", "bad disk\n"]
    queue = parts[-1]
    if checkpoint:
        assert queue.startswith("Job submission is disabled: maintenance\n")
    else:
        assert queue.startswith("Job submission is enabled\n")  # a live dump has no checkpoint
    # and back: Flux's own dump of that instance still holds flux-lite/, but
    # its content has moved on, so flux-lite restores it as the Flux archive it is
    back = Flux(tmp_path / "back")
    back("restore", "-q", "--clock=virtual", str(tmp_path / "back.tar"))
    assert "broker.info[0]: flux-lite state in the archive is older than its content: ignored" in back.dmesg()
    again = {line.split()[0]: line for line in back.out("jobs", "-a", "-no", fields).splitlines()}
    for jobid, line in real.items():
        if line.split()[1] in ("COMPLETED", "FAILED", "CANCELED", "TIMEOUT"):
            assert again[jobid] == line


def test_restore_older_layout_rebuilds_from_eventlogs(flux, tmp_path):
    """A flux-lite dump whose job index layout is not this version's: the
    index and timers are rebuilt from the eventlogs, as at a restart."""
    from flux_lite import archive

    busy_instance(flux)
    out = tmp_path / "x.tar"
    flux("dump", "-q", str(out))
    entries = archive.read(str(out))
    for e in entries:
        if e.path == "flux-lite/format":
            fmt = json.loads(e.data)
            fmt["derived_version"] = 1
            e.data = json.dumps(fmt).encode()
    entries = [e for e in entries if not e.path.startswith("flux-lite/tables/jobs/")]
    old = tmp_path / "old.tar"
    old.write_bytes(archive.encode(entries, "tar"))
    copy = Flux(tmp_path / "copy")
    copy("restore", "-q", str(old))
    fields = ("-o", "{id.f58} {status} {nodelist} {t_submit} {t_run} {expiration}")
    assert copy.out("jobs", "-a", *fields) == flux.out("jobs", "-a", *fields)
    for jobid in flux.out("jobs", "-a", "-no", "{id.f58}").split():
        assert copy.out("job", "eventlog", jobid) == flux.out("job", "eventlog", jobid)
    assert "job-manager.info[0]: restart: job index and timers rebuilt from eventlogs" in copy.dmesg()
    flux.advance("20m")
    copy.advance("20m")
    assert copy.out("jobs", "-a", *fields) == flux.out("jobs", "-a", *fields)


def test_restore_keeps_archive_R_properties_and_hosts(tmp_path):
    """The production shape: host names, ranks, cores and properties of resource/R."""
    from flux_lite.archive import Entry

    R = {"version": 1, "execution": {
        "R_lite": [{"rank": "0-1", "children": {"core": "0-7"}}, {"rank": "2-3", "children": {"core": "0-3"}}],
        "starttime": 0.0, "expiration": 0.0, "nodelist": ["big[0-1],small[0-1]"],
        "properties": {"bigmem": "0-1"}}}

    def change(entries):
        entries["resource/R"] = Entry("resource/R", data=json.dumps(R).encode())

    flux, _ = restored(tmp_path, modified_live(tmp_path, change))
    got = json.loads(flux.out("kvs", "get", "resource.R"))["execution"]
    assert got["R_lite"] == R["execution"]["R_lite"]
    assert got["nodelist"] == ["big[0-1],small[0-1]"]
    assert got["properties"] == {"bigmem": "0-1"}
    jobid = flux.submit("--requires=bigmem", "-n8", "true")
    assert flux.out("jobs", "-no", "{nodelist}", jobid).strip() in ("big0", "big1")
    status = flux.out("resource", "status")
    # the archive drained rank 3 as host "vm": no host of the new R has that
    # name, so the drain is left out, as Flux's resource module replays it
    assert "drained" not in status


def test_failed_restore_leaves_existing_instance_alone(flux, tmp_path):
    jobid = flux.submit("true")
    before = flux.out("jobs", "-a")
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"junk\n")
    result = flux.fails("restore", "--force", str(junk))
    assert result.stderr == "flux-lite restore: ERROR: Unrecognized archive format\n"
    assert flux.out("jobs", "-a") == before and jobid in before


def test_unknown_flux_keys_go_back_where_they_were(tmp_path):
    """Keys of a Flux archive flux-lite has no use for are written back by
    dump under their own names, bytes unchanged (not under flux-lite/)."""
    from flux_lite.archive import Entry

    def change(entries):
        entries["jobtap/plugin/state"] = Entry("jobtap/plugin/state", data=b"\x00\xffbinary")
        entries["job/0000/0003/7f00/0000/guest/output"] = Entry(
            "job/0000/0003/7f00/0000/guest/output", data=b'{"timestamp":1.0,"name":"header"}\n')

    flux, _ = restored(tmp_path, modified_live(tmp_path, change))
    out = tmp_path / "again.tar"
    flux("dump", "-q", str(out))
    again = members(out.read_bytes())
    assert again["jobtap/plugin/state"][1] == b"\x00\xffbinary"
    assert again["job/0000/0003/7f00/0000/guest/output"][1] == b'{"timestamp":1.0,"name":"header"}\n'
    assert not any(p.startswith("flux-lite/kvs/archive") for p in again)


def test_changed_content_makes_flux_lite_state_stale(flux, tmp_path):
    """flux-lite's state in a dump is used only with the content it was
    written with; once the jobs beside it changed, the archive is Flux's."""
    from flux_lite import archive
    from flux_lite.formats.jobid import decode, kvs_key

    done, run, pending, held = busy_instance(flux)
    out = tmp_path / "x.tar"
    flux("dump", "-q", str(out))
    entries = archive.read(str(out))
    path = kvs_key(decode(held)).replace(".", "/") + "/eventlog"
    for e in entries:
        if e.path == path:  # as if the job had been released meanwhile
            e.data += b'{"timestamp":1767225700.0,"name":"urgency","context":{"userid":0,"urgency":16}}\n'
    changed = tmp_path / "changed.tar"
    changed.write_bytes(archive.encode(entries, "tar"))
    copy = Flux(tmp_path / "copy")
    copy("restore", "-q", str(changed))
    assert "broker.info[0]: flux-lite state in the archive is older than its content: ignored" in copy.dmesg()
    # a restart: the running job fails, the pending ones are restarted
    assert copy.out("jobs", "-no", "{status}", run).strip() == "FAILED"
    assert names(copy, pending)[4] == "flux-restart"
    assert names(copy, held)[4:6] == ["urgency", "priority"]  # it was in PRIORITY: prioritized again
    assert not any(k.startswith("archive") for k in copy.out("kvs", "ls").split())
