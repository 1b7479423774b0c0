#!/bin/sh
set -e
echo "starting $*"
exec "$@"
