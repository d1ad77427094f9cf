"""flux-lite start: create an instance, or run a command inside a temporary one."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import click
from flux_lite.cli.common import state_dir
from flux_lite.cli.dmesg import write_log
from flux_lite.cli.dump import max_size_option, restore_archive
from flux_lite.cli.words import flux_environment, prog

from flux_lite import config as configmod
from flux_lite.errors import FluxLiteError, UsageError
from flux_lite.formats import submitopts
from flux_lite.formats.hostlist import Hostlist
from flux_lite.connector import Server
from flux_lite.instance import Instance, resolve_state_dir

# bounds that keep one start within seconds and megabytes
MAX_NODES = 100000
MAX_PER_NODE = 4096


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-s", "--test-size", type=click.IntRange(min=1, max=MAX_NODES), default=None,
              help=f"Number of nodes (default 1, at most {MAX_NODES}).")
@click.option("--test-hosts", metavar="HOSTLIST", help="Host names of the nodes (default node[0-N-1]).")
@click.option("--test-cores", type=click.IntRange(min=1, max=MAX_PER_NODE), default=4, show_default=True,
              help="Cores per node.")
@click.option("--test-gpus", type=click.IntRange(min=0, max=MAX_PER_NODE), default=0, show_default=True,
              help="GPUs per node.")
@click.option("-c", "--config", "--config-path", "config_file", metavar="FILE|DIR", type=click.Path(),
              help="Instance configuration: a TOML, YAML or JSON file, or a directory of *.toml files "
                   "(--config-path: Flux's name).")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VAL|FILE",
              help="Set configuration KEY to VAL (JSON, else a string), or merge a .toml/.json FILE, over -c's.")
@click.option("--clock", type=click.Choice(["real", "virtual"]), default=None, help="Clock mode (default real).")
@click.option("-f", "--force", is_flag=True, help="Replace an existing instance.")
@click.option("--restore", "restore", metavar="ARCHIVE", type=click.Path(dir_okay=False, allow_dash=True),
              help="Start from a Flux KVS archive (flux dump or flux-lite dump; - for stdin).")
@click.option("-S", "--setattr", "attrs", metavar="ATTR=VAL", multiple=True,
              help="Set a broker attribute: log-filename=FILE (write the instance log to FILE at exit).")
@max_size_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def start(ctx, test_size, test_hosts, test_cores, test_gpus, config_file, confs, clock, force, restore, attrs,
          max_size, command):
    """Create a persistent instance, or run COMMAND in a temporary one.

    Without COMMAND the instance is created in the selected state directory.
    With COMMAND a temporary instance is created, COMMAND runs with
    FLUX_LITE_STATE_DIR pointing at it and a `flux` command (flux-lite
    speaking as Flux) first on PATH and FLUX_URI naming the instance's
    broker socket (for programs linked against libflux), the instance is
    removed afterwards and flux-lite exits with COMMAND's status.
    """
    log_filename = None
    for attr in attrs:
        name, eq, value = attr.partition("=")
        if name != "log-filename" or not eq or not value:
            raise UsageError(f"-S {attr}: the only broker attribute flux-lite sets is log-filename=FILE")
        log_filename = value
    cfg = configmod.load_file(config_file) if config_file else {}
    for value in confs:
        # (Flux's --conf: a fake-resources.nnodes=4 on the command line)
        try:
            cfg = submitopts.conf_update(cfg, value)
        except (ValueError, TypeError) as exc:
            raise FluxLiteError(str(exc)) from None
    size = test_size
    if size is None:
        size = 1
        if test_hosts:
            size = len(Hostlist.parse(test_hosts))
            if size > MAX_NODES:
                raise click.BadParameter(f"{size} hosts is more than {MAX_NODES}", param_hint="'--test-hosts'")
    kwargs = dict(config=cfg, size=size, hosts=test_hosts, cores=test_cores, gpus=test_gpus, clock=clock,
                  # flux-core's rc1 loads no scheduler under FLUX_SCHED_MODULE=none (its tests load their own)
                  load_scheduler=os.environ.get("FLUX_SCHED_MODULE") != "none")

    def create(path, force=False):
        try:
            return _create(path, force)
        except FluxLiteError as exc:
            # as the broker's log: the failing module's error, then start fails
            if log_filename is not None:
                write_log(log_filename, [(time.time(), getattr(exc, "log_name", "broker"), "err", str(exc))])
            raise

    def _create(path, force):
        if restore is None:
            return Instance.create(path, force=force, **kwargs)

        # the archive's resource/R, unless resources are asked for explicitly
        explicit = test_size is not None or test_hosts
        resources = dict(size=size, hosts=test_hosts, cores=test_cores, gpus=test_gpus) if explicit else None
        # quiet, as the restore Flux's rc1 runs for -Scontent.restore
        return restore_archive(ctx, restore, quiet=True, force=force, clock=clock,
                               config=cfg if config_file or confs else None, resources=resources, target=path,
                               max_size=max_size)

    if not command:
        path = resolve_state_dir(state_dir(ctx))
        inst = create(path, force=force)
        if log_filename is not None:
            write_log(log_filename, inst.read_log())
        inst.close()
        return
    tmp = tempfile.mkdtemp(prefix="flux-lite-")
    try:
        create(tmp, force=True).close()
        # `flux` in COMMAND is flux-lite on this instance, as `flux start` makes it;
        # programs linked against libflux reach it through the broker socket
        with Server.of_instance(tmp) as server:
            env = dict(os.environ, **flux_environment(tmp), FLUX_URI=server.uri)
            try:
                rc = subprocess.call(list(command), env=env)
            except OSError as exc:
                click.echo(f"{prog('start')}: {command[0]}: {exc.strerror}", err=True)
                rc = 127
        if log_filename is not None:
            inst = Instance.open(tmp)
            try:
                write_log(log_filename, inst.read_log())
            finally:
                inst.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(rc if rc >= 0 else 128 - rc)


@click.command(context_settings={"allow_interspersed_args": False})
@click.option("-c", "--config-path", "config_path", metavar="PATH", type=click.Path(),
              help="Configuration: a TOML file or a directory of *.toml files.")
@click.option("-S", "--setattr", "attrs", metavar="ATTR=VAL", multiple=True,
              help="Set a broker attribute (accepted; flux-lite has none to set).")
@click.option("-v", "--verbose", is_flag=True, help="Be annoyingly informative (accepted).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def broker(ctx, config_path, attrs, verbose, command):
    """Run one broker, a one-node instance, and COMMAND in it (as `flux broker`).

    The instance is temporary, as with `flux start COMMAND`: one node named
    after this host, with this machine's cores, the configuration from
    --config-path; flux-lite exits with COMMAND's status (a shell without one).
    """
    import socket

    host = socket.gethostname().split(".")[0] or "localhost"
    ctx.invoke(start, test_size=1, test_hosts=host, test_cores=min(os.cpu_count() or 1, MAX_PER_NODE),
               test_gpus=0, config_file=config_path, clock=None, force=False, restore=None, max_size=None,
               command=command or (os.environ.get("SHELL") or "/bin/sh",))
