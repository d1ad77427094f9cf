"""flux.job: job IDs and jobspecs (values) and the job API of a handle.

Kept a plain list of imports, one line per module.
"""

from flux.job._ffi import ffi  # noqa: F401
from flux.job.JobID import JobID, id_encode, id_parse  # noqa: F401
from flux.job.Jobspec import Jobspec, JobspecV1, validate_jobspec  # noqa: F401
from flux.job._utils import BatchConfig  # noqa: F401
from flux.job.submit import SubmitFuture, submit, submit_async, submit_get_id  # noqa: F401
from flux.job.wait import JobResultFuture, JobWaitFuture, JobWaitResult, result, result_async, wait, wait_async, wait_get_status  # noqa: F401,E501
from flux.job.event import MAIN_EVENTS, EventLogEvent, JobEventWatchFuture, JobException, event_wait, event_watch, event_watch_async  # noqa: F401,E501
from flux.job.kill import cancel, cancel_async, job_raise, job_raise_async, kill, kill_async, raise_, raise_async, set_urgency, set_urgency_async  # noqa: F401,E501
from flux.job.info import JobInfo  # noqa: F401
from flux.job.list import JobList, JobListIdRPC, JobListRPC, get_job, job_list, job_list_id, job_list_inactive  # noqa: F401,E501
from flux.job.kvslookup import JobInfoLookupRPC, JobKVSLookup, job_info_lookup, job_kvs_lookup  # noqa: F401
from flux.job.stats import JobStats  # noqa: F401
from flux.job.timeleft import timeleft  # noqa: F401
from flux.job.kvs import job_kvs, job_kvs_guest  # noqa: F401
