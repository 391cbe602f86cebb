# 30-recipe.sh - a recipe folder someone else made (a cloned repository)
# names host files in runtime.json: /etc/shadow, ../x, a symlink to the
# secrets file, a /proc link.  Each build is refused with the entry named,
# exit 1, before anything boots: no image, no sandbox, no staged copy.  A
# folder whose inner symlinks leave is built with them as symlinks, their
# targets never read (build/plan.c, common/beneath.c).

rc_data="$tmp/recipe-data"     # a private data dir: its secrets file is fake
rc="$tmp/recipe-hostile"
rc_canary="rc-canary-$$-$RANDOM"
mkdir -p "$rc_data" "$rc/r/sub" "$rc/r/app"
printf '{"FAKE": {"value": "%s"}}\n' "$rc_canary" >"$rc_data/secrets.json"
chmod 600 "$rc_data/secrets.json"
echo "$rc_canary" >"$rc/x"
ln -s "$rc_data/secrets.json" "$rc/r/secrets-link"
ln -s /proc/self/root "$rc/r/proc-root"
ln -s ../../x "$rc/r/sub/up"

# recipe_refused DESC ENTRY: a recipe whose files name ENTRY is refused,
# naming it, and makes nothing.
recipe_refused() {
    printf '{"files": ["%s:/x"]}\n' "$2" >"$rc/r/runtime.json"
    RUNTIME_DATA_DIR="$rc_data" expect_error "recipe: $1 is refused" invalid_request \
        runtime image build "$rc/r" --name hostile-recipe
    check "recipe: … naming the entry '$2'" grep -qF "entry '$2:/x'" "$tmp/err"
    check "recipe: … before any build sandbox" sh -c "! grep -q 'build sandbox' '$tmp/err'"
}
recipe_refused "an absolute path (/etc/shadow)" /etc/shadow
recipe_refused "'../x'" ../x
recipe_refused "'sub/../../x'" sub/../../x
recipe_refused "a symlink to the data dir's secrets.json" secrets-link
recipe_refused "a relative symlink that leaves (sub/up -> ../../x)" sub/up
recipe_refused "a /proc/self/root link" proc-root/etc/shadow
ln -sf "$rc_data/secrets.json" "$rc/r/runtime.json"
RUNTIME_DATA_DIR="$rc_data" expect_error "recipe: a runtime.json that is a symlink out of its folder is refused" \
    invalid_request runtime image build "$rc/r" --name hostile-recipe
check "recipe: … and the secrets' names are not shown" sh -c "! grep -q FAKE '$tmp/err'"
is "recipe: no image, sandbox, ledger or staged copy was made" \
    "$(cd "$rc_data" && find . -mindepth 1 ! -name secrets.json ! -name secrets.lock)" ""

# Inside the folder: a symlink to a file in it is followed; a directory's
# symlinks that leave are copied as symlinks, never read.
echo hello-from-recipe >"$rc/r/app/hello"
ln -s "$rc_data/secrets.json" "$rc/r/app/leak"
ln -s ../../x "$rc/r/app/up"
ln -s app/hello "$rc/r/link-in"
rm -f "$rc/r/runtime.json"
echo '{"files": ["app:/srv/app", "link-in:/srv/in"]}' >"$rc/r/runtime.json"
if runtime image build "$rc/r" --name hostile-recipe >"$tmp/out" 2>"$tmp/err"; then
    ok "recipe: a folder whose symlinks stay inside (or are copied as links) builds"
    out=$(runtime sandbox run --image hostile-recipe -- sh -c \
        'cat /srv/in; readlink /srv/app/leak /srv/app/up; cat /srv/app/leak /srv/app/up 2>/dev/null; true' 2>"$tmp/err")
    is "recipe: … its links are links in the image, their host targets not copied" "$out" \
        "$(printf 'hello-from-recipe\n%s\n../../x' "$rc_data/secrets.json")"
    check "recipe: … and the secret is nowhere in it" sh -c "! printf '%s' '$out' | grep -q '$rc_canary'"
    runtime image rm hostile-recipe >/dev/null 2>&1
else
    fail "recipe: a folder whose symlinks stay inside (or are copied as links) builds"
    diag "$(tail -5 "$tmp/err")"
fi
is "recipe: the build's staged copy is gone" "$(ls -d "$RUNTIME_DATA_DIR"/images/.stage-* 2>/dev/null)" ""
