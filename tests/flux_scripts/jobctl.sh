#!/bin/sh
# Job control as an admin script uses it (12-job-wait-last-stats.txt), unchanged.
# Job ids vary with the clock: they are masked as ID.
mask() { sed -e 's/ƒ[1-9A-HJ-NP-Za-km-z]\{4,\}/ID/g'; }

flux job last; echo "exit $?"
flux jobs --stats-only; echo "exit $?"
flux submit --cc=1-3 --setattr=exec.test.run_duration=1ms true >/dev/null
flux job last 3 | wc -l
flux job last '[1]'; echo "exit $?"
flux job last 1 2; echo "exit $?"

flux job wait; echo "exit $?"
id=$(flux submit --flags=waitable --setattr=exec.test.run_duration=0.2s true)
flux job wait $id; echo "exit $?"
flux job wait $id; echo "exit $?"
flux submit --flags=waitable --setattr=exec.test.wait_status=256 --setattr=exec.test.run_duration=0.2s false >/dev/null
flux submit --flags=waitable -t 1s --setattr=exec.test.run_duration=60s true >/dev/null
{ flux job wait --all; echo "exit $?"; } 2>&1 | mask
flux job wait bad; echo "exit $?"

flux run --setattr=exec.test.wait_status=768 --setattr=exec.test.run_duration=0.1s sh; echo "exit $?"
flux run --setattr=exec.test.wait_status=9 --setattr=exec.test.run_duration=0.1s sh; echo "exit $?"
flux run -t 1s --setattr=exec.test.run_duration=60s true 2>&1 | mask
flux submit --wait -t 1s --setattr=exec.test.run_duration=10s true 2>&1 | mask

flux submit --job-name=alpha --setattr=exec.test.run_duration=300s true >/dev/null
flux submit --job-name=beta --urgency=hold --setattr=exec.test.run_duration=1ms true >/dev/null
flux jobs --stats -o "{id.f58} {name} {status_abbrev} {contextual_info}" | mask
flux jobs --since=+1h; echo "exit $?"
flux jobs -u nosuchuser; echo "exit $?"
flux pgrep -n -o "{name} {state}" '^(al|be)'
flux pgrep -a '(bad'; echo "exit $?"
flux pkill beta; echo "exit $?"
flux cancel --all --dry-run
flux cancel --states=bogus --all; echo "exit $?"
flux cancel --user=all
flux cancel --all

flux jobs --stats-only; echo "exit $?"
flux job purge --num-limit=2
flux job purge --force --num-limit=2
flux job purge --force --batch=0; echo "exit $?"
flux jobs -a -n | wc -l
flux dmesg -d; echo "exit $?"
