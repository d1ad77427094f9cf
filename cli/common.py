"""Helpers shared by the command modules: instance access and argument types."""

import click


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
        from flux_lite.instance import Instance

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


class JobIDType(click.ParamType):
    """A job id in any of Flux's encodings; bad ones are usage errors (exit 2)."""

    name = "JOBID"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        from flux_lite.formats.jobid import decode

        try:
            return decode(value)
        except ValueError:
            self.fail(f"invalid JobID value: '{value}'", param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from flux_lite.cli._complete import complete_jobids

        return complete_jobids(ctx, incomplete)


JOBID = JobIDType()


class JobIDTextType(click.ParamType):
    """A job id kept as typed: Flux's C tools echo it so in messages and
    decode it themselves (`error parsing jobid: "X"`, exit 1)."""

    name = "JOBID"

    def shell_complete(self, ctx, param, incomplete):
        from flux_lite.cli._complete import complete_jobids

        return complete_jobids(ctx, incomplete)


JOBID_TEXT = JobIDTextType()


class FSDType(click.ParamType):
    name = "FSD"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        from flux_lite.formats.fsd import parse

        try:
            return parse(value)
        except ValueError:
            self.fail(f"invalid Flux standard duration: '{value}'", param, ctx)


FSD = FSDType()

