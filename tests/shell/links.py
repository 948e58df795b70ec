#!/usr/bin/env python3
"""Every relative link of the project's Markdown resolves: the file (or
directory) exists, and a `#fragment` names a heading of the target file as
GitHub makes its anchors. Also: the README is a guide of at most 500 lines.
Run from the repository root; prints each broken link and exits 1 if any."""
import os
import re
import sys

README_MAX_LINES = 500
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def markdown_files():
    skip = {"target", "vendor", ".git", "node_modules", "fuzz"}
    for top, dirs, files in os.walk("."):
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith(".")]
        for f in files:
            if f.endswith(".md"):
                yield os.path.normpath(os.path.join(top, f))


def anchors(path, cache={}):
    """GitHub's heading anchors of a Markdown file."""
    if path not in cache:
        seen, out, fence = {}, set(), False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"^#{1,6} +(.*?) *#* *$", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = out
    return cache[path]


def main():
    broken = []
    files = sorted(markdown_files())
    for path in files:
        fence = False
        for no, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                    continue
                file, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
                if not os.path.exists(dest):
                    broken.append(f"{path}:{no}: {target}: no such file {dest}")
                elif frag and dest.endswith(".md") and frag not in anchors(dest):
                    broken.append(f"{path}:{no}: {target}: no heading #{frag} in {dest}")
    for b in broken:
        print(b)
    lines = sum(1 for _ in open("README.md", encoding="utf-8"))
    if lines > README_MAX_LINES:
        broken.append("README.md")
        print(f"README.md: {lines} lines, more than {README_MAX_LINES}: depth belongs in docs/")
    print(f"links: {len(files)} Markdown files, {len(broken)} problems")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
