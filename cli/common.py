"""Helpers shared by the command modules: instance access and argument types."""

import contextlib

import click


def state_dir(ctx):
    obj = ctx.find_root().obj or {}
    return obj.get("state_dir")


def open_instance(ctx=None):
    from flux_lite.instance import Instance

    ctx = ctx or click.get_current_context()
    return Instance.open(state_dir(ctx))


@contextlib.contextmanager
def session(ctx=None):
    """Open the instance and run one command transaction (caught up to now)."""
    inst = open_instance(ctx)
    try:
        with inst.session() as broker:
            yield broker
    finally:
        inst.close()


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


def echo_lines(lines):
    if lines:
        click.echo("\n".join(lines))


_USERNAMES = {}


def username(uid):
    """User name of uid (cached: listings ask once per row)."""
    name = _USERNAMES.get(uid)
    if name is None:
        name = _USERNAMES[uid] = _username(uid)
    return name


def _username(uid):
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, TypeError):
        return str(uid)
