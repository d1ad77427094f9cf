"""Helpers shared by the command modules: this command's instance (argument types: params.py)."""

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
