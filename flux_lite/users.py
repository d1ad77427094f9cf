"""User names and ids, as the commands take and show them."""

from flux_lite.errors import FluxLiteError

_NAMES: dict[int, str] = {}
# the names the selected instance gives some uids before the system's (a
# replay's trace users, "user9": their numbers are not this machine's users)
_GIVEN: dict[int, str] = {}


def give_names(names: dict | None) -> None:
    """Set the names the selected instance gives uids ({uid: name}, keys may be strings)."""
    _GIVEN.clear()
    for uid, name in (names or {}).items():
        if isinstance(name, str) and str(uid).isdigit():
            _GIVEN[int(uid)] = name


def username(uid: int) -> str:
    """The user name of uid, else the uid itself (cached: listings ask once per row)."""
    name = _GIVEN.get(uid) if _GIVEN else None
    if name is None:
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
    for uid, name in _GIVEN.items():
        if name == user:
            return uid
    try:
        return int(user)
    except ValueError:
        pass
    import pwd

    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        raise FluxLiteError(f"Invalid user {user} specified") from None
