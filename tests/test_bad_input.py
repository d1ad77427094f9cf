"""Bad input: one line and a non-zero exit, bounded work, state untouched."""


import pytest

GUEST = {"FLUX_HANDLE_USERID": "1234"}
BIG = "18446744073709551615"


def one_error(result):
    assert "Traceback" not in result.output
    # warnings and Flux's INFO hints (valid states, --force) are not errors
    errors = [ln for ln in result.stderr.splitlines() if ln and ": warning: " not in ln and ": INFO: " not in ln]
    assert len(errors) == 1, result.stderr
    return errors[0]


@pytest.mark.parametrize("args", [
    ["jobs", BIG], ["job", "info", BIG, "R"], ["job", "eventlog", BIG], ["cancel", BIG],
    ["update", BIG, "duration=1h"], ["job", "urgency", BIG, "1"], ["job", "raise", BIG],
    ["job", "timeleft", BIG], ["job", "wait-event", BIG, "clean"], ["job", "info", "9223372036854775808", "R"],
])
def test_job_ids_past_sqlite_integers_are_unknown(flux, args):
    result = flux(*args, check=False)
    assert result.exit_code == 1
    one_error(result)


@pytest.mark.parametrize("uid", ["4294967296", "18446744073709551616", "-1"])
def test_uids_past_32_bits_are_refused(flux, uid):
    result = flux("submit", "true", env={"FLUX_HANDLE_USERID": uid}, check=False)
    assert result.exit_code == 1
    assert "FLUX_HANDLE_USERID must be a user id between 0 and 4294967295" in one_error(result)
    assert flux.out("jobs", "-a", "-u", "all") .count("\n") == 1


@pytest.fixture
def files(tmp_path):
    out = {}
    out["binary"] = tmp_path / "binary"
    out["binary"].write_bytes(b"\xff\xfe\x00\x01binary")
    out["date"] = tmp_path / "date.yaml"
    out["date"].write_text("clock:\n  start: 2026-02-30\n")
    out["deepjson"] = tmp_path / "deep.json"
    out["deepjson"].write_text("[" * 100000 + "]" * 100000)
    out["deepyaml"] = tmp_path / "deep.yaml"
    out["deepyaml"].write_text("a: " + "[" * 100000 + "]" * 100000)
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    out["lol"] = tmp_path / "lol.yaml"
    out["lol"].write_text("\n".join(lines) + "\n")
    assert out["lol"].stat().st_size < 1000
    out["zero"] = "/dev/zero"
    return out


@pytest.mark.parametrize("name", ["binary", "date", "deepjson", "deepyaml", "lol", "zero"])
@pytest.mark.parametrize("how", ["config load", "start -c", "job submit"])
def test_hostile_files_are_one_line(flux, tmp_path, files, name, how):
    path = str(files[name])
    before = flux.out("kvs", "get", "config")
    if how == "config load":
        result = flux("config", "load", path, check=False)
    elif how == "start -c":
        result = flux("--state-dir", str(tmp_path / "new"), "start", "-c", path, check=False)
        assert not (tmp_path / "new").exists()
    else:
        result = flux("job", "submit", path, check=False)
    assert result.exit_code == 1, result.output
    one_error(result)
    assert flux.out("kvs", "get", "config") == before
    assert flux.out("jobs", "-a").count("\n") == 1


@pytest.mark.parametrize("args,message", [
    (["submit", "--setattr=exec.test.run_duration=nan", "true"], "invalid Flux standard duration 'nan'"),
    (["submit", "--setattr=exec.test.run_duration=-5s", "true"], "invalid Flux standard duration '-5s'"),
    (["submit", "--setattr=exec.test.run_duration=x", "true"], "invalid Flux standard duration 'x'"),
    (["submit", "--cc=", "true"], "IDset(): Invalid argument: "),
    (["submit", "--cc=0-999999999", "true"], "more than the limit of 100000"),
    (["resource", "drain", ""], "idset is empty"),
    (["resource", "undrain", " "], "idset is empty"),
    # the resource module's words for it (checked before the idset is expanded)
    (["resource", "drain", "0-999999999"], "idset is out of range"),
    (["resource", "status", "--states=bogus"], "Invalid resource state bogus specified"),
    (["jobs", "-o", "{id:>999999999}"], "width"),
    (["jobs", "-o", "{name:.999999999}"], "width"),
    (["start", "--test-size=999999999"], "999999999"),
    # counts past what jansson reads (Flux's job-ingest refuses them): the job failed at alloc
    (["submit", "-N", "9" * 24, "true"], f"node count {'9' * 24} is too large"),
    (["submit", "-n", "9223372036854775808", "true"], "slot count 9223372036854775808 is too large"),
    (["submit", "-c", "9" * 24, "true"], "core count"),
    (["submit", "-g", "9" * 24, "true"], "gpu count"),
])
def test_nonsense_is_refused_at_the_door(flux, args, message):
    before = flux.out("kvs", "ls", "-R")
    result = flux(*args, check=False)
    assert result.exit_code in (1, 2), result.output
    assert message in one_error(result)
    assert flux.out("kvs", "ls", "-R") == before


def test_durations_past_9999_are_stored_and_clamped(flux):
    long = flux.submit("-t", "1e20", "sleep", "inf")
    other = flux.submit("-t", "1h", "--setattr=exec.test.run_duration=1e20s", "sleep", "inf")
    flux("update", other, "duration=1e308")
    assert flux.out("jobs", "-no", "{id} {expiration!D}", long) == f"{long} 9999-12-31T23:59:59\n"
    assert flux.out("job", "timeleft", other).strip().isdigit()
    assert flux.out("jobs", "-a", "-no", "{state}") == "RUN\nRUN\n"
    # nothing falls due before the year 9999: the clock does not jump there
    flux("clock", "next")
    assert flux.now() < 253402300799
    assert flux.out("fsck") == "fsck: ok\n"


def test_times_past_9999_do_not_break_listings_for_everyone(flux, timezone):
    # a guest's -t 1e20 (minutes: 6e21 s, past what timedelta holds) and the
    # clamped expiration (the end of 9999 in UTC is year 10000 in Tokyo)
    timezone("Asia/Tokyo")
    mine = flux.submit("-t", "1h", "sleep", "inf")
    flux.submit("-t", "1e20", "sleep", "inf", env=GUEST)
    out = flux.out("jobs", "-a", "-u", "all", "-no",
                   "{duration!H}|{duration!D}|{expiration!D}|{expiration!d:%Y}|{t_remaining!H}|{duration!F}")
    assert out.splitlines() == [
        "1:00:00|1970-01-01T10:00:00|2026-01-01T10:00:00|2026|1:00:00|1h",
        "999999999 days, 23:59:59|9999-12-31T23:59:59|9999-12-31T23:59:59|9999|2912442 days, 23:59:59|6.944e+16d",
    ]
    assert mine in flux.out("jobs", "-a", "-o", "long")


def test_setattr_values_jansson_cannot_read_are_strings(flux):
    import json

    js = json.loads(flux.out("submit", "--dry-run", "-S", "user.a=NaN", "-S", "user.b=1e400",
                             "-S", "user.c=-Infinity", "-S", "user.d=1.5", "true"))
    assert js["attributes"]["user"] == {"a": "NaN", "b": "1e400", "c": "-Infinity", "d": 1.5}
    flux("kvs", "put", "x.a=NaN", "x.b=1e400", "x.c=[1, Infinity]")
    assert flux.out("kvs", "get", "x.a", "x.b", "x.c") == "NaN\n1e400\n[1, Infinity]\n"
    # what is stored is JSON that strict parsers read
    from test_damage import raw

    assert json.loads(raw(__import__("pathlib").Path(flux.state_dir), "x.c"),
                      parse_constant=lambda c: pytest.fail(c)) == "[1, Infinity]"


def test_deeply_nested_setattr_is_one_line(flux):
    before = flux.out("kvs", "ls", "-R")
    result = flux("submit", "-S", "user.x=" + "[" * 100000, "true", check=False)
    assert result.exit_code == 2
    assert one_error(result).endswith("--setattr: user.x: value nested too deeply")
    assert flux.out("kvs", "ls", "-R") == before


def test_wait_event_that_never_matches_leaves_the_clock(flux):
    # one hour of other jobs' timers ahead
    others = [flux.submit("-t", "1h", "sleep", "inf") for _ in range(2)]
    jobid = flux.submit("-t", "30m", "sleep", "inf")
    t0 = flux.now()
    result = flux.fails("job", "wait-event", jobid, "no-such-event")
    assert "never received" in result.stderr or "cannot arrive" in result.stderr
    assert flux.now() == t0
    assert [flux.state(j) for j in others + [jobid]] == ["RUN"] * 3
    result = flux.fails("job", "wait-event", "-m", "status=99", jobid, "finish")
    assert flux.now() == t0
    # an explicit --timeout lets the time pass, as asked
    flux.fails("job", "wait-event", "-t", "10m", jobid, "no-such-event")
    assert flux.now() == t0 + 600
    # and a wait that succeeds keeps the time it took
    assert flux.out("job", "wait-event", jobid, "clean").endswith("clean\n")
    assert flux.now() == t0 + 1800


@pytest.mark.parametrize("args", [["job", "wait-event", "-t", "1e24", "{id}", "clean"],
                                  ["job", "wait-event", "-t", "inf", "{id}", "clean"],
                                  ["queue", "drain", "-t", "1e300"]])
def test_a_timeout_past_the_clocks_end_is_no_timeout(flux, args):
    # a guest's wait with an absurd timeout moved the shared clock past the
    # year 9999: every later command failed on a damaged instance.clock
    jobid = flux.submit("--urgency=hold", "true", env=GUEST)
    t0 = flux.now()
    # (queue drain is the owner's: job-manager.drain is owner-only in Flux)
    r = flux.fails(*[a.replace("{id}", jobid) for a in args], env=None if args[0] == "queue" else GUEST)
    assert "nothing left to happen under the virtual clock" in one_error(r)
    assert flux.now() == t0
    assert flux.out("fsck") == "fsck: ok\n"


def test_the_virtual_clock_stops_where_job_ids_run_out(flux):
    # a job ID starts with the milliseconds since the instance's epoch and
    # must fit SQLite's integers: 2^39 ms after the epoch (a second before the start)
    limit = 1767225599.0 + ((1 << 39) - 1) / 1000
    r = flux.fails("clock", "advance", "1e10")
    assert r.stderr == ("flux-lite clock: ERROR: cannot advance the clock past 2043-06-03T21:56:52Z: "
                        "job IDs run out there (17.4 years after the instance started)\n")
    held = flux.submit("--urgency=hold", "true")
    long = flux.submit("-t", "7300d", "sleep", "inf")
    # a wait does not run the clock past it either (the 20-year job never ends)
    flux.fails("job", "wait-event", long, "clean")
    flux.fails("job", "wait-event", "-t", "7300d", held, "clean")
    assert flux.now() == 1767225600.0
    flux("clock", "advance", f"{limit - flux.now()}s")
    assert flux.now() == limit
    assert flux.out("jobs", "-no", "{state}", long) == "RUN\n"
    last = flux.submit("true")
    r = flux.fails("submit", "--cc=1-2000", "true")
    assert r.stderr == ("flux-lite submit: ERROR: job IDs have run out: an instance issues them for 17.4 years "
                        "after it starts (a job ID must fit SQLite's 64-bit integers)\n")
    assert sorted(flux.out("jobs", "-a", "-no", "{id}").split()) == sorted([held, long, last])
    assert flux.out("fsck") == "fsck: ok\n"


@pytest.mark.parametrize("args", [["submit", "\udcff"], ["submit", "--setattr=user.\udcff=1", "true"],
                                  ["submit", "--setattr=user.x=\udcff", "true"], ["run", "\udcff"],
                                  ["job", "submit", "{spec}"]])
def test_jobspecs_that_are_not_utf8_are_refused(flux, tmp_path, args):
    # argv that is not UTF-8 arrives surrogate-escaped: stored as JSON, the
    # lone surrogate is what jansson (and so Flux's job-ingest) refuses
    spec = tmp_path / "spec.json"
    spec.write_text(flux.out("submit", "--dry-run", "true").replace('"true"', '"\\udcff"'))
    before = flux.out("kvs", "ls", "-R")
    r = flux.fails(*[a.replace("{spec}", str(spec)) for a in args])
    assert one_error(r).endswith("ERROR: jobspec is not valid UTF-8")
    assert flux.out("kvs", "ls", "-R") == before
    # characters outside the BMP are fine (JSON writes them as surrogate pairs)
    jobid = flux.submit("--job-name", "\U0001f680", "echo", "\U0001f680")
    assert flux.out("jobs", "-no", "{name}", jobid) == "\U0001f680\n"


@pytest.mark.parametrize("module", ["job-exec", "sched-simple"])
def test_module_debug_masks_are_32_bits(flux, module):
    # `--set=4294967295 job-exec` stored a value its own check called
    # damaged: module debug and fsck failed until the key was fixed by hand
    assert flux.out("module", "debug", "--set=4294967295", module) == "0xffffffff\n"
    assert flux.out("module", "debug", "--set=-1", module) == "0xffffffff\n"
    assert flux.out("module", "debug", "--clearbit=-1", module) == "0x0\n"
    assert flux.out("module", "debug", "--setbit=" + "9" * 24, module) == "0xa0ffffff\n"
    assert flux.out("module", "debug", module) == "0xa0ffffff\n"
    assert flux.out("fsck") == "fsck: ok\n"
    flux("module", "debug", "--clear", module)
    assert flux.state(flux.submit("sleep", "inf")) == "RUN"
