#!/usr/bin/env python3
"""Writes the man pages whose home is a page of docs/ (the command's own page, framedump.1,
comes from `--help`: scripts/make_manual.sh):

    man/framedump-dissector.5   from docs/dissector-language.md
    man/framedump-filters.7     from docs/filters.md

The docs stay the one home of these facts; the pages are made from them by this script, and
`swift test` (CommandLineTests) fails when a committed page is not what the script makes now.

    scripts/make_man_pages.py            # writes the pages
    scripts/make_man_pages.py --check    # exit 1, naming the page, when one is out of date

It knows the Markdown the docs use: headings, paragraphs, fenced code, lists, tables, `code`,
**bold**, [links](target).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATE = "2026-11-23"
PAGES = [
    ("docs/dissector-language.md", "man/framedump-dissector.5", "FRAMEDUMP-DISSECTOR", "5",
     "framedump-dissector", "the dissector language of framedump"),
    ("docs/filters.md", "man/framedump-filters.7", "FRAMEDUMP-FILTERS", "7",
     "framedump-filters", "display filters (-Y) of framedump"),
]


def escape(text):
    """roff's special characters in running text."""
    text = text.replace("\\", "\\e")
    return text


def inline(text):
    """`code` in bold, **bold** in bold, [label](target) as its label, then roff-escaped."""
    out = []
    pos = 0
    pattern = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)]+)\)")
    for m in pattern.finditer(text):
        out.append(escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + escape(m.group(1)) + "\\fR")
        elif m.group(2) is not None:
            out.append("\\fB" + escape(m.group(2)) + "\\fR")
        else:
            out.append(escape(m.group(3)))
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def line_start(s):
    """A line that roff would take as a request or that starts with a space is protected."""
    if s.startswith(".") or s.startswith("'"):
        return "\\&" + s
    return s


def convert(md, title, section, name, summary):
    lines = md.split("\n")
    out = [
        '.TH %s %s "%s" "framedump" "framedump manual"' % (title, section, DATE),
        ".SH NAME",
        "%s \\- %s" % (name, escape(summary)),
    ]
    i = 0
    paragraph = []

    def flush():
        if paragraph:
            out.append(".PP")
            out.append(line_start(inline(" ".join(paragraph))))
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            i += 1
            out.append(".PP")
            out.append(".RS 4")
            out.append(".nf")
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(line_start(escape(lines[i])))
                i += 1
            out.append(".fi")
            out.append(".RE")
            i += 1
            continue
        heading = re.match(r"^(#+)\s+(.*)$", line)
        if heading:
            flush()
            level = len(heading.group(1))
            text = inline(heading.group(2))
            if level == 1:
                out.append(".SH DESCRIPTION")
                out.append(".PP")
                out.append(text)
            elif level == 2:
                out.append(".SH " + text.upper())
            else:
                out.append(".SS " + text)
            i += 1
            continue
        if line.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(re.match(r"^:?-+:?$", c) for c in cells):
                    rows.append(cells)
                i += 1
            # One entry a row: the first cell tagged, the others after it.
            header = rows[0] if rows else []
            for row in rows[1:]:
                out.append(".TP")
                out.append(line_start(inline(row[0])))
                rest = []
                for h, c in zip(header[1:], row[1:]):
                    rest.append(("%s: %s" % (h, c)) if h else c)
                out.append(line_start(inline("; ".join(rest))))
            continue
        item = re.match(r"^(\s*)(?:[-*]|\d+\.)\s+(.*)$", line)
        if item:
            flush()
            text = [item.group(2)]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() and \
                    not re.match(r"^\s*(?:[-*]|\d+\.)\s+", lines[i]):
                text.append(lines[i].strip())
                i += 1
            out.append(".IP \\(bu 2")
            out.append(line_start(inline(" ".join(text))))
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        paragraph.append(line.strip())
        i += 1
    flush()
    out.append(".SH SEE ALSO")
    out.append(".BR framedump (1)" + "".join(
        ", \n.BR %s (%s)" % (n, s) for (_, _, _, s, n, _) in PAGES if n != name))
    return "\n".join(out) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for src, dst, title, section, name, summary in PAGES:
        with open(os.path.join(ROOT, src), encoding="utf-8") as f:
            page = convert(f.read(), title, section, name, summary)
        path = os.path.join(ROOT, dst)
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != page:
                        stale.append(dst)
            except FileNotFoundError:
                stale.append(dst)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
            print("wrote %s (read it with: man ./%s)" % (dst, dst))
    if stale:
        print("out of date with docs/: %s (run scripts/make_man_pages.py)" % ", ".join(stale))
        sys.exit(1)


if __name__ == "__main__":
    main()
