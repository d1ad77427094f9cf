"""flux.job.info: JobInfo, a job as job-list (or a job's result) describes it."""

from __future__ import annotations

import json
import os
import pwd
import signal
import time
from typing import Any

from flux.job.JobID import JobID
from flux_lite.job_manager.job import (
    CANCELED,
    DEPEND,
    FAILED,
    INACTIVE,
    PRIORITY,
    RESULT_NAMES,
    RESULT_SHORT,
    SCHED,
    STATE_NAMES,
    STATE_SHORT,
)


class ExceptionInfo:
    """A job's exception: occurred, severity, type, note ("" when unknown)."""

    def __init__(self, occurred: Any, severity: Any, _type: Any, note: Any) -> None:
        self.occurred = occurred
        self.severity = severity
        self.type = _type
        self.note = note


class EmptyObject:
    """What an absent annotation reads as: empty in every format."""

    def __getattr__(self, attr: str) -> EmptyObject:
        return EmptyObject()

    def __repr__(self) -> str:
        return ""

    def __str__(self) -> str:
        return ""

    def __format__(self, spec: str) -> str:
        return "".__format__(spec.rstrip("bcdoxXeEfFgGn%"))


class AnnotationsInfo:
    """Annotations by attribute (annotations.sched.resource_summary...)."""

    def __init__(self, annotations: dict) -> None:
        self.annotationsDict = annotations
        for key, value in annotations.items():
            if isinstance(key, str) and key.isidentifier():
                setattr(self, key, AnnotationsInfo(value) if isinstance(value, dict) else value)

    def __repr__(self) -> str:
        return json.dumps(self.annotationsDict) if self.annotationsDict else ""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return EmptyObject()


class JobInfo:
    """A job's attributes (a job-list.list or list-id answer, or a job's
    result), with those derived from them: state and result names,
    username, runtime, status, returncode, exception, annotations..."""

    defaults = {
        "t_depend": 0.0, "t_priority": 0.0, "t_sched": 0.0, "t_run": 0.0, "t_cleanup": 0.0, "t_inactive": 0.0,
        "duration": 0.0, "expiration": 0.0, "name": "", "cwd": "", "queue": "", "project": "", "bank": "",
        "ntasks": "", "ncores": "", "nnodes": "", "priority": "", "ranks": "", "nodelist": "", "success": "",
        "result": "", "waitstatus": "",
    }
    properties = ("id", "t_submit", "t_remaining", "state", "result", "username", "userid", "urgency", "runtime",
                  "status", "returncode", "dependencies")

    def __init__(self, info_resp: dict) -> None:
        values = dict(self.defaults)
        values.update(info_resp)
        values["id"] = JobID(values["id"])
        if "state" in values:
            values["state_id"] = values.pop("state")
        values["result_id"] = values.pop("result")
        values["exception"] = ExceptionInfo(values.get("exception_occurred", ""),
                                            values.get("exception_severity", ""),
                                            values.get("exception_type", ""), values.get("exception_note", ""))
        values["annotations"] = AnnotationsInfo(values.get("annotations", {}))
        values["sched"] = values["annotations"].sched
        values["user"] = values["annotations"].user
        values["dependencies"] = list(values.get("dependencies", []))
        self.__dict__.update({f"_{key}": value for key, value in values.items()})

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        try:
            return self.__dict__[f"_{attr}"]
        except KeyError:
            raise AttributeError(f"invalid JobInfo attribute '{attr}'") from None

    # -- derived attributes -------------------------------------------------------

    @property
    def state(self) -> str:
        return STATE_NAMES.get(self.state_id, "")

    @property
    def state_single(self) -> str:
        return STATE_SHORT.get(self.state_id, "")

    @property
    def result(self) -> str:
        return RESULT_NAMES.get(self.result_id, "") if self.result_id != "" else ""

    @property
    def result_abbrev(self) -> str:
        return RESULT_SHORT.get(self.result_id, "") if self.result_id != "" else ""

    @property
    def username(self) -> str:
        try:
            return pwd.getpwuid(self.userid).pw_name
        except (KeyError, TypeError, AttributeError):
            return str(getattr(self, "_userid", ""))

    def get_runtime(self) -> float:
        if self.t_cleanup > 0 and self.t_run > 0:
            return self.t_cleanup - self.t_run
        if self.t_run > 0:
            return time.time() - self.t_run
        return 0.0

    @property
    def runtime(self) -> float:
        return self.get_runtime()

    def get_remaining_time(self) -> float:
        if self.status != "RUN" or not self.expiration:
            return 0.0
        return max(self.expiration - time.time(), 0.0)

    @property
    def t_remaining(self) -> float:
        return self.get_remaining_time()

    @property
    def status(self) -> str:
        state = getattr(self, "_state_id", INACTIVE if self.result_id != "" else 0)
        return self.result if state == INACTIVE else STATE_NAMES.get(state, "")

    @property
    def status_abbrev(self) -> str:
        state = getattr(self, "_state_id", INACTIVE if self.result_id != "" else 0)
        return self.result_abbrev if state == INACTIVE else STATE_SHORT.get(state, "")

    @property
    def returncode(self) -> int | str:
        """The largest exit code of the job's shells (or the negative signal
        that ended one); -128 when canceled before it ran, 1 when it failed
        without running; "" while active."""
        status = self.waitstatus
        if not isinstance(status, int):
            if self.result_id == CANCELED:
                return -128
            if self.result_id == FAILED:
                return 1
            return ""
        if os.WIFSIGNALED(status):
            return -os.WTERMSIG(status)
        return os.WEXITSTATUS(status)

    @property
    def contextual_info(self) -> str:
        state = getattr(self, "_state_id", 0)
        if state == PRIORITY:
            return "priority-wait"
        if state == DEPEND:
            return f"depends:{','.join(self.dependencies)}"
        if state == SCHED:
            estimate = self.sched.t_estimate
            if isinstance(estimate, (int, float)):
                eta = estimate - time.time()
                from flux_lite.formats.fsd import format_fsd

                return "eta:now" if eta < 0 else f"eta:{format_fsd(eta)}"
            if self.urgency == 0:
                return "held"
            if self.priority == 0:
                return "priority-hold"
            return ""
        return self.nodelist

    @property
    def contextual_time(self) -> float:
        return self.duration if self.state in ("PRIORITY", "DEPEND", "SCHED") else self.runtime

    @property
    def inactive_reason(self) -> str:
        if self.state != "INACTIVE":
            return ""
        exc = self.exception
        if self.result == "CANCELED":
            return f"Canceled: {exc.note}" if exc.occurred and exc.type == "cancel" and exc.note else "Canceled"
        if self.result == "TIMEOUT":
            return "Timeout"
        rc = self.returncode
        if self.result == "FAILED":
            if exc.occurred and exc.type != "exec" and exc.severity == 0:
                return f"Exception: type={exc.type}" + (f" note={exc.note}" if exc.note else "")
            if isinstance(rc, int) and rc > 128:
                try:
                    return signal.strsignal(rc - 128) or f"Signaled {rc - 128}"
                except ValueError:
                    return f"Signaled {rc - 128}"
            words = {126: "Command invoked cannot execute", 127: "command not found", 128: "Invalid argument to exit"}
            if rc in words:
                return words[rc]
        return f"Exit {rc}"

    def to_dict(self, filtered: bool = True) -> dict:
        """The attributes as a dict (jobid: the F58 form). filtered leaves
        out empty values and unset times, runtime and expiration."""
        result: dict[str, Any] = {}
        for attr in (*self.defaults, *self.properties):
            try:
                value = getattr(self, attr)
            except AttributeError:
                continue
            if value is not None:
                result[attr] = int(value) if attr == "id" else value
        result["jobid"] = self.id.f58
        result["annotations"] = self.annotations.annotationsDict
        result["exception"] = dict(vars(self.exception))
        if not filtered:
            return result
        for key in list(result):
            value = result[key]
            if value == "" or ((key.startswith("t_") or key in ("runtime", "expiration")) and value == 0):
                del result[key]
        if not result["exception"]["occurred"]:
            result["exception"] = {"occurred": False}
        return result
