#!/usr/bin/env python3
"""Function-length budget of mimic's library code (tests and benchmarks apart): every function
body longer than BUDGET lines fails, unless it is listed in scripts/long_functions.txt with at
least its current length (a ratchet: listed functions may shrink, never grow, and a new long
function is refused). Lengths count the lines from the opening brace to the closing one.

  scripts/check_function_length.py [--budget 80] [--update]   (--update rewrites the list)
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ("backends", "models", "frontend", "sim", "traces")
ALLOWED = os.path.join(ROOT, "scripts", "long_functions.txt")
NOT_A_FUNCTION = re.compile(r"^\s*(?:namespace|class|struct|union|enum|extern)\b|=\s*$|\b(?:if|for|while|switch|catch|do)\s*\(|^\s*(?:else|do|try)\s*$")


def strip(text):
    """Comments, string and character literals blanked (newlines kept)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    pattern = r'//[^\n]*|/\*.*?\*/|R"(?P<d>[^(]*)\(.*?\)(?P=d)"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    return re.sub(pattern, blank, text, flags=re.S)


def functions(path):
    """(name, first line, length) of every function body not nested in another function."""
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    out, stack, head, line = [], [], "", 1
    for ch in text:
        if ch == "\n":
            line += 1
        if ch == "{":
            inside_function = any(kind == "function" for kind, _, _ in stack)
            signature = " ".join(head.split())
            is_function = (not inside_function and ")" in signature and "(" in signature
                           and not NOT_A_FUNCTION.search(signature))
            name = ""
            if is_function:
                m = re.search(r"([\w:~<>]+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)[^()]*$", signature)
                name = m.group(1) if m else signature[:40]
            stack.append(("function" if is_function else "block", name, line))
            head = ""
        elif ch == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind == "function":
                    out.append((name, start, line - start + 1))
            head = ""
        elif ch == ";":
            head = ""
        else:
            head += ch
    return out


def scan():
    found = {}
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if f.endswith((".cpp", ".h", ".cu", ".cuh")):
                    path = os.path.join(dirpath, f)
                    rel = os.path.relpath(path, ROOT)
                    for name, start, length in functions(path):
                        key = f"{rel}:{name}"
                        found[key] = max(found.get(key, 0), length)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=80)
    ap.add_argument("--update", action="store_true", help="rewrite the list of allowed long functions")
    a = ap.parse_args()
    long = {k: n for k, n in scan().items() if n > a.budget}
    if a.update:
        with open(ALLOWED, "w") as f:
            f.write(f"# Functions over the {a.budget}-line budget, with their length: each may shrink, none may "
                    "grow,\n# and no new one may join (scripts/check_function_length.py). Split them.\n")
            for k in sorted(long):
                f.write(f"{k} {long[k]}\n")
        print(f"wrote {len(long)} functions to {os.path.relpath(ALLOWED, ROOT)}")
        return 0
    allowed = {}
    for entry in open(ALLOWED):
        if entry.strip() and not entry.startswith("#"):
            key, n = entry.rsplit(" ", 1)
            allowed[key] = int(n)
    problems = []
    for k, n in sorted(long.items()):
        if k not in allowed:
            problems.append(f"{k}: {n} lines, over the {a.budget}-line budget")
        elif n > allowed[k]:
            problems.append(f"{k}: grew from {allowed[k]} to {n} lines (over the {a.budget}-line budget)")
    for p in problems:
        print(p)
    print(f"function length: {len(long)} functions over {a.budget} lines, {len(allowed)} allowed; "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
