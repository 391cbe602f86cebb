#!/bin/sh
# secret-api.sh - code in a sandbox calls an HTTPS API itself, with a key it
# never sees.
#
#   DEEPSEEK_API_KEY=sk-... ./secret-api.sh [HOST [PATH]]
#
# The key is stored on the host and bound to HOST (api.deepseek.com by
# default). The sandbox holds only a placeholder (rtsec_...); the host's
# egress proxy swaps it for the key in requests to HOST, and nowhere else:
# print it, send it to another host, or leak it in a body, and all anyone
# gets is the placeholder. The sandbox may reach HOST only.
set -eu
host=${1:-api.deepseek.com}
path=${2:-/models}
: "${DEEPSEEK_API_KEY:?set DEEPSEEK_API_KEY on the host}"

printf '%s' "$DEEPSEEK_API_KEY" | runtime secrets set DEEPSEEK_API_KEY --host "$host" >/dev/null
id=$(runtime sandbox create --allow "$host" --timeout 300)
trap 'runtime sandbox rm "$id" >/dev/null' EXIT

runtime sandbox exec "$id" -- sh -c 'echo "inside, DEEPSEEK_API_KEY=$DEEPSEEK_API_KEY"'
# The sandbox's own Python calls the API, as code an LLM wrote would.
runtime sandbox exec "$id" -- python3 - "https://$host$path" <<'EOF'
import os, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + os.environ["DEEPSEEK_API_KEY"]})
with urllib.request.urlopen(req, timeout=30) as r:
    print("HTTP", r.status, r.read(300).decode(errors="replace").strip())
EOF
