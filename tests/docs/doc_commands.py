#!/usr/bin/env python3
"""Runs the commands of README.md and of the guide in docs/ as a newcomer
would, so that the documentation cannot drift from the code.

The newcomer has cloned the repository and run the two set-up commands of
the README's Quick start (CI's main phase does): the build is in build/ and
the MNIST digits in data/mnist. Each markdown file's commands run in order
in a scratch folder of their own that looks like the clone (a symbolic link
to each top-level entry of the source tree, `build` to the build folder),
so what the commands write (checkpoints, reports, logs) lands there and is
removed with it.

What runs, marked in the markdown itself:

  ```sh           a command block: run with bash -e, must exit 0
  ```text, ```console, ```json, ```c++, ```python, ...: shown, not run

and HTML comments on the lines just before a fence:

  <!-- doc-test: expect TEXT -->     the block's output (stdout and stderr)
                                     must contain TEXT (repeatable)
  <!-- doc-test: exit N -->          it must exit N instead of 0
  <!-- doc-test: skip REASON -->     a ```sh block that is not run, and why
  <!-- doc-test: excerpt PATH -->    a code block whose lines are PATH's lines,
                                     in order (comments and `...` lines aside)

Every relative link ([text](docs/x.md#anchor), pictures too) must name a
file that exists and, in a markdown file, one of its headings. README.md
must show every command in a fence (no indented code blocks) and
every command fence must be ```sh (not ```console): run, or skipped with a
reason.

Usage: doc_commands.py SOURCE_ROOT BUILD_ROOT [FILE.md ...]
(default: README.md and every docs/*.md). Exits 77 (skip) when the build or
the digits it needs are missing.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 120          # one block
MARK = re.compile(r'^<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->\s*$')
FENCE = re.compile(r'^(\s*)```\s*([\w+-]*)\s*$')
NOT_RUN = {'text', 'console', 'json', 'c++', 'cpp', 'python', 'cmake', 'meson', 'yaml', 'ini', 'diff'}
# Variables of an enclosing job or shell that would change what a command does.
DROP_ENV = re.compile(r'^(TRAINRUN_|HOROVOD_|OMPI_|PMIX_|PMI_|SLURM_|MASTER_|RANK$|WORLD_SIZE$|LOCAL_RANK$|'
                      r'LOCAL_WORLD_SIZE$|PYTHONPATH$|OMP_NUM_THREADS$)')


class Block:
    def __init__(self, path, line, info, text, marks):
        self.path, self.line, self.info, self.text, self.marks = path, line, info, text, marks

    def where(self):
        return f'{self.path}:{self.line}'

    def values(self, kind):
        return [value for k, value in self.marks if k == kind]


def parse(path, text):
    """The fenced blocks of a markdown file, and its problems."""
    blocks, problems, marks = [], [], []
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARK.match(line)
        if m:
            marks.append((m.group(1), m.group(2)))
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            indent, info = fence.group(1), fence.group(2).lower()
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != '```':
                j += 1
            if j == len(lines):
                problems.append(f'{path}:{i + 1}: a fence that never closes')
                break
            body = '\n'.join(l[len(indent):] if l.startswith(indent) else l for l in lines[start:j])
            blocks.append(Block(path, i + 1, info, body, marks))
            for kind, _ in marks:
                if kind not in ('expect', 'exit', 'skip', 'excerpt'):
                    problems.append(f'{path}:{i + 1}: unknown doc-test mark "{kind}"')
            marks = []
            i = j + 1
            continue
        if marks and line.strip():
            problems.append(f'{path}:{i + 1}: a doc-test mark that is not right before a fence')
            marks = []
        i += 1
    return blocks, problems


def front_page_problems(path, text, blocks):
    """README.md: every command in a ```sh fence, run or skipped with a reason."""
    problems = []
    for b in blocks:
        if b.info not in NOT_RUN - {'console'} and b.info != 'sh':
            problems.append(f'{b.where()}: a ```{b.info or ""} fence: command blocks here are ```sh '
                            '(run by this test, or marked <!-- doc-test: skip REASON -->)')
        if b.info == 'sh' and b.values('skip') and not b.values('skip')[0]:
            problems.append(f'{b.where()}: doc-test: skip needs a reason')
    in_fence, previous = False, ''
    for n, line in enumerate(text.split('\n'), 1):
        if FENCE.match(line) or (in_fence and line.strip() == '```'):
            in_fence = not in_fence
        elif not in_fence and line.startswith('    ') and line.strip() and not previous.strip():
            problems.append(f'{path}:{n}: an indented code block: fence it (```sh to run it, ```text for output)')
        previous = line
    return problems


def code_lines(text, comment):
    """The lines that are code: comments, blank lines and `...` left out."""
    out = []
    for line in text.split('\n'):
        if comment in line:
            line = line[:line.index(comment)]
        line = line.strip()
        if line and line != '...':
            out.append(line)
    return out


def excerpt_problems(root, block):
    problems = []
    for rel in block.values('excerpt'):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            problems.append(f'{block.where()}: excerpt of {rel}, which does not exist')
            continue
        comment = '#' if rel.endswith(('.py', '.sh', '.sbatch', '.yaml', '.yml')) else '//'
        with open(path) as f:
            source = code_lines(f.read(), comment)
        at = 0
        for line in code_lines(block.text, comment):
            try:
                at = source.index(line, at) + 1
            except ValueError:
                problems.append(f'{block.where()}: "{line}" is not in {rel} (or not in this order)')
                break
    return problems


LINK = re.compile(r'\]\(([^)\s]*)\)')


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r'[^\w\- ]', '', heading.strip().lower())
    return text.replace(' ', '-')


def anchors(path):
    with open(path) as f:
        text = f.read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r'^#+ (.*)$', text, flags=re.M)}


def link_problems(root, rel, text):
    """Every relative link of a markdown file names a file that exists, and a heading of it."""
    problems = []
    text = re.sub(r'```.*?```', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    for n, line in enumerate(text.split('\n'), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r'^[a-z]+:', target):
                continue  # https:, mailto:
            path, _, anchor = target.partition('#')
            full = os.path.normpath(os.path.join(root, os.path.dirname(rel), path)) if path else \
                os.path.join(root, rel)
            if not os.path.exists(full):
                problems.append(f'{rel}:{n}: the link {target} names a file that does not exist')
            elif anchor and full.endswith('.md') and anchor not in anchors(full):
                problems.append(f'{rel}:{n}: the link {target}: no heading of {os.path.relpath(full, root)} '
                                f'has the anchor #{anchor}')
    return problems


def sandbox(root, build):
    """A scratch folder that looks like the clone: links to the tree, build/ to the build."""
    work = tempfile.mkdtemp(prefix='doc-commands-')
    for name in os.listdir(root):
        if name in ('.git', 'build') or name.startswith('build-'):
            continue
        os.symlink(os.path.join(root, name), os.path.join(work, name))
    os.symlink(build, os.path.join(work, 'build'))
    return work


def environment():
    env = {k: v for k, v in os.environ.items() if not DROP_ENV.match(k)}
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    return env


def run(block, work, env):
    """Runs one ```sh block; returns the problems found."""
    start = time.monotonic()
    proc = subprocess.Popen(['bash', '-e', '-o', 'pipefail', '-c', block.text], cwd=work, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors='replace', start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            output, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        return [f'{block.where()}: still running after {TIMEOUT_S} s:\n{tail(output)}']
    took = time.monotonic() - start
    want = int(block.values('exit')[0]) if block.values('exit') else 0
    problems = []
    if proc.returncode != want:
        problems.append(f'{block.where()}: exited {proc.returncode}, not {want}')
    for text in block.values('expect'):
        if text not in output:
            problems.append(f'{block.where()}: the output does not contain "{text}"')
    print(f'{block.where()}: {"ok" if not problems else "FAILED"} in {took:.1f} s: {first_line(block.text)}',
          flush=True)
    if problems:
        problems.append(f'{block.where()}: its output:\n{tail(output)}')
    return problems


def first_line(text):
    line = text.strip().split('\n')[0]
    return line if len(line) < 100 else line[:97] + '...'


def tail(output, lines=40):
    return '\n'.join('    ' + l for l in output.rstrip('\n').split('\n')[-lines:])


def missing_prerequisites(root, build):
    needed = [os.path.join(build, p) for p in ('trainrun', 'examples/hello', 'examples/mnist/mnist_train',
                                               'integrations/python/trainrun')]
    needed.append(os.path.join(root, 'data/mnist/mnist.bin'))
    return [p for p in needed if not os.path.exists(p)]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    root, build = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    files = sys.argv[3:] or ['README.md'] + sorted(
        os.path.join('docs', f) for f in os.listdir(os.path.join(root, 'docs')) if f.endswith('.md'))
    # What can be checked without running anything, first.
    problems, parsed = [], []
    for rel in files:
        with open(os.path.join(root, rel)) as f:
            text = f.read()
        blocks, found = parse(rel, text)
        problems += found + link_problems(root, rel, text)
        if rel == 'README.md':
            problems += front_page_problems(rel, text, blocks)
        for b in blocks:
            problems += excerpt_problems(root, b)
        parsed.append(blocks)
    missing = missing_prerequisites(root, build)
    if missing:
        for p in problems:
            print(p)
        print('doc-commands: the commands were not run: the README\'s set-up commands have not been run here '
              '(missing: ' + ', '.join(missing) + ')')
        sys.exit(1 if problems else 77)
    env, ran = environment(), 0
    start = time.monotonic()
    for blocks in parsed:
        runnable = [b for b in blocks if b.info == 'sh' and not b.values('skip')]
        if not runnable:
            continue
        work = sandbox(root, build)
        try:
            for b in runnable:
                problems += run(b, work, env)
                ran += 1
        finally:
            shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print(p)
    print(f'doc-commands: {ran} command block(s) of {len(files)} file(s) run in {time.monotonic() - start:.0f} s; '
          f'{len([p for p in problems if "its output:" not in p])} problem(s)')
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
