#!/bin/bash
# examples.sh - the examples build and do what their comments say.
. "$(dirname "$0")/libtest.sh"
ex=${RUNTIME_EXAMPLES_DIR:?}

out=$("$ex/run-command" python3 -c 'import sys; print(6*7); sys.exit(4)' 2>"$tmp/err"); rc=$?
is "run-command prints the command's output" "$out" "42"
is "run-command exits with the command's code" "$rc" 4
check "run-command names its sandbox" grep -q "^sandbox sb-[0-9a-f]* is up" "$tmp/err"
check_no_leaks "after run-command"
done_testing
