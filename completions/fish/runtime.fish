# fish completion for runtime(1).  Groups, commands and options come from
# runtime's own --help (one source of truth: the CLI's option tables);
# sandbox ids and names and image refs from `runtime … ls`, with a short
# timeout so a slow machine never hangs the prompt.

function __runtime_section --description 'first words of a --help section'
    set -l section $argv[1]
    set -e argv[1]
    timeout 2 runtime $argv --help 2>/dev/null | awk -v s="$section" '$0 ~ "^" s ":" { on = 1; next } /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }'
end

# The options of a command ($argv: group and command), short forms too.
function __runtime_options
    timeout 2 runtime $argv --help 2>/dev/null | awk '/^  --/ { print $1; if (match($0, /\(also -[a-z]\)/)) print substr($0, RSTART + 6, 2) }'
end

# The options of a command that take a value.
function __runtime_valued
    timeout 2 runtime $argv --help 2>/dev/null | awk '/^  --/ && $2 ~ /^[A-Z]/ { print $1; if (match($0, /\(also -[a-z]\)/)) print substr($0, RSTART + 6, 2) }'
end

# The words typed after "runtime" that are not options nor their values;
# nothing once "--" starts the sandbox's command.
function __runtime_args
    set -l t (commandline -opc)
    set -e t[1]
    set -l valued
    set -l words
    set -l skip 0
    for w in $t
        if test $skip = 1
            set skip 0
            continue
        end
        if test "$w" = --
            return
        end
        if string match -q -- '-*' $w
            if test (count $words) -ge 2; and not string match -q -- '*=*' $w
                test -n "$valued"; or set valued (__runtime_valued $words[1..2])
                contains -- $w $valued; and set skip 1
            end
            continue
        end
        set -a words $w
    end
    test (count $words) -gt 0; and printf '%s\n' $words
end

function __runtime_after_dashdash
    contains -- -- (commandline -opc)
end

# True when the word before the cursor is an option that takes a value.
function __runtime_wants_value
    set -l t (commandline -opc)
    set -l a (__runtime_args)
    test (count $t) -ge 2; and test (count $a) -ge 2; or return 1
    string match -q -- '-*' $t[-1]; or return 1
    contains -- $t[-1] (__runtime_valued $a[1..2])
end

function __runtime_prev_is
    set -l t (commandline -opc)
    not __runtime_after_dashdash; and contains -- $t[-1] $argv
end

function __runtime_needs_group
    not __runtime_after_dashdash; and test (count (__runtime_args)) -eq 0
end

function __runtime_needs_command
    set -l a (__runtime_args)
    not __runtime_after_dashdash; and test (count $a) -eq 1; and not contains -- "$a[1]" usage serve node doctor
end

# An option or the first argument of "GROUP CMD…" may come here.
function __runtime_in_command
    set -l a (__runtime_args)
    not __runtime_after_dashdash; or return 1
    __runtime_wants_value; and return 1
    test (count $a) -ge 2; or contains -- "$a[1]" usage serve node doctor
end

# In GROUP CMD ($argv: the group, then any of the commands), where an
# argument or option may come.
function __runtime_cmd_is
    set -l a (__runtime_args)
    __runtime_in_command; and test (count $a) -ge 2; and test "$a[1]" = $argv[1]; and contains -- $a[2] $argv[2..]
end

# … and its first argument is wanted.
function __runtime_first_arg
    __runtime_cmd_is $argv; and test (count (__runtime_args)) -eq 2
end

function __runtime_sandboxes
    timeout 2 runtime sandbox ls $argv 2>/dev/null | awk 'NR > 1 { print $1; if ($2 != "-") print $2 }'
end

function __runtime_snapshots
    timeout 2 runtime snapshot ls 2>/dev/null | awk 'NR > 1 { print $1; if ($2 != "-") print $2 }'
end

# Image refs: NAME, NAME:TAG, NAME@VERSION and the id of every image.
function __runtime_images
    timeout 2 runtime image ls --json 2>/dev/null | python3 -c 'import json, sys
for i in json.load(sys.stdin):
    print(i["name"]); print("%s@%d" % (i["name"], i["version"])); print(i["id"])
    for t in i.get("tags") or []: print("%s:%s" % (i["name"], t))' 2>/dev/null | sort -u
end

complete -c runtime -f
complete -c runtime -n __runtime_needs_group -a '(__runtime_section Groups) help --help --version'
complete -c runtime -n __runtime_needs_command -a '(__runtime_section Commands (__runtime_args)[1])'
complete -c runtime -n __runtime_in_command -a '(__runtime_options (__runtime_args)[1..2])'
complete -c runtime -n '__runtime_first_arg sandbox exec shell spawn write forward ps logs kill cat files stop pause wake extend network metrics snapshot fork update' -a '(__runtime_sandboxes)'
complete -c runtime -n '__runtime_first_arg sandbox get rm' -a '(__runtime_sandboxes --all)'
# cp: ID: of a live sandbox, or a local path (either side).
complete -c runtime -n '__runtime_cmd_is sandbox cp' -F -a '(__runtime_sandboxes | sed "s/\$/:/")'
complete -c runtime -n '__runtime_first_arg image get rm export warm' -a '(__runtime_images)'
complete -c runtime -n '__runtime_cmd_is image build import' -F
complete -c runtime -n '__runtime_first_arg snapshot get' -a '(__runtime_snapshots)'
complete -c runtime -n '__runtime_cmd_is snapshot rm' -a '(__runtime_snapshots)'
complete -c runtime -n '__runtime_first_arg token rm' -a '(timeout 2 runtime token ls 2>/dev/null | awk \'NR > 1 { print $1 }\')'
complete -c runtime -n '__runtime_first_arg secrets get rm' -a '(timeout 2 runtime secrets ls 2>/dev/null | awk \'NR > 1 { print $1 }\')'
# Values of the options that have a fixed or known set; none for the others.
complete -c runtime -n '__runtime_prev_is --image --from' -a '(__runtime_images)'
complete -c runtime -n '__runtime_prev_is --file --env-file --tls-cert --tls-key' -F
complete -c runtime -n '__runtime_prev_is --on-timeout' -a 'pause stop'
complete -c runtime -n '__runtime_prev_is --snapshot' -a '(__runtime_snapshots)'
complete -c runtime -n '__runtime_cmd_is sandbox update; and __runtime_prev_is --auto-wake' -a 'on off'
complete -c runtime -n '__runtime_prev_is --user' -a 'runtime root'
complete -c runtime -n '__runtime_prev_is --signal' -a 'TERM KILL INT HUP QUIT USR1 USR2 ALRM STOP CONT'
complete -c runtime -n '__runtime_prev_is --state' -a 'starting running pausing paused resuming stopping stopped'
