#!/bin/sh
# stop-label.sh KEY=VALUE - stop every live sandbox with that label.
set -eu
label=${1:?usage: stop-label.sh KEY=VALUE}
for id in $(runtime sandbox ls --label "$label" --json |
            python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]'); do
    runtime sandbox stop "$id" >/dev/null && echo "stopped $id"
done
