"""flux.job: job IDs and jobspecs (values) and the job API of a handle.

Kept a plain list of imports, one line per module.
"""

from flux.job._ffi import ffi  # noqa: F401
from flux.job.JobID import JobID, id_encode, id_parse  # noqa: F401
from flux.job.Jobspec import Jobspec, JobspecV1, validate_jobspec  # noqa: F401
from flux.job._utils import BatchConfig  # noqa: F401
