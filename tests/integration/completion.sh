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
check "bash: the groups" sh -c 'for g in sandbox image usage chat; do echo "$1" | grep -qx $g || exit 1; done' sh "$out"
is "bash: commands of sandbox starting with ex" "$(complete_bash runtime sandbox ex | tr '\n' ' ')" "exec extend "
is "bash: commands of image" "$(complete_bash runtime image "" | tr '\n' ' ')" "--help build export get import ls rm "
out=$(complete_bash runtime sandbox create --no-)
is "bash: options of create starting with --no-" "$(echo "$out" | tr '\n' ' ')" "--no-internet --no-wait "
is "bash: --on-timeout values" "$(complete_bash runtime sandbox create --on-timeout "" | tr '\n' ' ')" "pause stop "
out=$(complete_bash runtime usage --)
check "bash: usage's options" sh -c 'echo "$1" | grep -qx -- --csv' sh "$out"
out=$(complete_bash runtime chat deepseek --)
check "bash: chat deepseek's options" sh -c 'echo "$1" | grep -qx -- --max-turns' sh "$out"

out=$(complete_fish "runtime ")
check "fish: the groups" sh -c 'for g in sandbox image usage chat; do echo "$1" | grep -qx $g || exit 1; done' sh "$out"
out=$(complete_fish "runtime sandbox create --")
check "fish: create's options come from its --help" sh -c 'echo "$1" | grep -qx -- --max-cost && echo "$1" | grep -qx -- --allow' sh "$out"
check "fish: no option of another command" sh -c '! echo "$1" | grep -qx -- --signal' sh "$out"

# Help and the man page, from the same tables.
check "--version names the accelerator" sh -c 'runtime --version | grep -qE "^accelerator: (kvm|tcg)$"'
missing=""
noexample=""
for g in sandbox image chat secrets; do
    for c in $(runtime $g --help | awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }'); do
        runtime --roff | grep -q "^\.SS \"runtime $g $c\"" || missing="$missing $g/$c"
        runtime $g $c --help | grep -q '^Example:' || noexample="$noexample $g/$c"
    done
done
is "the man page has a section for every command" "$missing" ""
is "every command's --help has an example" "$noexample" ""
check "options show their defaults" sh -c 'runtime sandbox create --help | grep -q -- "--vcpu N .*(default: 2)"'

# Live ids and names, image refs.
id=$(runtime sandbox create --name comp-test --timeout 600)
out=$(complete_bash runtime sandbox exec "")
check "bash: a live sandbox's id" has "$out" "$id"
check "bash: … and its name" has "$out" "comp-test"
out=$(complete_fish "runtime sandbox exec ")
check "fish: a live sandbox's id" has "$out" "$id"
out=$(complete_bash runtime sandbox create --image "")
check "bash: image refs for --image" has "$out" "runtime"
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
