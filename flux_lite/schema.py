"""The SQLite tables of an instance besides the KVS: their layout, in one place.

The derived tables can be rebuilt from the eventlogs alone
(flux_lite/rebuild.py), and are when missing or when SQLite's user_version
says their layout is an older one. Someone changing a table's layout bumps
DERIVED_VERSION, so older state directories rebuild theirs.
"""

from flux_lite.job_manager import index as jobindex

TABLES = jobindex.SCHEMA + """
CREATE TABLE IF NOT EXISTS waitable (
    id         INTEGER PRIMARY KEY,
    t_inactive REAL,
    outcome    TEXT
);
CREATE TABLE IF NOT EXISTS timers (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    t     REAL NOT NULL,
    kind  TEXT NOT NULL,
    jobid INTEGER,
    arg   TEXT
);
CREATE INDEX IF NOT EXISTS timers_t ON timers(t, seq);
CREATE INDEX IF NOT EXISTS timers_job ON timers(jobid);
CREATE TABLE IF NOT EXISTS depends (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    jobid       INTEGER NOT NULL,
    description TEXT NOT NULL,
    scheme      TEXT NOT NULL,
    target      INTEGER,
    key         TEXT,
    t           REAL,
    UNIQUE (jobid, description)
);
CREATE INDEX IF NOT EXISTS depends_target ON depends(target);
CREATE INDEX IF NOT EXISTS depends_key ON depends(key);
CREATE TABLE IF NOT EXISTS job_names (
    jobid INTEGER PRIMARY KEY,
    key   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS job_names_key ON job_names(key);
CREATE TABLE IF NOT EXISTS dmesg (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    t     REAL NOT NULL,
    name  TEXT NOT NULL,
    level TEXT NOT NULL,
    msg   TEXT NOT NULL
);
"""

# derived tables (jobs_user serves `job last`, jobs_result `jobs --stats`; waitable holds the
# waitable jobs not yet waited on, with the outcome of those already purged;
# version 7 added the jobs table's listing column)
DERIVED_NAMES = jobindex.NAMES | {"timers", "waitable", "depends", "job_names"}
DERIVED_VERSION = 7

# the tables a rebuild drops and creates anew (an older layout may lack columns)
REBUILT = (jobindex.TABLE, jobindex.COUNTS, "timers", "waitable", "depends", "job_names")
