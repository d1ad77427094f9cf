"""The listing layer: one row type, one Listing per table, and the same
-o/-n/--json/`-o help`/"Error in user format" behaviour in every listing command."""

import json

import pytest

from flux_lite.listing import Listing, Row
from flux_lite.listing.housekeeping import HOUSEKEEPING
from flux_lite.listing.jobs import JOBS, JobID
from flux_lite.listing.resources import RESOURCE_LIST, RESOURCE_STATUS

LISTINGS = {
    "jobs": (("jobs", "-a"), JOBS),
    "resource list": (("resource", "list"), RESOURCE_LIST),
    "resource status": (("resource", "status"), RESOURCE_STATUS),
    "housekeeping list": (("housekeeping", "list"), HOUSEKEEPING),
}


def test_row_fields_by_key_and_attribute():
    row = Row(id=JobID(1234), nested=Row(n=3))
    assert row.nested.n == 3 and row["nested"]["n"] == 3
    with pytest.raises(AttributeError):
        row.missing  # noqa: B018 - the lookup is the test
    assert JobID(1234).dec == "1234" and format(JobID(1234), ">6") == f"{JobID(1234).f58:>6}"
    with pytest.raises(AttributeError):
        JobID(1).nosuchencoding  # noqa: B018


def test_listing_formats_and_merge():
    listing = Listing("flux-test", {"default": ("Default", "{a:>3} {b}")}, {"a": "A", "b": "B"})
    assert listing.format_string("default") == "{a:>3} {b}"
    assert listing.format_string("{b}") == "{b}"
    assert listing.help() == "\nConfigured flux-test output formats:\n\n  default      Default\n"
    rows = [Row(a=1, b="x"), Row(a=2, b="x")]
    assert listing.lines(listing.default, rows) == ["  A B", "  1 x", "  2 x"]
    seen = []

    def merge(items, fields):
        seen.append(fields)
        return items[:1]

    assert listing.lines("{b}", rows, no_header=True, merge=merge) == ["x"]
    assert seen == [["b"]]
    with pytest.raises(ValueError, match="Unknown format field: nope"):
        listing.lines("{nope}", rows)


@pytest.mark.parametrize("name", sorted(LISTINGS))
def test_every_listing_command_shares_the_options(flux, name):
    args, listing = LISTINGS[name]
    flux.submit("-n1", "sleep", "inf")
    assert flux.out(*args, "-o", "help") == listing.help()  # no blank line after, as Flux prints it
    full = flux.out(*args).splitlines()
    assert flux.out(*args, "-n").splitlines() == full[1:]
    assert flux.out(*args, "-o", "default").splitlines() == full
    assert flux.out(*args, "-o", listing.default).splitlines() == full
    r = flux.fails(*args, "-o", "{nosuchfield}")
    # flux-resource gives the error plainly, flux-jobs and flux-housekeeping in a user format's words
    prefix = "Error in user format: " if listing.user_format_errors else ""
    assert r.stderr.endswith(f": ERROR: {prefix}Unknown format field: nosuchfield\n")
    assert r.stdout == ""


def test_json_documents(flux):
    jobid = flux.submit("-n1", "sleep", "inf")
    doc = json.loads(flux.out("jobs", "--json", jobid))
    assert isinstance(doc["id"], int) and doc["status"] in ("SCHED", "RUN")
    res = json.loads(flux.out("resource", "list", "--json"))["resources"]
    assert [r["state"] for r in res] == ["free", "allocated", "down"]
    assert set(json.loads(flux.out("housekeeping", "list", "--json"))) == {"running", "config"}
