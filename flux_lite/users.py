"""User names and ids, as the commands take and show them."""

from flux_lite.errors import FluxLiteError

_NAMES: dict[int, str] = {}


def username(uid: int) -> str:
    """The user name of uid, else the uid itself (cached: listings ask once per row)."""
    name = _NAMES.get(uid)
    if name is None:
        import pwd

        try:
            name = pwd.getpwuid(uid).pw_name
        except (KeyError, TypeError):
            name = str(uid)
        _NAMES[uid] = name
    return name


def userid(user: str) -> int | None:
    """-u USER: a uid, a user name, or "all" (None: every user)."""
    if user == "all":
        return None
    try:
        return int(user)
    except ValueError:
        pass
    import pwd

    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        raise FluxLiteError(f"Invalid user {user} specified") from None
