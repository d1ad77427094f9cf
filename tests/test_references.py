"""Code and tests refer only to what is in the repository (and to public Flux
sources and RFCs): no section numbers of notes kept elsewhere, no issue
numbers, no paths outside the checkout. A reader of the tree must be able to
follow every reference."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent

# what a reference to an outside document looks like
OUTSIDE = re.compile(
    r"\bspec\s*§|\bspec [0-9]+\.[0-9]"      # sections of a spec document
    r"|\bchecklist\b|(?-i:\bDESIGN\b)"      # notes and design documents
    r"|\bissue #?[0-9]+|\(issue\b"          # tracker issues
    r"|\.\./shared\b|/work/shared\b|\bshared/(?:reference|spec|data)\b"  # paths outside the checkout
    r"|\b[0-9]{2}-[a-z0-9-]+\.txt\b",       # recorded transcripts kept elsewhere
    re.IGNORECASE,
)


def _sources():
    for top in ("flux_lite", "cli", "tests"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.resolve() != pathlib.Path(__file__).resolve():
                yield path


def test_no_references_outside_the_repository():
    found = []
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_pattern_finds_what_it_should():
    for text in ("(spec 4.6)", "spec §1", "issue 11", "(issue", "../shared/reference/x", "in shared/reference",
                 "04-housekeeping.txt", "DESIGN decision 2", "the spec checklist"):
        assert OUTSIDE.search(text), text
    for text in ("RFC 27", "jobspec 1.0", "flux-core's t2201-job-cmd.t", "format spec", "issue a request"):
        assert not OUTSIDE.search(text), text
