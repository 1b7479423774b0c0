#!/bin/sh
export PORT="${PORT:-8080}"
exec node /app/server.js "$@"
