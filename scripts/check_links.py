#!/usr/bin/env python3
"""Checks that every relative link in the Markdown docs resolves: the file exists and, for a
`#fragment`, the target has a heading with that GitHub anchor. External links are not fetched.

Run from the repository root: `python3 scripts/check_links.py` (exit status 1 on a broken link).
"""
import pathlib
import re
import sys
import unicodedata

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:\s*(\S+)", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def anchors(path):
    """GitHub's anchors for the headings of a Markdown file."""
    seen, out = {}, set()
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    for line in text.splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).lower()
        slug = "".join(
            c for c in title
            if c in "-_ " or unicodedata.category(c)[0] in "LNM"
        ).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    # Explicit anchors (<a id="...">, <a name="...">).
    out.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return out


def main():
    broken = 0
    for f in FILES:
        text = INLINE_CODE.sub("", FENCE.sub("", f.read_text(encoding="utf-8")))
        for m in LINK.finditer(text):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, …
                continue
            path, _, fragment = target.partition("#")
            dest = (f.parent / path).resolve() if path else f
            where = f"{f.relative_to(ROOT)}: {target}"
            if not dest.exists():
                print(f"{where}: no such file")
                broken += 1
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                print(f"{where}: no heading #{fragment} in {dest.relative_to(ROOT)}")
                broken += 1
    checked = ", ".join(str(f.relative_to(ROOT)) for f in FILES)
    print(f"{broken} broken link(s) in {len(FILES)} files ({checked})")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
