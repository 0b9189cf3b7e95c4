#!/bin/sh
# The app stays broken whatever its flags.
echo broken > "$(dirname "$0")/health"
