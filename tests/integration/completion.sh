#!/bin/bash
# completion.sh - the bash completion driven in a real bash (COMP_WORDS,
# COMP_CWORD, then COMPREPLY), fish's through `complete -C`, zsh's parsed;
# groups, commands, options, a live sandbox id and an image ref.
. "$(dirname "$0")/libtest.sh"
src=$(cd "$(dirname "$0")/../../completions" && pwd)

id=
trap 'runtime sandbox rm "$id" >/dev/null 2>&1; cleanup' EXIT

# complete_bash WORDS…: what the bash completion offers for the last word.
complete_bash() {
    bash -c '
        . /usr/share/bash-completion/bash_completion 2>/dev/null
        . "$1/bash/runtime"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _runtime runtime "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort' bash "$src" "$@"
}
complete_fish() { fish -c "source $src/fish/runtime.fish; complete -C '$1'" 2>/dev/null | cut -f1 | sort; }
has() { grep -qx -- "$2" <<<"$1"; }

check "bash completion file parses" bash -n "$src/bash/runtime"
check "zsh completion file parses" zsh -n "$src/zsh/_runtime"
check "fish completion file parses" fish -n "$src/fish/runtime.fish"

out=$(complete_bash runtime "")
check "bash: the groups" sh -c 'for g in sandbox image secrets usage chat node; do echo "$1" | grep -qx $g || exit 1; done' sh "$out"

# bash's lists are written by hand: they must match every command's --help
# (options, short forms, which take a value) and every group's commands.
help_opts() { runtime "$@" --help | awk '/^  --/ { print $1; if (match($0, /\(also -[a-z]\)/)) print substr($0, RSTART + 6, 2) }' | sort; }
help_valued() { runtime "$@" --help | awk '/^  --/ && $2 ~ /^[A-Z]/ { print $1; if (match($0, /\(also -[a-z]\)/)) print substr($0, RSTART + 6, 2) }' | sort; }
commands_of() { runtime "$1" --help | awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }'; }
drift=""
for g in sandbox image snapshot secrets token chat; do
    want=$(commands_of $g | sort | tr '\n' ' ')
    got=$(complete_bash runtime $g "" | grep -v '^--help$' | tr '\n' ' ')
    [ "$want" = "$got" ] || drift="$drift [$g: commands $got, want $want]"
    for c in $(commands_of $g); do
        got=$(bash -c '. "$1/bash/runtime"; _runtime_opts_for "$2" "$3"' bash "$src" $g $c | tr ' ' '\n' | grep . | sort)
        [ "$got" = "$(help_opts $g $c)" ] || drift="$drift [$g $c: options $(echo $got), want $(echo $(help_opts $g $c))]"
        for o in $(help_valued $g $c); do
            bash -c '. "$1/bash/runtime"; _runtime_takes_value "$2"' bash "$src" "$o" || drift="$drift [$g $c: $o takes a value]"
        done
    done
done
[ "$(complete_bash runtime usage -- | sort)" = "$(help_opts usage)" ] || drift="$drift [usage's options]"
[ "$(complete_bash runtime serve -- | sort)" = "$(help_opts serve)" ] || drift="$drift [serve's options]"
[ "$(complete_bash runtime node -- | sort)" = "$(help_opts node)" ] || drift="$drift [node's options]"
is "bash: every command and option of --help, no more" "$drift" ""
is "bash: sandbox cp offers ID: and local paths" \
    "$(cd "$tmp" && touch cp-file && complete_bash runtime sandbox cp cp- | tr '\n' ' ')" "cp-file "
is "bash: nothing after ID: of sandbox cp" "$(complete_bash runtime sandbox cp x:/w)" ""
is "bash: --signal values include ALRM" "$(complete_bash runtime sandbox kill x 1 --signal AL)" "ALRM"
is "bash: commands of sandbox starting with ex" "$(complete_bash runtime sandbox ex | tr '\n' ' ')" "exec extend "
is "bash: commands of image" "$(complete_bash runtime image "" | tr '\n' ' ')" "--help build export get import ls rm warm "
out=$(complete_bash runtime sandbox create --no-)
is "bash: options of create starting with --no-" "$(echo "$out" | tr '\n' ' ')" "--no-internet --no-wait "
is "bash: --on-timeout values" "$(complete_bash runtime sandbox create --on-timeout "" | tr '\n' ' ')" "pause stop "
out=$(complete_bash runtime usage --)
check "bash: usage's options" sh -c 'echo "$1" | grep -qx -- --csv' sh "$out"
out=$(complete_bash runtime chat deepseek --)
check "bash: chat deepseek's options" sh -c 'echo "$1" | grep -qx -- --max-turns' sh "$out"

out=$(complete_fish "runtime ")
check "fish: the groups" sh -c 'for g in sandbox image secrets usage chat node; do echo "$1" | grep -qx $g || exit 1; done' sh "$out"
is "fish: nothing of ours after --" "$(complete_fish "runtime sandbox exec x -- --")" ""
is "fish: no options where a value goes" "$(complete_fish "runtime sandbox create --name -")" ""
is "fish: --state values" "$(complete_fish "runtime sandbox ls --state pa" | tr '\n' ' ')" "paused pausing "
check "fish: short forms" sh -c 'echo "$1" | grep -qx -- -f' sh "$(complete_fish "runtime sandbox logs x 1 -")"
out=$(complete_fish "runtime sandbox create --")
check "fish: create's options come from its --help" sh -c 'echo "$1" | grep -qx -- --max-cost && echo "$1" | grep -qx -- --allow' sh "$out"
check "fish: no option of another command" sh -c '! echo "$1" | grep -qx -- --signal' sh "$out"

# Help and the man page, from the same tables.
check "--version names the accelerator" sh -c 'runtime --version | grep -qE "^accelerator: (kvm|tcg)$"'
missing=""
noexample=""
for g in sandbox image snapshot chat secrets; do
    runtime $g --help | grep -q '^Example:' || noexample="$noexample $g"
    for c in $(commands_of $g); do
        runtime --roff | grep -q "^\.SS \"runtime $g $c\"" || missing="$missing $g/$c"
        runtime $g $c --help | grep -q '^Example:' || noexample="$noexample $g/$c"
    done
done
runtime --roff | grep -q '^\.SS "runtime usage"' || missing="$missing usage"
runtime --roff | grep -q '^\.SS "runtime serve"' || missing="$missing serve"
runtime --roff | grep -q '^\.SS "runtime node"' || missing="$missing node"
runtime node --help | grep -q '^Example:' || noexample="$noexample node"
runtime usage --help | grep -q '^Example:' || noexample="$noexample usage"
runtime help | grep -q '^Example:' || noexample="$noexample help"
is "the man page has a section for every command" "$missing" ""
is "every group's and command's --help has an example" "$noexample" ""
nodefault=""
for g in sandbox image snapshot chat secrets; do
    for c in $(commands_of $g); do
        nodefault="$nodefault$(runtime $g $c --help | awk -v c="$g/$c" '/^  --[a-z-]+ [A-Z]/ && !/default:/ && !/repeatable/ { printf " %s:%s", c, $1 }')"
    done
done
is "every option with a value shows its default (or is repeatable)" "$nodefault" ""
check "the man page is plain ASCII (UTF-8 escaped)" sh -c '! runtime --roff | LC_ALL=C grep -q "[^ -~]"'
check "the man page names the default places (FILES)" sh -c 'runtime --roff | grep -q "^/var/lib/runtime$\|^\.I /var/lib/runtime$"'
check "options show their defaults" sh -c 'runtime sandbox create --help | grep -q -- "--vcpu N .*(default: 2)"'

# Live ids and names, image refs.
id=$(runtime sandbox create --name comp-test --timeout 600)
out=$(complete_bash runtime sandbox exec "")
check "bash: a live sandbox's id" has "$out" "$id"
check "bash: … and its name" has "$out" "comp-test"
out=$(complete_fish "runtime sandbox exec ")
check "fish: a live sandbox's id" has "$out" "$id"
is "bash: sandbox cp offers a live sandbox as NAME:" "$(complete_bash runtime sandbox cp comp-)" "comp-test:"
check "fish: sandbox cp offers a live sandbox as NAME:" has "$(complete_fish "runtime sandbox cp comp-")" "comp-test:"
out=$(complete_bash runtime sandbox create --image "")
check "bash: image refs for --image" has "$out" "runtime"
# readline replaces only what follows the ':', so that part is offered.
is "bash: NAME:TAG completes after the colon" "$(complete_bash runtime image get runtime:la)" "latest"
out=$(complete_fish "runtime image get ")
check "fish: image refs" has "$out" "runtime@$(runtime image get runtime --json | json_get 'o["version"]')"
runtime sandbox rm "$id" >/dev/null
id=
# Secret names, from a data dir of their own.
mkdir -p "$tmp/sdata"
printf v | RUNTIME_DATA_DIR="$tmp/sdata" runtime secrets set COMP_KEY --host a.example.com >/dev/null
check "bash: secret names for secrets rm" has "$(RUNTIME_DATA_DIR="$tmp/sdata" complete_bash runtime secrets rm "")" "COMP_KEY"
check "fish: secret names for secrets rm" has "$(RUNTIME_DATA_DIR="$tmp/sdata" complete_fish "runtime secrets rm ")" "COMP_KEY"
check_no_leaks "completion"
done_testing
