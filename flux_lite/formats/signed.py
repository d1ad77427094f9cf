"""J, the signed jobspec (flux-security): HEADER.PAYLOAD.SIGNATURE.

flux-lite signs with mechanism "none", as Flux does for an unsigned job:
the header is flux-security's kv encoding of version, userid and mechanism
(base64), the payload the jobspec text (base64).
"""

from __future__ import annotations

import base64
import json


def sign_none(payload: str, userid: int) -> str:
    """J as Flux writes it for an unsigned job."""
    header = b"version\0i1\0userid\0i%d\0mechanism\0snone\0" % userid
    return "%s.%s.none" % (base64.b64encode(header).decode(),
                           base64.b64encode(payload.encode()).decode())


def unwrap_J(text: str) -> str | None:
    """The jobspec payload of a signed J (any mechanism), or None when text is not one."""
    parts = text.strip().split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.b64decode(parts[1], validate=True).decode()
        json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return None
    return payload


def signer(text: str) -> int | None:
    """The userid in a signed J's header (None when there is none to read)."""
    try:
        header = base64.b64decode(text.strip().split(".")[0], validate=True)
    except ValueError:
        return None
    fields = header.split(b"\0")
    for key, value in zip(fields[0::2], fields[1::2]):
        if key == b"userid" and value[:1] == b"i":
            try:
                return int(value[1:])
            except ValueError:
                return None
    return None
