"""Helpers shared by the command modules: instance access and argument types."""

import click

from flux_lite.instance import Instance


def state_dir(ctx):
    obj = ctx.find_root().obj or {}
    return obj.get("state_dir")


def instance(ctx=None):
    """This command's instance: opened on first use, kept on click's root
    context, and closed by click when the command ends (whatever way it ends)."""
    ctx = ctx or click.get_current_context()
    root = ctx.find_root()
    inst = root.meta.get(_INSTANCE)
    if inst is None:
        inst = Instance.open(state_dir(ctx))
        root.meta[_INSTANCE] = inst
        root.call_on_close(inst.close)
    return inst


_INSTANCE = "flux_lite.instance"


def session(ctx=None):
    """One command transaction on this command's instance, caught up to now."""
    return instance(ctx).session()


def read_session(ctx=None):
    """A read-only command's transaction: the committed state, no write lock
    (a full session when something has come due since the last command)."""
    return instance(ctx).read_session()


class _ParsedType(click.ParamType):
    """An argument parsed by a library parser; a bad one is a usage error (exit 2).

    parse names the parser as "module:function" (imported on first use, so
    that declaring an option costs nothing); values already parsed pass.
    """

    def __init__(self, name, parse, parsed_type, message):
        self.name = name
        self._parse = parse
        self._parsed_type = parsed_type
        self._message = message

    def convert(self, value, param, ctx):
        if isinstance(value, self._parsed_type):
            return value
        import importlib

        module, _, func = self._parse.partition(":")
        try:
            return getattr(importlib.import_module(module), func)(value)
        except ValueError:
            self.fail(self._message.format(value), param, ctx)


class JobIDType(_ParsedType):
    """A job id in any of Flux's encodings."""

    def __init__(self):
        super().__init__("JOBID", "flux_lite.formats.jobid:decode", int, "invalid JobID value: '{}'")

    def shell_complete(self, ctx, param, incomplete):
        from flux_lite.cli._complete import complete_jobids

        return complete_jobids(ctx, incomplete)


JOBID = JobIDType()
FSD = _ParsedType("FSD", "flux_lite.formats.fsd:parse", float, "invalid Flux standard duration: '{}'")


class JobIDTextType(click.ParamType):
    """A job id kept as typed: Flux's C tools echo it so in messages and
    decode it themselves (`error parsing jobid: "X"`, exit 1)."""

    name = "JOBID"
    shell_complete = JobIDType.shell_complete


JOBID_TEXT = JobIDTextType()



def complete_queues(ctx, param, incomplete):
    """shell_complete for every option or argument that takes queue names
    (the completion module is imported only when completing)."""
    from flux_lite.cli._complete import complete_queues as complete

    return complete(ctx, incomplete)
