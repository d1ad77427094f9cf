"""Argument types of the commands: job ids, durations, queue names.

Kept apart from common.py (the instance) so that a command taking a job id
does not import the instance to declare its arguments.
"""

import click

from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd, jobid


class _ParsedType(click.ParamType):
    """An argument parsed by a library parser; a bad one is a usage error (exit 2).

    parse is the library's parser; values already parsed pass.
    """

    def __init__(self, name, parse, parsed_type, message):
        self.name = name
        self._parse = parse
        self._parsed_type = parsed_type
        self._message = message

    def convert(self, value, param, ctx):
        if isinstance(value, self._parsed_type):
            return value
        try:
            return self._parse(value)
        except ValueError:
            self.fail(self._message.format(value), param, ctx)


class JobIDType(_ParsedType):
    """A job id in any of Flux's encodings."""

    c_jobid_error = True  # Flux's C tools word a bad one `error parsing jobid: "X"`

    def __init__(self):
        super().__init__("JOBID", jobid.decode, int, "invalid JobID value: '{}'")

    def shell_complete(self, ctx, param, incomplete):
        from flux_lite.cli._complete import complete_jobids

        return complete_jobids(ctx, incomplete)


JOBID = JobIDType()
FSD = _ParsedType("FSD", fsd.parse, float, "invalid Flux standard duration: '{}'")


class JobIDTextType(click.ParamType):
    """A job id kept as typed: Flux's C tools echo it so in messages and
    decode it themselves (`error parsing jobid: "X"`, exit 1)."""

    name = "JOBID"
    shell_complete = JobIDType.shell_complete


JOBID_TEXT = JobIDTextType()


def c_jobid(text):
    """A JOBID_TEXT argument decoded as Flux's C tools do: `error parsing
    jobid: "X"` (exit 1) for a bad one."""
    try:
        return jobid.decode(text)
    except ValueError:
        raise FluxLiteError(f'error parsing jobid: "{text}"') from None


def complete_queues(ctx, param, incomplete):
    """shell_complete for every option or argument that takes queue names
    (the completion module is imported only when completing)."""
    from flux_lite.cli._complete import complete_queues as complete

    return complete(ctx, incomplete)


def jobids_and_note(words, note=True):
    """flux-job's leading job ids, then (note=True) the rest as the note:
    ([(typed, id)], note or None). The ids end at the first word that is not
    one ("--" may end them); a command without a note takes only ids
    (`invalid jobid: X`)."""
    ids = []
    words = list(words)
    while words:
        try:
            ids.append((words[0], jobid.decode(words[0])))
        except ValueError:
            break
        words.pop(0)
    if not words:
        return ids, None
    if not note:
        raise FluxLiteError(f"invalid jobid: {words[0]}")
    if words[0] == "--":
        words.pop(0)
    return ids, " ".join(words)


def strtoul(text):
    """C's strtoul(text, NULL, 0) as Flux's C tools call it, unchecked: a
    hex (0x), octal (0) or decimal prefix read until the first other
    character; no digits at all is 0."""
    text = text.lstrip()
    sign = -1 if text[:1] == "-" else 1
    text = text[1:] if text[:1] in "+-" else text
    if text[:2].lower() == "0x" and text[2:3] and text[2:3] in "0123456789abcdefABCDEF":
        base, digits, text = 16, "0123456789abcdefABCDEF", text[2:]
    elif text[:1] == "0":
        base, digits = 8, "01234567"
    else:
        base, digits = 10, "0123456789"
    end = 0
    while end < len(text) and text[end] in digits:
        end += 1
    value = int(text[:end], base) if end else 0
    return (sign * value) & 0xFFFFFFFFFFFFFFFF


class CIntType(click.ParamType):
    """An integer as Flux's C tools read it (strtoul, base 0: 0x2, 010, 5)."""

    name = "MASK"

    def convert(self, value, param, ctx):
        return value if isinstance(value, int) else strtoul(value)


C_INT = CIntType()
