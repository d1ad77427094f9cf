"""Permission rules live in the library (flux_lite.access, flux_lite.admin):
one message for owner-only requests, the same answer for CLI and library
callers, and state untouched when a request is refused."""

import pytest

from flux_lite import access, admin
from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance

GUEST = {"FLUX_HANDLE_USERID": "1234"}

OWNER_ONLY = [
    (("resource", "drain", "0"), "drain"),
    (("resource", "undrain", "0"), "undrain"),
    (("sched", "reload"), "sched reload"),
    (("module", "load", "sched-backfill"), "module load"),
    (("module", "remove", "sched-simple"), "module remove"),
    (("module", "reload", "sched-simple"), "module reload"),
    (("housekeeping", "kill", "--all"), "housekeeping kill"),
    (("kvs", "put", "a.b=1"), "kvs put"),
]


@pytest.mark.parametrize("args,operation", OWNER_ONLY, ids=[" ".join(a) for a, _ in OWNER_ONLY])
def test_owner_only_commands_share_one_message(flux, args, operation):
    before = flux.out("kvs", "get", "resource.eventlog", check=False)
    r = flux.fails(*args, env=GUEST)
    assert r.stderr.endswith(f": ERROR: Operation not permitted: {operation} is for the instance owner\n")
    assert r.stdout == ""
    assert flux.out("kvs", "get", "resource.eventlog", check=False) == before
    assert flux.out("module", "list").splitlines()[-1].startswith("sched-simple")


def test_guests_list_drained_nodes(flux):
    # resource.status is open to guests in Flux; only draining is owner-only
    flux("resource", "drain", "1", "broken")
    r = flux("resource", "drain", "-no", "{state} {reason} {nodelist}", env=GUEST)
    assert r.stdout == "drained broken node1\n"


def test_config_load_as_guest(flux, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sched:\n  policy: easy\n")
    r = flux.fails("config", "load", str(cfg), env=GUEST)
    assert r.stderr == "flux-lite config: ERROR: Operation not permitted: config load is for the instance owner\n"


def _guest(monkeypatch):
    monkeypatch.setenv("FLUX_HANDLE_USERID", "1234")


def test_library_callers_are_checked_too(flux, monkeypatch):
    """A script calling the library directly gets the CLI's answer."""
    _guest(monkeypatch)
    inst = Instance.open(flux.state_dir)
    try:
        with pytest.raises(FluxLiteError) as info:
            with inst.session() as broker:
                admin.drain(broker, "0", "from a script")
        assert str(info.value) == "Operation not permitted: drain is for the instance owner"
        assert info.value.errno == 1  # EPERM
        with pytest.raises(FluxLiteError, match="sched reload is for the instance owner"):
            with inst.session() as broker:
                admin.sched_reload(broker, policy="easy")
        with pytest.raises(FluxLiteError, match="kvs put is for the instance owner"):
            admin.kvs_put(inst, [("a", 1)])
    finally:
        inst.close()
    monkeypatch.delenv("FLUX_HANDLE_USERID")
    assert flux.out("resource", "list", "-s", "down", "-no", "{nnodes}").strip() == "0"
    assert flux.out("kvs", "get", "a", check=False) == ""


def test_owner_library_call_acts(flux):
    inst = Instance.open(flux.state_dir)
    try:
        with inst.session() as broker:
            admin.drain(broker, "node1", "maintenance")
        with inst.session() as broker:
            rows = admin.drained(broker)
    finally:
        inst.close()
    assert [(state, rank, reason, nodes) for _t, state, rank, reason, nodes in rows] == [
        ("drained", 1, "maintenance", "node1")]


def test_job_rules():
    class Who:
        def __init__(self, userid, owner):
            self.userid, self.is_owner = userid, owner

    owner, guest = Who(1000, True), Who(1234, False)
    assert access.may_access(owner, 1234) and access.may_access(guest, 1234)
    assert not access.may_access(guest, 1000)
    with pytest.raises(FluxLiteError, match="^access is restricted to job/instance owner$"):
        access.require_job_access(guest, 1000)
    with pytest.raises(FluxLiteError, match="guests can only raise exceptions on their own jobs"):
        access.check_raise(guest, None)
    access.check_raise(owner, None)
    with pytest.raises(FluxLiteError, match="guests can only adjust urgency <= default"):
        access.check_set_urgency(guest, 1234, 17)
    access.check_set_urgency(guest, 1234, 16)
    with pytest.raises(FluxLiteError, match="urgency >16") as info:
        access.check_submit(guest, 31, novalidate=False)
    assert info.value.errno == 22
    with pytest.raises(FluxLiteError, match="FLUX_JOB_NOVALIDATE"):
        access.check_submit(guest, 16, novalidate=True)
    access.check_submit(owner, 31, novalidate=True)
    with pytest.raises(FluxLiteError, match="immutable"):
        access.check_update(guest, 1234, immutable=True)
    assert access.freezes_job(owner, 1234) and not access.freezes_job(owner, 1000)
    assert access.visible_userid(owner) is None and access.visible_userid(guest) == 1234


def test_no_cli_module_checks_permissions():
    """The CLI holds no permission logic: no identity or role test in cli/."""
    import pathlib

    import flux_lite.cli

    root = pathlib.Path(flux_lite.cli.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        for word in ("is_owner", "rolemask", "not permitted", "owner credentials", "access.require_", "access.check"):
            assert word not in text, (path.name, word)


# -- the command runner --------------------------------------------------------------


def test_instance_closed_by_click_context(flux, monkeypatch):
    """Every command's instance is opened once and closed when click's context ends,
    also when the command fails."""
    opened, closed = [], []
    real_open, real_close = Instance.open.__func__, Instance.close

    def counting_open(cls, state_dir=None):
        inst = real_open(cls, state_dir)
        opened.append(inst)
        return inst

    def counting_close(self):
        closed.append(self)
        real_close(self)

    monkeypatch.setattr(Instance, "open", classmethod(counting_open))
    monkeypatch.setattr(Instance, "close", counting_close)
    jobid = flux.submit("-n1", "--setattr=exec.test.run_duration=5s", "true")
    flux("job", "wait-event", jobid, "clean")
    flux.fails("resource", "drain", "0", env=GUEST)
    flux.fails("job", "info", jobid, "nosuchkey")
    flux("dmesg")
    flux("clock", "advance", "1s")
    assert len(opened) == 6
    assert closed == opened


def test_setattr_without_value_is_one(flux):
    """-S KEY without =VAL sets 1, as flux submit does."""
    import json

    js = json.loads(flux.out("submit", "--dry-run", "-S", "foo", "-S", "user.bar", "true"))
    assert js["attributes"]["system"]["foo"] == 1
    assert js["attributes"]["user"]["bar"] == 1
    r = flux.fails("submit", "--dry-run", "-S", "=1", "true", code=2)
    assert "--setattr: expected KEY=VAL, got '=1'" in r.stderr


def test_owner_only_operations_are_checked_where_contributing_says():
    """CONTRIBUTING.md's table of owner-only operations names every module
    that calls access.require_owner, and no other module calls it."""
    import ast
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    text = (root / "CONTRIBUTING.md").read_text()
    table = text[text.index("| owner-only operations | checked in |"):]
    table = table[:table.index("\n\n")]
    documented = set(re.findall(r"\| `([\w/]+\.py)` \|", table))
    callers = set()
    for path in (root / "flux_lite").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "require_owner":
                callers.add(str(path.relative_to(root / "flux_lite")))
    assert callers == documented
