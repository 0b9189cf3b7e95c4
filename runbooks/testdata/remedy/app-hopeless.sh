#!/bin/sh
# The app stays broken whatever its flags. It records the flags it was
# started with, as a process's command line would show them.
echo "$*" > "$(dirname "$0")/running"
echo broken > "$(dirname "$0")/health"
