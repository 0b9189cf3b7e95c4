#!/bin/sh
# The app stays broken whatever its flags, and when started with
# --safe-mode it appends to its own launch script (as a config management
# run might), so runbot's backup no longer matches what it wrote.
echo "$*" > "$(dirname "$0")/running"
for a in "$@"; do
    if [ "$a" = --safe-mode ]; then echo "# touched by the app" >> "$(dirname "$0")/serve.sh"; fi
done
echo broken > "$(dirname "$0")/health"
