#!/usr/bin/python3
"""Lists the functions of trainrun's C++ sources that run over a line limit.

A function is a brace block at namespace level (or a member defined inside
a class) whose opening brace follows a ')' (possibly with const, noexcept,
override, an initializer list or a trailing return type in between); its
length is counted from the line of its signature to its closing brace. A
function may be longer when the line before its signature is a comment
`// long: <reason>`.

Usage: long_functions.py [--max N] [ROOT]   (ROOT: the repository, default
this script's parent). Prints `path:line: name is N lines` for each one and
exits 1 if there is any, 0 otherwise. Debian's python3, no packages.
"""
import argparse
import os
import re
import sys

FOLDERS = ("vocabulary", "os", "contract", "rendezvous", "backends", "lib", "integrations", "cli")
# "X::X(args) : a_(b), c_" before a '{': c_'s brace initializer, not a body.
INIT_BRACE = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)[^;{]*?(?:^|[\s,:])[A-Za-z_]\w*\s*$")
CONTROL = {"if", "for", "while", "switch", "catch", "return", "do", "else", "sizeof", "alignof", "decltype"}


def strip(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head):
    """The function's name from the text before its '{', or None if it is no function."""
    head = re.sub(r"\s+", " ", head).strip()
    # Drop a constructor's initializer list: "X::X(args) : a_(b), c_{d}".
    depth, cut = 0, None
    for k, ch in enumerate(head):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                cut = k
                rest = head[k + 1:]
                if re.match(r"^\s*(const\s*|noexcept\s*|override\s*|final\s*|&\s*|->[^:]*)*:(?!:)", rest):
                    break
    if cut is None:
        return None
    # The '(' that matches the ')' found above.
    before, depth = None, 0
    for k in range(cut, -1, -1):
        if head[k] == ")":
            depth += 1
        elif head[k] == "(":
            depth -= 1
            if depth == 0:
                before = head[:k]
                break
    if before is None:
        return None
    m = re.search(r"(~?[A-Za-z_][\w:]*(?:<[^()]*>)?|operator\s*[^\s(]+)\s*$", before)
    if not m:
        return None
    name = m.group(1)
    if name.split("::")[-1] in CONTROL or "=" in before.split("(")[0][-2:]:
        return None
    return name


def long_functions(path, limit):
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read()
    lines = raw.split("\n")
    text = strip(raw)
    found = []
    depth = 0
    stack = []  # (kind, start offset, name) per open brace
    statement_start = 0
    for i, ch in enumerate(text):
        if ch == "{":
            head = text[statement_start:i]
            if INIT_BRACE.search(re.sub(r"\s+", " ", head)):
                stack.append(("init", i, None))  # a member's brace initializer: the head goes on
                continue
            name = None
            if not any(kind == "function" for kind, _, _ in stack) and ")" in head:
                name = function_name(head)
            first = len(text) - len(text[statement_start:].lstrip())
            stack.append(("function" if name else "block", first, name))
            statement_start = i + 1
        elif ch == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "init":
                    continue
                if kind == "function":
                    first_line = text.count("\n", 0, start) + 1
                    last_line = text.count("\n", 0, i) + 1
                    length = last_line - first_line + 1
                    reason = lines[first_line - 2].strip() if first_line >= 2 else ""
                    if length > limit and not reason.startswith("// long:"):
                        found.append((first_line, name, length))
            statement_start = i + 1
        elif ch == ";":
            statement_start = i + 1
        elif ch == "\n" and text[statement_start:i].lstrip().startswith("#"):
            statement_start = i + 1  # a preprocessor line is no part of a signature
        elif ch in ":" and text[statement_start:i].strip() in ("public", "private", "protected"):
            statement_start = i + 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max", type=int, default=80, help="the longest a function may be (lines)")
    parser.add_argument("root", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    count = 0
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(args.root, folder)):
            dirnames.sort()
            for filename in sorted(filenames):
                if not filename.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, filename)
                for line, name, length in long_functions(path, args.max):
                    print(f"{os.path.relpath(path, args.root)}:{line}: {name} is {length} lines "
                          f"(more than {args.max}; split it, or say why on the line before: // long: <reason>)")
                    count += 1
    if count:
        print(f"{count} function(s) over {args.max} lines")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main())
