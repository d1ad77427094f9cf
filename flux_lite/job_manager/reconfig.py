"""`config load`: replace the live configuration as `flux config load` does.

The new config is validated first; a change to the resources is refused.
Housekeeping settings apply to jobs handed over afterwards. A change of the
instance expiration moves resource.R's expiration, tells the scheduler, and
posts ``resource-update`` to running jobs whose duration is 0 (their
expiration follows the instance's).
"""

import math

from flux_lite import config as configmod
from flux_lite import protocol as rfc27
from flux_lite.errors import ConfigError, FluxLiteError
from flux_lite.formats.jobid import f58
from flux_lite.formats.rset import Rset
from flux_lite.job_manager.job import RUN
from flux_lite.job_manager.queues import reconfigured
from flux_lite.resources import exclude_ranks


def _delta(old, new):
    if old == 0:
        return "-inf"
    if new == 0:
        return "+inf"
    return f"{new - old:+.6g}"


def apply(broker, cfg):
    cfg = configmod.validate(cfg)
    broker.jobtap.check_config(cfg)  # (the loaded plugins' own tables: perilog.so's)
    old = broker.config
    # what defines R (config, path, scheduling) is read once; the other
    # [resource] keys (exclude, verify, noverify...) may change, as in Flux
    defining = ("config", "path", "scheduling")
    old_res = {k: v for k, v in (configmod.get_path(old, "resource") or {}).items() if k in defining}
    new_res = {k: v for k, v in (configmod.get_path(cfg, "resource") or {}).items() if k in defining}
    if old_res != new_res:
        raise ConfigError("resource configuration cannot be changed on a live instance "
                          "(only resource.exclude may change; it applies when the scheduler is next loaded)")
    exclude = configmod.get_path(cfg, "resource.exclude")
    if exclude is not None:
        # refused as Flux's resource module refuses it when it next loads
        exclude_ranks(Rset.from_dict(broker.resources.instance_R), str(exclude))
    old_exp = configmod.get_path(old, "instance.expiration")
    new_exp = configmod.get_path(cfg, "instance.expiration")
    broker.instance.set_config(cfg)
    broker.resources.config_changed()
    if configmod.get_path(cfg, "job-manager.housekeeping") is not None:
        broker.housekeeping.config_loaded()
    if (old.get("queues") or None) != (cfg.get("queues") or None):
        reconfigured(broker)
    if old_exp != new_exp:
        start = broker.instance.meta["start"]
        expiration = 0.0
        if new_exp is not None:
            seconds = configmod._fsd(new_exp, "instance.expiration")
            expiration = 0.0 if math.isinf(seconds) else start + seconds
        set_instance_expiration(broker, expiration)


def set_instance_expiration(broker, expiration):
    res = broker.resources
    previous = res.instance_R["execution"].get("expiration", 0.0) or 0.0
    if abs(previous - expiration) < 1e-5:
        return
    res.set_expiration(expiration)
    sched_loaded = _tell_sched(broker, rfc27.SCHED_RESOURCE_UPDATE, rfc27.resource_update(expiration=expiration))
    jm = broker.jm
    running = [j for j in jm.jobs.values() if j.state == RUN]
    if not running:
        return
    broker.log("job-manager", "info",
               f"resource expiration updated from {previous:.2f} to {expiration:.2f} ({_delta(previous, expiration)})")
    for job in sorted(running, key=lambda j: j.id):
        if job.duration != 0 or not job.R or "expiration" not in job.R.get("execution", {}):
            continue
        old = job.expiration
        jm.post(job, "resource-update", {"expiration": expiration})
        broker.exec.update_expiration(job, expiration)
        if sched_loaded:
            _tell_sched(broker, rfc27.SCHED_EXPIRATION, rfc27.expiration_request(job.id, expiration))
        broker.log("job-manager", "info",
                   f"updated expiration of {f58(job.id)} from {old:.2f} to {expiration:.2f} "
                   f"({_delta(old, expiration)})")


def _tell_sched(broker, topic, payload):
    """A request to the scheduler whose refusal changes nothing here; False
    when no scheduler is loaded."""
    try:
        broker.rpc(topic, payload)
    except FluxLiteError as exc:
        if exc.errno == rfc27.ENOSYS:
            return False
        broker.log("job-manager", "err", f"{topic}: {exc}")
    return True
