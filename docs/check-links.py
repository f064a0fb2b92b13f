#!/usr/bin/env python3
"""Checks the relative links of the book (docs/src), README.md and BENCHMARKS.md: every
linked file exists, every #anchor names a heading of its page, and no page of the book
links outside docs/src (the built book would not have the file). mdBook checks none of
this. Usage: python3 docs/check-links.py [repository root]; exits 1 naming each broken
link."""

import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
BOOK = ROOT / "docs" / "src"

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INCLUDE = re.compile(r"\{\{#include\s+([^}\s]+)\s*\}\}")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def expanded(path):
    """The page's text with mdBook's {{#include}} lines replaced by what they include."""
    text = path.read_text(encoding="utf-8")
    return INCLUDE.sub(lambda m: (path.parent / m.group(1)).read_text(encoding="utf-8"), text)


def anchor(heading):
    """The id mdBook (and GitHub) give a heading: its text, lower case, spaces to
    hyphens, punctuation other than - and _ dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return "".join(
        c.lower() if c.isalnum() or c in "-_" else "-" if c.isspace() else ""
        for c in text
    )


def anchors(path):
    found, seen = set(), {}
    for _, line in prose_lines(expanded(path)):
        m = HEADING.match(line)
        if m:
            base = anchor(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path):
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)
        for m in LINK.finditer(line):
            yield number, m.group(1), False
        for m in INCLUDE.finditer(line):
            yield number, m.group(1), True


def check(path):
    problems = []
    in_book = BOOK in path.parents
    for number, target, included in links(path):
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:: not checked here
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            problems.append(f"{where}: no such file")
            continue
        # An {{#include}} is copied into the page; a link must point inside the book.
        if in_book and not included and BOOK not in linked.parents and linked != path:
            problems.append(f"{where}: outside docs/src, missing from the built book")
            continue
        if fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            problems.append(f"{where}: no heading #{fragment} in {linked.relative_to(ROOT)}")
    return problems


def main():
    pages = sorted(BOOK.rglob("*.md")) + [ROOT / "README.md", ROOT / "BENCHMARKS.md"]
    problems = [p for page in pages if page.exists() for p in check(page)]
    for p in problems:
        print(p, file=sys.stderr)
    print(f"links: {len(pages)} pages checked, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
