#!/bin/sh
# Like app-fixable.sh, but its start takes 20 s: a restart that the
# apply's context can end in the middle of, as the lease fence does.
sleep 20
echo "$*" > "$(dirname "$0")/running"
for a in "$@"; do
    if [ "$a" = --safe-mode ]; then echo ok > "$(dirname "$0")/health"; exit 0; fi
done
echo broken > "$(dirname "$0")/health"
