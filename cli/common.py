"""Helpers shared by the command modules: this command's instance (argument types: params.py)."""

import os

import click
from flux_lite.cli.words import is_c_command, is_flux, top_command

from flux_lite.errors import FluxLiteError
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
        _check_flux_uri(ctx)
        inst = Instance.open(state_dir(ctx))
        root.meta[_INSTANCE] = inst
        root.call_on_close(inst.close)
    return inst


_INSTANCE = "flux_lite.instance"


def _check_flux_uri(ctx):
    """Under Flux's program name, a FLUX_URI that is no URI (no scheme://)
    fails to connect as Flux's tools fail (its tests check it); a real
    one (local://..., an enclosing Flux's) does not change the instance."""
    uri = os.environ.get("FLUX_URI")
    if not uri or "://" in uri or not is_flux(ctx):
        return
    if is_c_command(top_command(ctx)):
        raise FluxLiteError("flux_open: No such file or directory")
    raise FluxLiteError(f"Unable to connect to Flux: Unable to find connector name '{uri}'")


def session(ctx=None):
    """One command transaction on this command's instance, caught up to now."""
    return instance(ctx).session()


def read_session(ctx=None):
    """A read-only command's transaction: the committed state, no write lock
    (a full session when something has come due since the last command)."""
    return instance(ctx).read_session()
