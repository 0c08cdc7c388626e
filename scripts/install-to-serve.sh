#!/bin/bash
# The README's install-to-serving figure, one run: a clean clone of <git source> (a path or URL), an empty npm
# cache (npm_config_cache), the quick start's `npm install` then `FLOWSTORE_ROOT_PASSWORD=change-me npm start`
# on a free FLOWSTORE_PORT, timed until GET /health answers 200. Prints the seconds, the load average before
# and after, and what node_modules holds; the clone stays in the printed directory (remove it).
# Usage: scripts/install-to-serve.sh <git source>     (run it a few times: for i in 1 2 3; do ...; done)
set -e
src=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/flowstore-install.XXXXXX")
git clone -q "$src" "$work/flowstore"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cd "$work/flowstore"
export npm_config_cache="$work/npm-cache" FLOWSTORE_PORT=$port
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s.%N)
( npm install > "$work/install.log" 2>&1 && FLOWSTORE_ROOT_PASSWORD=change-me exec npm start > "$work/serve.log" 2>&1 ) &
pid=$!
until [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health)" = 200 ]; do
  if ! kill -0 $pid 2>/dev/null; then echo "FAILED: the install or the server exited; see $work"; exit 1; fi
  sleep 0.2
done
t1=$(date +%s.%N)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
pkill -TERM -P $pid || true
kill -TERM $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
pkgs=$(ls "$work/flowstore/node_modules" | wc -l)
size=$(du -sm "$work/flowstore/node_modules" | cut -f1)
echo "seconds=$(echo "$t1 - $t0" | bc) load_before=[$load0] load_after=[$load1] node_modules_top=$pkgs size_mb=$size work=$work"
grep -i -E "warn|added" "$work/install.log" | head -5
