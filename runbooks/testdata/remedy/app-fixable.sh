#!/bin/sh
# The app is healthy exactly when it runs with --safe-mode. It records the
# flags it was started with, as a process's command line would show them.
echo "$*" > "$(dirname "$0")/running"
for a in "$@"; do
    if [ "$a" = --safe-mode ]; then echo ok > "$(dirname "$0")/health"; exit 0; fi
done
echo broken > "$(dirname "$0")/health"
