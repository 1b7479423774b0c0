#!/bin/sh
set -e
export PORT="${PORT:-8080}"
export NODE_ENV="${NODE_ENV:-production}"
exec node server.js
