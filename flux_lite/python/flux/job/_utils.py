"""flux.job._utils: the helpers of Flux's job commands that scripts import
(decode_signal, decode_duration, BatchConfig...), over flux_lite.formats.submitopts."""

from __future__ import annotations

from typing import Any

from flux_lite.formats import submitopts as _opts

decode_signal = _opts.decode_signal
decode_duration = _opts.decode_duration
parse_signal_option = _opts.signal_option
get_filtered_environment = _opts.filtered_environment
get_filtered_rlimits = _opts.filtered_rlimits
get_rlimits = _opts.rlimits
list_split = _opts.split_commas


def dependency_array_create(uris: Any) -> list[dict]:
    """RFC 26 dependency entries of ``--dependency`` URIs."""
    return [_opts.uri_entry(uri, "dependency") for uri in uris]


def parse_jobspec_keyval(label: str, keyval: str) -> tuple[str, Any]:
    """``KEY[=VAL]`` of ``--setopt``/``--setattr`` (VAL as JSON where it parses)."""
    return _opts.parse_keyval(label, keyval)


class BatchConfig:
    """A broker config built from successive ``--conf`` values (``config``:
    None until the first update): KEY=VAL, JSON/TOML text with a newline, a
    .toml/.json file, or a named config in the XDG config path."""

    def __init__(self) -> None:
        self.config: dict | None = None

    def update(self, value: str) -> BatchConfig:
        """Merge one ``--conf`` value into ``config``; returns self."""
        self.config = _opts.conf_update(self.config, value)
        return self

    def get(self, key: str, default: Any = None) -> Any:
        """The value at a dotted key, or default."""
        return _opts.get_treedict(self.config or {}, key, default)
