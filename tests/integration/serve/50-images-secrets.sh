# 50-images-secrets.sh - egress secrets (never a value, per tenant) and
# image builds from a recipe (answered at once, logs followed as NDJSON,
# per tenant) (docs/API.md).  Builds one tiny image: commands and a file,
# no network.

# answer DESC STATUS CODE: the last answer was STATUS with error CODE.
answer() {
    local got
    got="$status $(bj 'o.get("error", {}).get("code", "-")' 2>/dev/null)"
    if [ "$got" = "$2 $3" ]; then ok "$1"; else fail "$1"; diag "got:  $got" "want: $2 $3" "body: $(head -c 300 "$tmp/api.body")"; fi
}
issues() { bj 'sorted(i["path"] for i in o["error"]["details"]["issues"])'; }

# -- secrets
value=sk-srv50-$RANDOM$RANDOM
api PUT /v1/egress-secrets/SRV_KEY '{"value": "'"$value"'", "hosts": ["api.example.com"], "header": "Authorization", "format": "Bearer {value}"}' >/dev/null
is "PUT a secret: 200, its placeholder and times, never the value" \
    "$status $(bj 'o["name"], o["hosts"], o["header"], bool(o["placeholder"]), bool(o["createdAt"]), o["createdAt"] == o["updatedAt"]')" \
    "200 SRV_KEY ['api.example.com'] Authorization True True True"
check "… nowhere in the answer" sh -c '! grep -q "$1" "$2"' sh "$value" "$tmp/api.body"
created=$(bj 'o["createdAt"]')
sleep 1
api PUT /v1/egress-secrets/SRV_KEY '{"value": "'"$value"'2", "hosts": ["api.example.com"], "inUrl": true, "rules": ["GET:/v1/*"]}' >/dev/null
is "PUT again: createdAt kept, updatedAt later, inUrl and rules" \
    "$status $(bj 'o["createdAt"] == "'"$created"'", o["updatedAt"] > "'"$created"'", o["inUrl"], o["rules"]')" "200 True True True ['GET:/v1/*']"
api GET /v1/egress-secrets >/dev/null
is "GET /v1/egress-secrets: {secrets: [it]}" "$status $(bj '[s["name"] for s in o["secrets"]], all("value" not in s for s in o["secrets"])')" "200 ['SRV_KEY'] True"
check "… no value anywhere" sh -c '! grep -q "$1" "$2"' sh "$value" "$tmp/api.body"
api PUT /v1/egress-secrets/SRV_KEY '{"value": "x"}' >/dev/null
is "PUT without hosts: 400 naming hosts" "$status $(issues)" "400 ['hosts']"
api PUT /v1/egress-secrets/SRV_KEY '{"value": "x", "hosts": ["a.example.com", 3]}' >/dev/null
is "PUT with a number in hosts: named" "$status $(issues)" "400 ['hosts[1]']"
api PUT /v1/egress-secrets/SRV_KEY '{"value": "x", "hosts": ["a.example.com"], "colour": 1}' >/dev/null
is "PUT with an unknown field: named" "$status $(issues)" "400 ['colour']"
hosts=$(python3 -c 'import json; print(json.dumps(["h%d.example.com" % i for i in range(17)]))')
api PUT /v1/egress-secrets/SRV_KEY '{"value": "x", "hosts": '"$hosts"'}' >/dev/null
is "17 hosts: 400 on the 17th" "$status $(issues)" "400 ['hosts[16]']"
api PUT /v1/egress-secrets/SRV_KEY '{"value": "x", "hosts": []}' >/dev/null
check "no host: 400" test "$status" = 400
api PUT /v1/egress-secrets/bad-name '{"value": "x", "hosts": ["a.example.com"]}' >/dev/null
answer "a name that is no variable name: 400" 400 invalid_request
api PUT /v1/egress-secrets/SRV_IP '{"value": "x", "hosts": ["10.0.0.1"]}' >/dev/null
answer "a secret bound to an address: 400" 400 invalid_request
is "B's list: none of A's" "$(API_TOKEN=$TOKEN_B api GET /v1/egress-secrets | json_get 'o["secrets"]')" "[]"
API_TOKEN=$TOKEN_B api DELETE /v1/egress-secrets/SRV_KEY >/dev/null
answer "B's DELETE of A's secret: 404" 404 not_found
API_TOKEN=$TOKEN_B api PUT /v1/egress-secrets/SRV_KEY '{"value": "b-value", "hosts": ["b.example.com"]}' >/dev/null
is "B may have a secret of the same name, its own" "$status" 200
is "… A's is unchanged" "$(api GET /v1/egress-secrets | json_get '[s["hosts"] for s in o["secrets"]]')" "[['api.example.com']]"
api DELETE /v1/egress-secrets/SRV_KEY >/dev/null
is "A's DELETE: 200" "$status $(bj 'o["deleted"]')" "200 True"
api DELETE /v1/egress-secrets/SRV_KEY >/dev/null
answer "… again: 404" 404 not_found
is "B's is still there" "$(API_TOKEN=$TOKEN_B api GET /v1/egress-secrets | json_get '[s["name"] for s in o["secrets"]]')" "['SRV_KEY']"
API_TOKEN=$TOKEN_B api DELETE /v1/egress-secrets/SRV_KEY >/dev/null

# -- images: bad recipes, answered at once
api POST /v1/images '{"name": "srv50"}' >/dev/null
is "a build without a recipe: 400 naming recipe" "$status $(issues)" "400 ['recipe']"
api POST /v1/images '{"name": "srv50", "recipe": {"commands": ["true", 5], "steps": [], "files": "x"}}' >/dev/null
is "unknown and mistyped recipe fields: each named" "$status $(issues)" "400 ['recipe.files', 'recipe.steps']"
api POST /v1/images '{"recipe": {"commands": ["true", 5]}}' >/dev/null
is "a command that is no string: named" "$status $(issues)" "400 ['recipe.commands[1]']"
api POST /v1/images '{"recipe": {"files": {"etc/x": "relative", "/a:b": "colon", "/etc/../x": "up"}}}' >/dev/null
is "a relative path, one with a colon or a dot-dot part: each named" "$status $(issues)" "400 ['recipe.files./a:b', 'recipe.files./etc/../x', 'recipe.files.etc/x']"
api POST /v1/images '{"name": "Not A Name", "recipe": {"commands": ["true"]}}' >/dev/null
is "a bad image name: 400 naming it, before anything is queued" "$status $(issues)" "400 ['name']"
big=$(head -c 300000 /dev/zero | tr '\0' a)
printf '{"recipe": {"files": {"/big": "%s"}}}' "$big" >"$tmp/big.json"
api -H 'Content-Type: application/json' POST /v1/images "@$tmp/big.json" >/dev/null
is "files over 256 KiB in all: 400" "$status $(issues)" "400 ['recipe.files']"
check "… no build record left by the refusals" test -z "$(ls "$RUNTIME_DATA_DIR/serve/builds/tenant-a" 2>/dev/null)"

# -- a tiny build: a file and commands, no network
t0=$(date +%s%N)
api POST /v1/images '{"name": "srv50", "recipe": {"files": {"/etc/srv50.txt": "from the recipe\n"}, "commands": ["echo srv50-step-output; cat /etc/srv50.txt"], "env": {"SRV50": "yes"}}}' >/dev/null
IMG=$(bj 'o["id"]')
is "POST /v1/images: 202 at once, an Image queued" "$status $(bj 'o["kind"], o["name"], o["state"]') $(( ($(date +%s%N) - t0) / 1000000000 < 5 ))" \
    "202 image srv50 queued 1"
curl -sS --noproxy '*' --max-time 900 -H "Authorization: Bearer $TOKEN_A" "$API/v1/images/$IMG/logs?follow=true" >"$tmp/build.ndjson"
is "its logs followed to the end: NDJSON, the last line the end, ready" \
    "$(python3 -c 'import json, sys; l = [json.loads(x) for x in open(sys.argv[1])]; print(l[-1]["type"], l[-1]["state"], all(e["type"] == "log" for e in l[:-1]))' "$tmp/build.ndjson")" \
    "end ready True"
check "… with the step's output" grep -q srv50-step-output "$tmp/build.ndjson"
check "… offsets with no gap" python3 -c '
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])][:-1]
at = 0
for e in l:
    assert e["offset"] == at, (e["offset"], at)
    at += len(e["data"].encode())' "$tmp/build.ndjson"
api GET "/v1/images/$IMG" >/dev/null
is "GET the image: ready, its build id kept, the library's fields" "$status $(bj 'o["id"] == "'"$IMG"'", o["state"], bool(o["imageId"]), "sizeBytes" in o')" "200 True ready True True"
is "GET /v1/images: it, once, and the base image" \
    "$(api GET /v1/images | json_get '[i["id"] for i in o["data"]].count("'"$IMG"'"), any(i["name"] == "runtime" and i["state"] == "ready" for i in o["data"])')" "1 True"
api GET "/v1/images/$IMG/logs" >/dev/null
is "logs without follow: the whole log and the end" "$status $(tail -1 "$tmp/api.body" | json_get 'o["type"]')" "200 end"
is "B's image list: not A's" "$(API_TOKEN=$TOKEN_B api GET /v1/images | json_get '[i["name"] for i in o["data"] if i["name"] == "srv50"]')" "[]"
API_TOKEN=$TOKEN_B api GET "/v1/images/$IMG" >/dev/null
answer "B's GET of A's image: 404" 404 image_not_found
API_TOKEN=$TOKEN_B api GET "/v1/images/$(api GET "/v1/images/$IMG" | json_get 'o["imageId"]')" >/dev/null
check "B's GET of A's image by the library's id: 404" test "$status" = 404
API_TOKEN=$TOKEN_B api GET "/v1/images/$IMG/logs" >/dev/null
answer "B's logs of A's build: 404" 404 not_found
API_TOKEN=$TOKEN_B api POST "/v1/images/$IMG:delete" '{}' >/dev/null
answer "B's :delete of A's image: 404" 404 image_not_found
api POST /v1/images/runtime:delete '{}' >/dev/null
answer "A's :delete of the base image: 403" 403 permission_denied
api POST "/v1/images/$IMG:explode" '{}' >/dev/null
answer "an unknown image verb: 404" 404 not_found
api POST "/v1/images/$IMG:delete" '{}' >/dev/null
is ":delete: 200 deleted" "$status $(bj 'o["status"]')" "200 deleted"
api GET "/v1/images/$IMG" >/dev/null
answer "… then GET: 404" 404 image_not_found
is "… and not in the list" "$(api GET /v1/images | json_get '[i["name"] for i in o["data"] if i["name"] == "srv50"]')" "[]"
