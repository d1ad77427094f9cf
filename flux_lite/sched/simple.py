"""sched-simple: sched-fifo with the C sched-simple's debug hooks.

Flux's sched-simple is its sched-fifo module (flux_lite/sched/fifo.py) plus
the test interface of the C module it replaced: the debug bits of
``flux module debug`` (DEBUG_FAIL_ALLOC, DEBUG_ANNOTATE_REASON_PENDING,
DEBUG_EXPIRATION_UPDATE_DENY, see sched/base.py) and the
``test-hello-nopartial`` argument.
"""

from flux_lite.sched.base import COMMON_ARGS, DEBUG_ANNOTATE_REASON_PENDING, ModuleArg
from flux_lite.sched.fifo import FifoScheduler
from flux_lite.sched.registry import register


@register
class SimpleScheduler(FifoScheduler):
    name = "sched-simple"
    policies = ("fcfs",)
    description = "FCFS (policy fcfs)"
    module_args = COMMON_ARGS + (
        ModuleArg("test-hello-nopartial", lambda _v: {"test-hello-nopartial": True},
                  "hello without partial-ok (Flux's test option)", flag=True),
    )
    policy = "fcfs"
    debug_hooks = True

    def forecast(self):
        if self.debug_flags & DEBUG_ANNOTATE_REASON_PENDING:
            # why each job waits, instead of when it may start
            self.forecasts += 1
            for ahead, pj in enumerate(self.sorted_queue()):
                self.annotate(pj, {"reason_pending": "insufficient resources", "jobs_ahead": ahead,
                                   "t_estimate": None})
            return
        super().forecast()

    def estimate_annotation(self, estimate):
        # (clearing what the debug bit's annotations said)
        return {"t_estimate": estimate, "reason_pending": None, "jobs_ahead": None}
