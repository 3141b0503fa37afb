#!/usr/bin/env python3
"""Every C++ and CUDA source of mimic is formatted as the root's .clang-format says: runs
`clang-format --dry-run -Werror` (Debian 12's clang-format 14, installed by scripts/setup.sh) over
the source folders and lists the files it would change. Tables that read better one row per line
are fenced with `// clang-format off` / `// clang-format on`.

  scripts/check_format.py [--fix]     (--fix formats the files in place)
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ("backends", "benchmarks", "frontend", "models", "sim", "tests", "traces")
SUFFIXES = (".cpp", ".h", ".cu", ".cuh")
SKIPPED = 77  # CTest's SKIP_RETURN_CODE


def sources():
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith("build"))
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    yield os.path.join(folder, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fix", action="store_true", help="format the files in place")
    a = ap.parse_args()
    tool = shutil.which("clang-format-14") or shutil.which("clang-format")
    if not tool:
        print("check_format: skipped: clang-format not found (scripts/setup.sh --test installs it)")
        return SKIPPED
    files = list(sources())
    if a.fix:
        subprocess.run([tool, "-i", *files], check=True)
        return 0
    def unformatted(f):
        return subprocess.run([tool, "--dry-run", "-Werror", f], capture_output=True).returncode != 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        bad = [f for f, b in zip(files, pool.map(unformatted, files)) if b]
    for f in bad:
        print(f"{os.path.relpath(f, ROOT)}: not formatted (scripts/check_format.py --fix)")
    print(f"format: {len(files)} files, {len(bad)} not formatted")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
