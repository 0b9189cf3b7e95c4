#!/bin/sh
# launch script of the test app
exec sh "$(dirname "$0")/app.sh" \
    --port 8080 \
    --workers 2
