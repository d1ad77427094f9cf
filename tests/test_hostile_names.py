"""User-supplied strings never reach a terminal raw."""

import pytest

from flux_lite.formats.outputformat import escape_controls

GUEST = {"FLUX_HANDLE_USERID": "1234"}
EVIL = "\x1b]0;pwned\x07\x1b[2J\u202eevil\x9b"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil\\x9b"


def test_escape_controls_keeps_printable_text():
    assert escape_controls("plain name é 日本 🚀") == "plain name é 日本 🚀"
    assert escape_controls("tab\there\nnl\x00\x7f") == "tab\\x09here\\x0anl\\x00\\x7f"
    assert escape_controls(EVIL) == SHOWN


@pytest.mark.parametrize("fmt", ["{name}", "{name:<10.10+}", "+:{name}", "{name:>30h}"])
def test_guest_job_name_is_escaped_in_owner_listing(flux, fmt):
    jobid = flux.submit("--job-name", EVIL, "true", env=GUEST)
    out = flux.out("jobs", "-a", "-no", fmt, jobid)
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out and "\x9b" not in out
    assert out.strip().startswith(SHOWN[:8]) or out.strip().startswith(SHOWN[:10].strip())


def test_default_listing_escapes_names(flux):
    flux.submit("--job-name", EVIL, "true", env=GUEST)
    out = flux.out("jobs", "-a", "-u", "all")
    assert "\x1b" not in out and "\\x1b" in out


def test_exception_note_is_escaped(flux):
    jobid = flux.submit("-t", "1h", "sleep", "inf")
    flux("job", "raise", "--type=oops", jobid, "note\x1b[31mred")
    out = flux.out("jobs", "-a", "-no", "{exception.note}", jobid)
    assert out == "note\\x1b[31mred\n"


@pytest.mark.parametrize("args", [[], ["-H"], ["-T", "iso"], ["-f", "json"]])
def test_guest_exception_note_is_escaped_in_the_eventlog(flux, args):
    import json

    jobid = flux.submit("-t", "1h", "sleep", "inf", env=GUEST)
    flux("job", "raise", "--severity=3", jobid, EVIL, env=GUEST)
    out = flux.out("job", "eventlog", *args, jobid)
    last = out.splitlines()[-1]
    assert last.isprintable(), last
    # JSON escapes: the line still reads back to the guest's exact note
    if args == ["-f", "json"]:
        assert json.loads(last)["context"]["note"] == EVIL
    else:
        assert 'note="\\u001B]0;pwned\\u0007\\u001B[2J\\u202Eevil\\u009B"' in last
    waited = flux.out("job", "wait-event", "-v", jobid, "exception")
    assert waited.isprintable() or all(line.isprintable() for line in waited.splitlines())
