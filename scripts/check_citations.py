#!/usr/bin/env python3
"""Every citation in mimic's sources resolves inside the repository: each source key (S1-S10,
S1-T) and confidence tag ([R], [R-3P], [D], [M], [I], [?]) written in a comment or a preset's
`sources` string is defined in docs/references.md, each section it names (docs/references.md §D.2)
exists there, and no source points at a reference sheet outside the repository.

  scripts/check_citations.py [ROOT]      (exit 1 listing every unresolved citation)
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHEET = os.path.join(ROOT, "docs", "references.md")
SCANNED = ("backends", "models", "frontend", "sim", "traces", "benchmarks")
KEY = re.compile(r"\[(?:R|R-3P|D|M|I|\?)(?: ([^\]]*))?\]")  # [R S2], [R-3P S9 notes], [D]
SOURCE = re.compile(r"\bS\d+(?:-T)?\b")
SECTION = re.compile(r"references\.md ((?:§[A-Z](?:\.\d+)?(?:/|, )?)+)")
OUTSIDE = re.compile(r"shared/reference|hardware\.md")


def commented(path, text):
    """The comment text of a C++ file (// and /* */), or all of a Python or Markdown file."""
    if not path.endswith((".h", ".cpp")):
        return text
    parts = re.findall(r"//[^\n]*|/\*.*?\*/", text, re.S)
    parts += re.findall(r'"\[[^"]*"', text)  # preset `sources` strings: "[R S2] ..."
    return "\n".join(parts)


def main():
    sheet = open(SHEET, encoding="utf-8").read()
    keys = set(re.findall(r"^- \*\*(S\d+(?:-T)?)\*\*", sheet, re.M))
    tags = set(re.findall(r"^\| \*\*\[([^\]]+)\]\*\* \|", sheet, re.M))
    sections = set(re.findall(r"^##+ ([A-F](?:\.\d+)?)[. ]", sheet, re.M))
    problems, cited = [], 0
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".py", ".md")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                text = commented(path, open(path, encoding="utf-8", errors="replace").read())
                for m in KEY.finditer(text):
                    cited += 1
                    tag = m.group(0)[1:].split(" ")[0].rstrip("]")
                    if tag not in tags:
                        problems.append(f"{rel}: tag [{tag}] is not defined in docs/references.md")
                    for key in SOURCE.findall(m.group(1) or ""):
                        if key not in keys:
                            problems.append(f"{rel}: source {key} is not defined in docs/references.md")
                for m in SECTION.finditer(text):
                    for sec in re.findall(r"§([A-Z](?:\.\d+)?)", m.group(1)):
                        if sec not in sections:
                            problems.append(f"{rel}: section §{sec} is not in docs/references.md")
                for m in OUTSIDE.finditer(text):
                    problems.append(f"{rel}: cites '{m.group(0)}', outside the repository")
    for p in sorted(set(problems)):
        print(p)
    print(f"citations: {cited} checked against {len(keys)} source keys, {len(tags)} tags and "
          f"{len(sections)} sections; {len(set(problems))} unresolved")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
