#!/usr/bin/env python3
"""docs-blocks - the docs' code blocks, checked (no VM) or run (VMs).

The rule (docs/testing.md, "The docs' commands"):
  ```sh       commands, run in order with the blocks before them in the same
              file, in one bash (variables and sandboxes carry over), with
              `set -e`: a command that fails fails the block;
  ```console  `$ ` lines run the same way; the lines under one are its
              stdout, compared as written;
  any other   (```json, ```text, ```c, …) not commands; a fence must name
              its language, so that nothing is left out by mistake;
  <!-- not run: REASON -->  on the line before a ```sh block: not run,
              for REASON (keep these few).
docs/performance.md's blocks are the benchmarks (tests/bench), minutes each:
that file is not checked here.

  docs-blocks.py check ROOT         TAP: every block is run or marked, each
                                    ```sh block parses (bash -n)
  docs-blocks.py list ROOT          the files with blocks to run
  docs-blocks.py run ROOT FILE...   run each FILE's blocks in a scratch dir;
                                    on failure print FILE:LINE and exit 1
"""
import os
import re
import signal
import subprocess
import sys
import tempfile

# What a user reads; ROOT-relative.
FILES = ['README.md', 'docs/*.md']
NOT_CHECKED = {'docs/performance.md'}
FENCE = re.compile(r'^```(\S*)\s*$')
MARK = re.compile(r'^<!--\s*not run:\s*(.*?)\s*-->\s*$')
FILE_TIMEOUT = int(os.environ.get('RUNTIME_DOCS_TIMEOUT', '900'))


def doc_files(root):
    import glob
    out = []
    for pattern in FILES:
        out += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, pattern)))
    return [f for f in out if f not in NOT_CHECKED]


def blocks(path):
    """(line of the opening fence, language, lines, reason not run or None, problems)."""
    out, problems = [], []
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if MARK.match(lines[i]) and not (i + 1 < len(lines) and lines[i + 1].startswith('```sh')):
                problems.append(f'{i + 1}: a "not run" mark not right before a ```sh block')
            i += 1
            continue
        start, lang = i + 1, m.group(1)
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith('```'):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            problems.append(f'{start}: a block never closed')
        mark = MARK.match(lines[start - 2]) if start >= 2 else None
        reason = mark.group(1) if mark else None
        if not lang:
            problems.append(f'{start}: a fence without a language (sh, console, json, text, …)')
        if mark and not reason:
            problems.append(f'{start - 1}: "not run:" without a reason')
        if lang == 'console' and body and not body[0].startswith('$ '):
            problems.append(f'{start}: a console block not starting with "$ "')
        out.append((start, lang, body, reason))
        i += 1
    return out, problems


def check(root):
    n, failed = 0, False

    def result(good, what, detail=''):
        nonlocal n, failed
        n += 1
        print(f'{"ok" if good else "not ok"} {n} - {what}')
        if not good:
            failed = True
            print(''.join(f'# {line}\n' for line in detail.split('\n')), end='')

    marks = []
    for f in doc_files(root):
        found, problems = blocks(os.path.join(root, f))
        for start, lang, body, reason in found:
            if lang == 'sh' and reason is None:
                r = subprocess.run(['bash', '-n'], input='\n'.join(body), capture_output=True, text=True)
                if r.returncode:
                    problems.append(f'{start}: bash -n: {r.stderr.strip()}')
            if reason is not None:
                marks.append(f'{f}:{start}: {reason}')
        result(not problems, f'{f}: every block is run, shown or marked', '\n'.join(f'{f}:{p}' for p in problems))
    print(f'# blocks not run:\n' + ''.join(f'#   {m}\n' for m in marks), end='')
    print(f'1..{n}')
    return 1 if failed else 0


def script(path, name):
    """The bash program that runs NAME's blocks, and its line → NAME:line map."""
    out = ['exec 3>>.status',
           'set -eE -o pipefail',
           'trap \'echo "docs-failed $LINENO $?" >&3; exit 1\' ERR',
           'exec </dev/null']
    where = {}

    def emit(text, md_line):
        out.append(text)
        where[len(out)] = md_line

    found, _ = blocks(path)
    for start, lang, body, reason in found:
        if reason is not None or lang not in ('sh', 'console'):
            continue
        out.append(f'echo "docs-block {start}" >&3')
        if lang == 'sh':
            for k, line in enumerate(body):
                emit(line, start + 1 + k)
            continue
        k = 0
        while k < len(body):
            cmd, want, at = body[k][2:], [], start + 1 + k
            k += 1
            while k < len(body) and not body[k].startswith('$ '):
                want.append(body[k])
                k += 1
            emit(f'__got=$({cmd})', at)
            emit(f'[ "$__got" = {shquote(chr(10).join(want))} ] || '
                 f'{{ echo "docs-output {at}" >&3; printf "%s\\n" "$__got"; exit 1; }}', at)
    out.append('echo "docs-done" >&3')
    return '\n'.join(out) + '\n', where


def shquote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def run_file(root, name):
    """0 when every run block of NAME passes; else prints why and returns 1."""
    path = os.path.join(root, name)
    text, where = script(path, name)
    scratch = tempfile.mkdtemp(prefix='rt-docs.')
    prog = os.path.join(scratch, '.blocks.sh')
    with open(prog, 'w') as f:
        f.write(text)
    log = open(os.path.join(scratch, '.log'), 'w+')
    p = subprocess.Popen(['bash', prog], cwd=scratch, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        p.wait(timeout=FILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    try:  # the block's background jobs (runtime serve &) too
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    p.wait()
    status = open(os.path.join(scratch, '.status')).read().split('\n')
    block, verdict = None, 'timed out'
    for line in status:
        w = line.split()
        if w[:1] == ['docs-block']:
            block = w[1]
        elif w[:1] == ['docs-done']:
            verdict = None
        elif w[:1] == ['docs-failed']:
            at = where.get(int(w[1]), block)
            verdict = f'{name}:{at}: exit {w[2]} (the block at line {block})'
        elif w[:1] == ['docs-output']:
            verdict = f'{name}:{w[1]}: output not as shown (the block at line {block})'
    if verdict == 'timed out':
        verdict = f'{name}:{block}: the block timed out after {FILE_TIMEOUT} s'
    if verdict is None:
        print(f'{name}: every block ran')
        subprocess.run(['rm', '-rf', scratch])
        return 0
    log.seek(0)
    print(verdict)
    print(''.join(f'    {line}' for line in log.readlines()[-30:]), end='')
    return 1


def main(argv):
    if len(argv) >= 3 and argv[1] == 'check':
        return check(argv[2])
    if len(argv) == 3 and argv[1] == 'list':
        for f in doc_files(argv[2]):
            if any(r is None and lang in ('sh', 'console') for _, lang, _, r in blocks(os.path.join(argv[2], f))[0]):
                print(f)
        return 0
    if len(argv) >= 4 and argv[1] == 'run':
        return max(run_file(argv[2], f) for f in argv[3:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
