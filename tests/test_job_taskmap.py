"""The exec eventlog (init, starting, shell.init, shell.start, complete,
done: derived from the job's start and finish) and flux job taskmap."""

from click.testing import CliRunner

from flux_lite.cli.main import cli
from flux_lite.formats import taskmap as taskmapmod


def as_flux(flux, *args, env=None):
    full = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", **(env or {})}
    r = CliRunner().invoke(cli, [str(a) for a in args], env=full, prog_name="flux", catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_exec_eventlog_of_a_job_shell_and_of_test_mode(flux):
    job = flux.submit("-N2", "-n3", "sleep", "5")
    assert as_flux(flux, "job", "eventlog", "-p", "exec", job)[1] == (
        "1767225600.000000 init\n"
        "1767225600.000000 starting\n"
        f'1767225600.000000 shell.init service="0-shell-{job}" leader-rank=0 size=2\n'
        '1767225600.000000 shell.start taskmap={"version":1,"map":[[0,1,2,1],[1,1,1,1]]}\n')
    code, out, err = as_flux(flux, "job", "wait-event", "-p", "exec", job, "done")
    assert (code, out, err) == (0, "1767225605.000000 done\n", "")
    assert as_flux(flux, "job", "eventlog", "-p", "exec", job)[1].splitlines()[-2:] == [
        "1767225605.000000 complete status=0", "1767225605.000000 done"]
    test = flux.submit("-S", "exec.test.run_duration=1s", "true")
    assert [line.split()[1] for line in as_flux(flux, "job", "wait-event", "-v", "-p", "exec", test, "done")[1]
            .splitlines()] == ["init", "starting", "recoverable", "complete", "done"]
    held = flux.submit("--urgency=hold", "true")
    assert as_flux(flux, "job", "eventlog", "-p", "exec", held) == (
        1, "", f"flux-job: job {held}: exec: No such file or directory\n")


def test_job_taskmap(flux):
    job = flux.submit("-N2", "-n3", "sleep", "5")
    assert as_flux(flux, "job", "taskmap", job) == (0, "[[0,1,2,1],[1,1,1,1]]\n", "")
    assert as_flux(flux, "job", "taskmap", "--to=raw", job) == (0, "0-1;2\n", "")
    assert as_flux(flux, "job", "taskmap", "--to=pmi", job) == (0, "(vector,(0,1,2),(1,1,1))\n", "")
    assert as_flux(flux, "job", "taskmap", "--to=multiline", job) == (0, "0: 0\n1: 0\n2: 1\n", "")
    assert as_flux(flux, "job", "taskmap", "--to=hosts", job) == (0, "node0: 0-1\nnode1: 2\n", "")
    assert as_flux(flux, "job", "taskmap", "--hostname=2", job) == (0, "node1\n", "")
    assert as_flux(flux, "job", "taskmap", "--nodeid=1", job) == (0, "0\n", "")
    # a pending job is waited for: it starts once the clock reaches it
    later = flux.submit("-N4", "-n8", "true")
    assert as_flux(flux, "job", "taskmap", later) == (0, "[[0,4,2,1]]\n", "")
    assert flux.now() == 1767225605.0
    held = flux.submit("--urgency=hold", "true")
    flux("cancel", held)
    assert as_flux(flux, "job", "taskmap", held) == (1, "", "flux-job: No taskmap found for job\n")
    assert as_flux(flux, "job", "taskmap", "f1234") == (1, "", "flux-job: Unable to get job taskmap: no such job\n")
    assert as_flux(flux, "job", "taskmap") == (1, "", "Usage: flux-job taskmap [OPTION] JOBID|TASKMAP\n")


def test_taskmap_conversions():
    def run(*args):
        return as_flux_noinstance(*args)

    assert run("--taskids=1", "[[0,2,2,1]]") == (0, "2-3\n", "")
    assert run("--ntasks=0", "[[0,2,2,1]]") == (0, "2\n", "")
    assert run("--to=raw", "(vector,(0,4,4))") == (0, "0-3;4-7;8-11;12-15\n", "")
    assert run("0,2;1,3") == (0, "[[0,2,1,2]]\n", "")
    assert run("--to=pmi", "[[0,2,1,2]]") == (0, "(vector,(0,2,1),(0,2,1))\n", "")
    assert run("--ntasks=5", "[[0,2,2,1]]") == (
        1, "", "flux-job: failed to get task count for node 5: No such file or directory\n")
    assert run("--to=hosts", "[[0,1,1,1]]") == (1, "", "flux-job: taskmap: can't use --to=hosts without a jobid\n")
    assert run("--to=foo", "[[0,1,1,1]]") == (1, "", "flux-job: invalid value --to=foo\n")
    assert run("0-1;1-2") == (1, "", "flux-job: error decoding taskmap: duplicate taskid specified: 1\n")
    assert run("0;2") == (1, "", "flux-job: error decoding taskmap: missing taskid: 1\n")
    assert run("(vector,(0,0,1))") == (1, "", "flux-job: error decoding taskmap: invalid number in block: (0,0,1))\n")


def as_flux_noinstance(*args):
    r = CliRunner().invoke(cli, ["job", "taskmap", *args], env={"FLUX_LITE_STATE_DIR": "/nonexistent"},
                           prog_name="flux", catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_taskmap_blocks_merge_as_libtaskmap_does():
    tm = taskmapmod.Taskmap()
    for node in (0, 1, 0, 1):
        tm.append(node, 1, 1)
    assert tm.encode() == "[[0,2,1,2]]"
    assert taskmapmod.Taskmap.from_counts([2, 2, 1]).encode() == "[[0,2,2,1],[2,1,1,1]]"
