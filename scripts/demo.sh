#!/bin/sh
# A short tour of flux-lite on a built-in default instance: 4 nodes x 4 cores,
# virtual clock, housekeeping with a straggler, sched-simple. Nothing sleeps.
# Piped (or with NO_COLOR set), it prints plain text; its config file is removed
# however it ends.
set -e
FLUX_LITE_DEMO_CONFIG=$(mktemp)
trap 'rm -f "$FLUX_LITE_DEMO_CONFIG"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cat >"$FLUX_LITE_DEMO_CONFIG" <<'YAML'
job-manager:
  housekeeping:
    release-after: 5s
    rank-durations:
      "3": 30s
YAML
flux-lite start --test-size=4 --clock=virtual --config="$FLUX_LITE_DEMO_CONFIG" sh -c '
set -e
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$(printf "\033[1m"); plain=$(printf "\033[0m"); else bold= plain=; fi
say() { printf "\n%s$ %s%s\n" "$bold" "$*" "$plain"; "$@"; }
say flux-lite resource list
A=$(flux-lite submit -N4 -t 10m --setattr=exec.test.run_duration=2m --job-name=wide true)
B=$(flux-lite submit -N1 -t 5m --setattr=exec.test.run_duration=1m --job-name=small true)
C=$(flux-lite submit --urgency=hold -N2 -t 30m --job-name=held true)
D=$(flux-lite submit --dependency=afterok:$B -N1 --setattr=exec.test.run_duration=30s --job-name=after-b true)
E=$(flux-lite submit --begin-time=+90s -N1 --setattr=exec.test.run_duration=10s --job-name=later true)
echo "submitted $A $B $C $D $E"
say flux-lite jobs
say flux-lite jobs -o deps
say flux-lite update -v $A duration=+5m
say flux-lite update -n $C duration=1h name=renamed
say flux-lite jobs -o "{id.f58:>12} {name:<8} {state:<8} {duration!F:>6} {expiration!d:%FT%T}"
say flux-lite clock advance 2m
say flux-lite jobs -a
say flux-lite job eventlog $A
say flux-lite housekeeping list
say flux-lite resource list
say flux-lite sched reload
say flux-lite sched check
say flux-lite job urgency $C default
say flux-lite clock advance 1m
say flux-lite housekeeping list
say flux-lite jobs -a
say flux-lite job eventlog $B
say flux-lite job eventlog $D
flux-lite dmesg | grep -E "sched-simple|housekeeping|scheduler" | sed -e "s/^[^ ]* //"
'
