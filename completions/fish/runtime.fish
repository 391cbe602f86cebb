# fish completion for runtime(1).  Groups, commands and options come from
# runtime's own --help (one source of truth: the CLI's option tables);
# sandbox ids and names and image refs from `runtime … ls`, with a short
# timeout so a slow machine never hangs the prompt.

function __runtime_section --description 'first words of a --help section'
    set -l section $argv[1]
    set -e argv[1]
    timeout 2 runtime $argv --help 2>/dev/null | awk -v s="$section" '$0 ~ "^" s ":" { on = 1; next } /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }'
end

# The words typed after "runtime" that are not options.
function __runtime_args
    set -l t (commandline -opc)
    set -e t[1]
    for w in $t
        if test "$w" = --
            return
        end
        string match -q -- '-*' $w; or echo $w
    end
end

function __runtime_needs_group
    test (count (__runtime_args)) -eq 0
end

function __runtime_needs_command
    set -l a (__runtime_args)
    test (count $a) -eq 1; and test "$a[1]" != usage
end

function __runtime_in_command
    set -l a (__runtime_args)
    test (count $a) -ge 2; or test "$a[1]" = usage
end

function __runtime_options
    set -l a (__runtime_args)
    timeout 2 runtime $a[1..2] --help 2>/dev/null | awk '/^  --/ { print $1 }'
end

function __runtime_sandboxes
    timeout 2 runtime sandbox ls $argv 2>/dev/null | awk 'NR > 1 { print $1; if ($2 != "-") print $2 }'
end

function __runtime_images
    timeout 2 runtime image ls 2>/dev/null | awk 'NR > 1 { print $1; print $1 "@" $2; n = split($3, t, ","); for (i = 1; i <= n; i++) if (t[i] != "-") print $1 ":" t[i] }'
end

complete -c runtime -f
complete -c runtime -n __runtime_needs_group -a '(__runtime_section Groups) help --help --version'
complete -c runtime -n __runtime_needs_command -a '(__runtime_section Commands (__runtime_args)[1])'
complete -c runtime -n __runtime_in_command -a '(__runtime_options)'
complete -c runtime -n '__fish_seen_subcommand_from sandbox; and __fish_seen_subcommand_from exec spawn ps logs kill cat files stop pause wake extend network metrics' -a '(__runtime_sandboxes)'
complete -c runtime -n '__fish_seen_subcommand_from sandbox; and __fish_seen_subcommand_from get rm' -a '(__runtime_sandboxes --all)'
complete -c runtime -n '__fish_seen_subcommand_from image; and __fish_seen_subcommand_from get rm export' -a '(__runtime_images)'
complete -c runtime -n '__fish_seen_subcommand_from image; and __fish_seen_subcommand_from build import' -F
complete -c runtime -n '__fish_seen_subcommand_from secrets; and __fish_seen_subcommand_from rm' -a '(timeout 2 runtime secrets ls 2>/dev/null | awk \'NR > 1 { print $1 }\')'
# Values of the options that have a fixed or known set.
complete -c runtime -n '__fish_seen_subcommand_from create run deepseek' -l image -x -a '(__runtime_images)'
complete -c runtime -n '__fish_seen_subcommand_from build' -l from -x -a '(__runtime_images)'
complete -c runtime -n '__fish_seen_subcommand_from build' -l file -r -F
complete -c runtime -n '__fish_seen_subcommand_from create' -l on-timeout -x -a 'pause stop'
complete -c runtime -n '__fish_seen_subcommand_from exec spawn' -l user -x -a 'runtime root'
complete -c runtime -n '__fish_seen_subcommand_from kill' -l signal -x -a 'TERM KILL INT HUP QUIT USR1 USR2 STOP CONT'
