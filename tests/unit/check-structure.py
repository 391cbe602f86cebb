#!/usr/bin/env python3
"""check-structure - the tree's shape rules (docs/ARCHITECTURE.md), as TAP.

No .c file over MAX_FILE lines and no function over MAX_FUNC lines outside
tests/; every libruntime .c has a header of its own name or says at its top
why not ("no header of its own"); libruntime's folders are layers, each
including only the folders below it (LAYERS, the one list of their order);
the guest agent includes only common/; the CLI only the public header; no
include cycle among libruntime's headers; every document a source names is
in the tree.
"""
import os
import re
import sys

MAX_FILE = 800
MAX_FUNC = 100

# libruntime's folders, lowest first.  A folder includes its own headers and
# those of folders in earlier rows; folders in one row know nothing of each
# other.  docs/ARCHITECTURE.md draws this.
LAYERS = [
    ['common'],
    ['core'],
    ['vmm', 'net'],
    ['records'],
    ['billing'],
    ['snapshot'],
    ['image'],
    ['template'],
    ['monitor'],
    ['sandbox'],
    ['build'],
    ['remote'],
    ['public'],
    ['llm'],
    ['serve'],
    ['api'],
    ['cluster'],
]
RANK = {folder: rank for rank, row in enumerate(LAYERS) for folder in row}

top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
os.chdir(top)
n = 0
failed = False


def result(ok, what, detail=''):
    global n, failed
    n += 1
    print(('ok' if ok else 'not ok') + f' {n} - {what}')
    if not ok:
        failed = True
        for line in detail.splitlines():
            print('# ' + line)


def sources(exts, roots=('libruntime', 'cli', 'images', 'include', 'examples')):
    for root in roots:
        for d, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith(exts):
                    yield os.path.join(d, f)


def functions(path):
    """(name, first line, length) of each function body: GNU style, '{' and '}' in column 0."""
    lines = open(path, encoding='utf-8').read().split('\n')
    start, name = None, '?'
    for i, line in enumerate(lines):
        if line == '{':
            start = i
            j = i - 1
            while j > 0 and lines[j].strip() and not re.match(r'^[A-Za-z_]\w*\s*\(', lines[j]):
                j -= 1
            name = lines[j].split('(')[0].strip()
        elif line.startswith('}') and start is not None:
            yield name, start + 1, i - start + 1
            start = None


c_files = list(sources(('.c',)))
long_files = [f'{f}: {sum(1 for _ in open(f))} lines' for f in c_files if sum(1 for _ in open(f)) > MAX_FILE]
result(not long_files, f'no .c file over {MAX_FILE} lines', '\n'.join(long_files))

long_funcs = [f'{f}:{line} {name}: {length} lines' for f in c_files for name, line, length in functions(f)
              if length > MAX_FUNC]
result(not long_funcs, f'no function over {MAX_FUNC} lines', '\n'.join(long_funcs))

headless = []
for f in c_files:
    if not f.startswith('libruntime/'):
        continue
    if os.path.exists(f[:-2] + '.h'):
        continue
    head = ' '.join(open(f, encoding='utf-8').read(2000).split()).lower()
    if 'no header of its own' not in head:
        headless.append(f)
result(not headless, 'every libruntime .c has its own header or says why not', '\n'.join(headless))

# Include graph of libruntime's headers ("folder/name.h" includes).
graph = {}
for f in sources(('.h',), ('libruntime',)):
    key = os.path.relpath(f, 'libruntime')
    graph[key] = re.findall(r'^#include "([^"]+\.h)"', open(f, encoding='utf-8').read(), re.M)
cycles = []
state = {}


def visit(h, stack):
    state[h] = 1
    for dep in graph.get(h, []):
        if dep not in graph:
            continue
        if state.get(dep) == 1:
            cycles.append(' -> '.join(stack[stack.index(dep):] + [dep]) if dep in stack else f'{h} -> {dep}')
        elif dep not in state:
            visit(dep, stack + [dep])
    state[h] = 2


for h in sorted(graph):
    if h not in state:
        visit(h, [h])
result(not cycles, 'no include cycle among libruntime headers', '\n'.join(cycles))

folders = sorted(d for d in os.listdir('libruntime') if os.path.isdir(os.path.join('libruntime', d)))
unplaced = [d for d in folders if d not in RANK]
result(not unplaced, 'every libruntime folder has its place in LAYERS', '\n'.join(unplaced))

upward = []
for f in sources(('.c', '.h'), ('libruntime',)):
    mine = f.split('/')[1]
    for i, line in enumerate(open(f, encoding='utf-8'), 1):
        m = re.match(r'#include "([a-z]+)/[^"]+\.h"', line)
        if not m or m.group(1) == mine or mine not in RANK:
            continue
        theirs = m.group(1)
        if theirs not in RANK or RANK[theirs] >= RANK[mine]:
            upward.append(f'{f}:{i}: {mine} includes {theirs}/ ({line.strip()})')
result(not upward, 'each libruntime folder includes only folders below it', '\n'.join(upward))

def includes_outside(roots, allowed):
    bad = []
    for f in sources(('.c', '.h'), roots):
        for i, line in enumerate(open(f, encoding='utf-8'), 1):
            m = re.match(r'#include "([^"]+)"', line)
            if m and '/' in m.group(1) and m.group(1).split('/')[0] not in allowed:
                bad.append(f'{f}:{i}: {line.strip()}')
    return bad

bad = includes_outside(('images',), ('common',))
result(not bad, 'the guest agent includes only common/ of the library', '\n'.join(bad))
bad = includes_outside(('cli', 'examples'), ('runtime',))
result(not bad, 'the CLI and the examples include only the public header', '\n'.join(bad))

outside = []
named = list(sources(('.c', '.h'))) + list(sources(('.sh', '.py'), ('tests',))) + \
    [os.path.join(d, f) for d, _, fs in os.walk('.') for f in fs if f == 'meson.build']
for f in named:
    for i, line in enumerate(open(f, encoding='utf-8'), 1):
        for doc in re.findall(r'[A-Za-z0-9_./-]*[A-Za-z0-9_]\.md\b', line):
            if not os.path.exists(os.path.normpath(doc.lstrip('./') if doc.startswith('./') else doc)):
                outside.append(f'{f}:{i}: {doc}')
result(not outside, 'every document a source names is in the tree', '\n'.join(outside))

print(f'1..{n}')
sys.exit(1 if failed else 0)
