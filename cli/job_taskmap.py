"""flux-lite job taskmap: a job's task map (RFC 34), or one given, queried
or converted as flux job taskmap does."""

import sys

import click
from flux_lite.cli.common import instance
from flux_lite.cli.job_list import int_option
from flux_lite.cli.words import prog

from flux_lite.errors import FluxLiteError
from flux_lite.formats import taskmap as taskmapmod
from flux_lite.formats.jobid import decode, kvs_key
from flux_lite.formats.rset import Rset
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.job_info import exec_eventlog, lookup


@click.command("taskmap")
@click.option("--taskids", metavar="NODEID", help="Print idset of tasks on node NODEID")
@click.option("--ntasks", metavar="NODEID", help="Print number of tasks on node NODEID")
@click.option("--nodeid", metavar="TASKID", help="Print the shell rank/nodeid on which a taskid executed")
@click.option("--hostname", metavar="TASKID", help="Print the hostname on which a taskid executed")
@click.option("--to", "to", metavar="FORMAT",
              help="Convert an RFC 34 taskmap to another format (FORMAT can be raw, pmi, hosts, or multiline)")
@click.argument("arg", required=False, metavar="JOBID|TASKMAP")
def job_taskmap(taskids, ntasks, nodeid, hostname, to, arg):
    """Print the task map of job JOBID (once it has started), or convert
    or query TASKMAP (JSON, raw or PMI form)."""
    if arg is None:
        click.echo(f"Usage: {prog('job', sub='taskmap')} [OPTION] JOBID|TASKMAP", err=True)
        sys.exit(1)
    try:
        jobid = decode(arg)
    except ValueError:
        jobid = None
    hosts = None
    if jobid is None:
        try:
            tmap = taskmapmod.decode(arg)
        except taskmapmod.TaskmapError as exc:
            raise FluxLiteError(f"error decoding taskmap: {exc}") from None
    else:
        tmap, hosts = _job_taskmap(jobid)
    if taskids is not None:
        node = int_option("taskmap", "taskids", taskids)
        try:
            click.echo(str(tmap.taskids(node)))
        except taskmapmod.TaskmapError:
            raise FluxLiteError(f"No taskids for node {node}: No such file or directory") from None
        return
    if ntasks is not None:
        node = int_option("taskmap", "ntasks", ntasks)
        try:
            click.echo(str(tmap.ntasks(node)))
        except taskmapmod.TaskmapError:
            raise FluxLiteError(f"failed to get task count for node {node}: No such file or directory") from None
        return
    if nodeid is not None or hostname is not None:
        task = int_option("taskmap", "nodeid" if nodeid is not None else "hostname",
                          nodeid if nodeid is not None else hostname)
        try:
            node = tmap.nodeid(task)
        except taskmapmod.TaskmapError:
            raise FluxLiteError(f"failed to get nodeid for task {task}: No such file or directory") from None
        if hostname is not None:
            if hosts is None:
                raise FluxLiteError("taskmap: can't use --hostname without a jobid")
            click.echo(hosts[node])
        else:
            click.echo(str(node))
        return
    if to is not None:
        if to == "raw":
            click.echo(tmap.encode_raw())
        elif to == "pmi":
            click.echo(tmap.encode_pmi())
        elif to == "multiline":
            for task in range(tmap.total_ntasks()):
                click.echo(f"{task}: {tmap.nodeid(task)}")
        elif to == "hosts":
            if hosts is None:
                raise FluxLiteError("taskmap: can't use --to=hosts without a jobid")
            for node in range(tmap.nnodes()):
                click.echo(f"{hosts[node]}: {tmap.taskids(node)}")
        else:
            raise FluxLiteError(f"invalid value --to={to}")
        return
    click.echo(tmap.encode())


def _job_taskmap(jobid):
    """The job's task map, from its job shell's shell.start (waited for:
    the virtual clock advances), and its node names in shell rank order."""
    def check(broker):
        if broker.kvs.get_raw(kvs_key(jobid, "eventlog")) is None:
            return "Unable to get job taskmap: no such job"
        job = lookup(broker, jobid)
        entries = broker.kvs.get_eventlog(kvs_key(jobid, "eventlog")) or []
        log = exec_eventlog(broker, job, entries)
        start = next((e for e in log or () if e["name"] == "shell.start"), None)
        if start is not None:
            rset = Rset.from_dict(job.R)
            hosts = [rset.hostname(rank) for rank in sorted(rset.ranks)]
            return taskmapmod.decode_json(start["context"]["taskmap"]), hosts
        if entries and entries[-1]["name"] == "clean" or log is not None:
            return "No taskmap found for job"  # it ended, or started without a job shell
        return None

    try:
        found = instance().wait(check)
    except (WaitStalled, WaitTimeout):
        raise FluxLiteError("waiting for shell.start event: the job cannot start under the virtual clock "
                            "(advance it or cancel the job)") from None
    if isinstance(found, str):
        raise FluxLiteError(found)
    return found
