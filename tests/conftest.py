"""Shared fixtures: a fresh virtual-clock instance and a CLI runner for it."""

import json
import os
import time

import pytest
from click.testing import CliRunner

os.environ.setdefault("FLUX_F58_FORCE_ASCII", "1")

try:
    from hypothesis import settings

    # CI must not flake: a fixed example sequence, and no per-example deadline
    # on a loaded 2-core machine. HYPOTHESIS_PROFILE=explore searches afresh.
    settings.register_profile("ci", derandomize=True, deadline=None)
    settings.register_profile("explore", deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    pass


class Flux:
    """Runs flux-lite commands against one state directory through CliRunner."""

    def __init__(self, state_dir):
        self.state_dir = str(state_dir)
        self.runner = CliRunner()

    def __call__(self, *args, input=None, env=None, check=True):
        from flux_lite.cli.main import cli

        full_env = {"FLUX_LITE_STATE_DIR": self.state_dir, "FLUX_F58_FORCE_ASCII": "1"}
        if env:
            full_env.update(env)
        result = self.runner.invoke(cli, [str(a) for a in args], input=input, env=full_env,
                                    catch_exceptions=False)
        if check and result.exit_code != 0:
            raise AssertionError(
                f"flux-lite {' '.join(map(str, args))} exited {result.exit_code}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}"
            )
        return result

    def fails(self, *args, code=1, **kw):
        result = self(*args, check=False, **kw)
        assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
        return result

    def out(self, *args, **kw):
        return self(*args, **kw).stdout

    def submit(self, *args, **kw):
        return self.out("submit", *args, **kw).strip()

    def eventlog(self, jobid):
        """Event names of a job, in order."""
        text = self.out("job", "eventlog", "-f", "json", jobid)
        return [json.loads(line)["name"] for line in text.splitlines()]

    def events(self, jobid):
        text = self.out("job", "eventlog", "-f", "json", jobid)
        return [json.loads(line) for line in text.splitlines()]

    def advance(self, fsd):
        return self.out("clock", "advance", fsd)

    def now(self):
        return float(self.out("clock").split()[0])

    def dmesg(self):
        return [line.split(" ", 1)[1] for line in self.out("dmesg").splitlines()]

    def state(self, jobid):
        return self.out("jobs", "-no", "{state}", jobid).strip()


def make_instance(tmp_path, *args, config=None):
    state = tmp_path / "state"
    flux = Flux(state)
    extra = []
    if config is not None:
        tmp_path.mkdir(parents=True, exist_ok=True)
        path = tmp_path / "config.yaml"
        path.write_text(config)
        extra = ["--config", str(path)]
    flux("start", "--clock=virtual", *args, *extra)
    return flux


@pytest.fixture
def flux(tmp_path):
    """A 4-node instance (2 cores each), virtual clock, sched-simple."""
    return make_instance(tmp_path, "--test-size=4", "--test-cores=2")


@pytest.fixture
def flux_factory(tmp_path):
    def factory(*args, config=None, name="state"):
        return make_instance(tmp_path / name if name != "state" else tmp_path, *args, config=config)

    return factory


@pytest.fixture
def timezone(monkeypatch):
    """timezone("UTC") sets TZ for the rest of the test; the zone is restored after it."""
    def set_tz(name):
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield set_tz
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def utc(timezone):
    timezone("UTC")


@pytest.fixture
def pyflux(flux, monkeypatch):
    """flux-lite's `flux` package (as `flux python` puts it on the path), its
    handles reaching the `flux` fixture's instance: `pyflux.Flux()`."""
    from flux_lite import bindings

    monkeypatch.syspath_prepend(str(bindings.PATH))
    monkeypatch.setenv("FLUX_LITE_STATE_DIR", flux.state_dir)
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "1")
    import flux as package

    assert package.__file__.startswith(str(bindings.PATH))
    return package
