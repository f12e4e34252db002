#!/usr/bin/env python3
"""Turns one of docs/'s Markdown pages into a man page, with lowdown(1).

    md2man.py --lowdown PATH --source 'pfmfs 0.1.0' [--name N --section S] IN.md OUT

The pages stay plain GitHub Markdown; what man needs is done here, so that a
page's author only keeps the shape docs/CONTRIBUTING.md describes:

- Before lowdown: HTML comments go; the title line `# NAME(S) — SOURCE`
  becomes .TH's fields and its `##` sections become .SH (`###` .SS);
  a link becomes its text, followed by its target in parentheses
  where the text does not already say it (a man page name like pfmfs(5)
  says enough; a relative target is written from the repository's top,
  "docs/backends.md", as a terminal reader has no page to be relative
  to). A guide (a title without `(S)`, like docs/libpfm-compat.md) gets
  NAME from its title, `# NAME: WHAT`, with --name and --section saying
  the page's name.
- After lowdown: the NAME line's dash is `\\-`, the form whatis and
  lexgrog(1) read; a page with tables asks for tbl(1) on its first
  line (`'\\" t`); the tables get column widths that fit an 80-column
  terminal (lowdown leaves text columns at tbl's default, a fixed share of
  the line, which wraps a long column a word per line), ragged right so
  that narrow cells are not stretched, and `\\|` inside code in a cell
  (GitHub's way to put a pipe in a cell) loses its backslash.
"""
import argparse
import os
import posixpath
import re
import subprocess
import sys
import time

TITLE_RE = re.compile(r'^#\s+([A-Za-z0-9_.+-]+)\((\w+)\)\s+[—-]+\s+(.+?)\s*$')
GUIDE_TITLE_RE = re.compile(r'^#\s+([^:]+):\s*(.+?)\s*$')
LINK_RE = re.compile(r'(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)')
MAN_REF_RE = re.compile(r'^[\w.+-]+\(\d\w*\)$')
DOCS_DIR = 'docs'  # where the pages are, for their relative links

# What fits an 80-column terminal (MANWIDTH=80, lintian's width): man's line
# is 78 columns, 7 of them the section indent.
TABLE_WIDTH = 71
COLUMN_GAP = 3     # tbl's default column separation
BOX_EDGES = 2      # allbox's left and right rules


def fail(msg):
    sys.exit(f'md2man: {msg}')


def strip_comments(text):
    return re.sub(r'<!--.*?-->\n?', '', text, flags=re.S)


def outside_code(lines):
    """Yields (index, line) of the lines outside fenced code blocks."""
    fence = None
    for i, line in enumerate(lines):
        m = re.match(r'^\s*(```+|~~~+)', line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield i, line


def link_text(m):
    """A link as a terminal reader can follow it: its text, then where it
    points unless the text says it already. A page of docs/ points at
    others relative to docs/, which a man page reader does not have: the
    target is written from the repository's top."""
    text, target = m.group(1), m.group(2)
    plain = text.strip('`')
    if target.startswith('#') or MAN_REF_RE.match(plain):
        return text  # a section of this page, or "pfmfs(5)"
    if not re.match(r'^[a-z]+:', target):
        target = posixpath.normpath(posixpath.join(DOCS_DIR, target.split('#')[0]))
    if plain == target or plain.endswith(target) or target.endswith(plain):
        return text
    return f'{text} ({target})'


def preprocess(text, args):
    lines = strip_comments(text).split('\n')
    title_at = next((i for i, l in enumerate(lines) if l.startswith('# ')), None)
    if title_at is None:
        fail(f'{args.input}: no title line (# NAME(SECTION) — SOURCE)')
    title = lines[title_at]
    m = TITLE_RE.match(title)
    if m:
        meta = {'title': m.group(1).upper(), 'section': m.group(2),
                'source': args.source or m.group(3)}
        lines[title_at:title_at + 1] = []
    else:
        g = GUIDE_TITLE_RE.match(title)
        if not g or not (args.name and args.section):
            fail(f'{args.input}: title "{title}" is not "# NAME(SECTION) — SOURCE"'
                 ' (a guide titled "# NAME: WHAT" needs --name and --section)')
        meta = {'title': args.name.upper(), 'section': args.section,
                'source': args.source or ''}
        lines[title_at:title_at + 1] = [
            '## NAME', '', f'{args.name} - {g.group(2)}', '', '## DESCRIPTION']

    name_at = next((i for i, l in enumerate(lines) if l.strip() == '## NAME'), None)
    if name_at is None:
        fail(f'{args.input}: no "## NAME" section')
    # The NAME paragraph: "name[, name...] — what it is"; lowdown keeps " - ".
    j = name_at + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    if j == len(lines) or not re.search(r'\s[—-]\s', lines[j]):
        fail(f'{args.input}: the NAME line is not "name — what it is"')
    lines[j] = re.sub(r'\s[—-]\s', ' - ', lines[j], count=1)

    for i, line in list(outside_code(lines)):
        lines[i] = LINK_RE.sub(link_text, line)
    return '\n'.join(lines), meta


def visible_len(roff):
    """The width of a line of roff text on a terminal."""
    s = re.sub(r'\\f(\[[^\]]*\]|\(..|.)|\\[:&%]', '', roff)
    s = re.sub(r'\\(\(..|\[[^\]]*\]|.)', 'x', s)
    return len(s)


def breakable(word):
    """WORD with a break point (\\:) after each = _ / | and comma, so that a
    long identifier or option can wrap in a narrow column."""
    parts = re.split(r'(\\(?:\(..|\[[^\]]*\]|f(?:\[[^\]]*\]|\(..|.)|.))', word)
    return ''.join(p if p.startswith('\\') else re.sub(r'([=_/|,])(?=.)', r'\1\\:', p)
                   for p in parts)


def longest_piece(word):
    return max(visible_len(p) for p in word.split('\\:'))


def column_widths(cells, ncols):
    """Widths (in ens) that fit the table in TABLE_WIDTH when they can: each
    column gets its longest word, and the room left goes to the columns in
    proportion to how much more their longest cell needs (HTML's automatic
    table layout). Words too long for their share of the line get break
    points in CELLS."""
    room = TABLE_WIDTH - COLUMN_GAP * (ncols - 1) - BOX_EDGES
    share = max(16, room // ncols)
    longest = [1] * ncols
    word = [1] * ncols
    for row in cells:
        for c, lines in enumerate(row):
            longest[c] = max(longest[c], visible_len(' '.join(lines)))
            for n, line in enumerate(lines):
                words = line.split(' ')
                for k, w in enumerate(words):
                    if visible_len(w) > share:
                        words[k] = breakable(w)
                    word[c] = max(word[c], longest_piece(words[k]))
                lines[n] = ' '.join(words)
    if sum(longest) <= room:
        return longest
    if sum(word) >= room:
        return word
    spare = room - sum(word)
    want = [l - w for l, w in zip(longest, word)]
    widths = [w + spare * x // sum(want) for w, x in zip(word, want)]
    return widths


def text_blocks(body):
    """The cells (each a list of lines) of a table body whose every cell is
    a T{ ... T} block."""
    texts, cell = [], None
    for line in body.split('\n'):
        if cell is not None and line.startswith('T}'):
            texts.append(cell)
            cell = None
        elif cell is not None:
            cell.append(line)
        if line.endswith('T{'):
            cell = []
    return texts


def fix_table(block):
    """One .TS ... .TE block of lowdown's output, widened and unescaped."""
    lines = block.split('\n')
    fmt_start = 2  # .TS, options line, then format lines up to one ending in "."
    fmt_end = next(i for i in range(fmt_start, len(lines)) if lines[i].endswith('.'))
    body = '\n'.join(lines[fmt_end + 1:-1])
    body = body.replace('\\e|', '|')
    formats = [l.rstrip('.').split() for l in lines[fmt_start:fmt_end + 1]]
    ncols = len(formats[0])
    texts = text_blocks(body)
    if len(texts) % ncols or any(len(f) != ncols for f in formats):
        return block  # not the shape lowdown writes: leave it as it is
    cells = [texts[i:i + ncols] for i in range(0, len(texts), ncols)]
    widths = column_widths(cells, ncols)
    new_formats = [' '.join(f'{k}w({w}n)' for k, w in zip(f, widths)) for f in formats]
    new_formats[-1] += '.'
    body = '\n'.join('|'.join('T{\n' + '\n'.join(c) + '\nT}' for c in row) for row in cells)
    # .LP: lowdown starts a table that follows a list inside the list's last
    # item; docs/ has tables at the top level only.
    return '\n'.join(['.LP', '.na'] + lines[:fmt_start] + new_formats
                     + [body, '.TE', '.ad', '.sp'])


def postprocess(roff):
    if re.search(r'^\.TS$', roff, flags=re.M):
        # The tbl preprocessor line, first: man runs tbl for a page that asks,
        # also where it would not by default (lintian's MANROFFSEQ='').
        roff = "'\\\" t\n" + roff
    roff = re.sub(r'^(\.SH\nNAME\n\.LP\n[^\n]*?) - ', r'\1 \\- ', roff, count=1, flags=re.M)
    return re.sub(r'^\.TS\n.*?^\.TE$', lambda m: fix_table(m.group(0)), roff,
                  flags=re.S | re.M)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lowdown', default='lowdown')
    ap.add_argument('--source', help='.TH source field, e.g. "pfmfs 0.1.0"')
    ap.add_argument('--name', help="a guide's page name")
    ap.add_argument('--section', help="a guide's man section")
    ap.add_argument('input')
    ap.add_argument('output')
    args = ap.parse_args()

    with open(args.input, encoding='utf-8') as f:
        markdown, meta = preprocess(f.read(), args)
    # GitHub's Markdown: no emphasis inside words (perf_event_open), no
    # superscripts (2^64), definition lists or attributes.
    cmd = [args.lowdown, '-s', '-tman', '--parse-no-metadata', '--parse-no-intraemph',
           '--parse-no-super', '--parse-no-deflists', '--parse-no-ext-attrs',
           '-M', 'shiftheadinglevelby: -1']
    # .TH's date: the release's when a package build gives one (Debian sets
    # SOURCE_DATE_EPOCH), else none, so that a page is the same at every build.
    epoch = os.environ.get('SOURCE_DATE_EPOCH', '')
    if epoch.isdigit():
        meta['date'] = time.strftime('%Y-%m-%d', time.gmtime(int(epoch)))
    for key, value in meta.items():
        cmd += ['-M', f'{key}: {value}']
    out = subprocess.run(cmd, input=markdown, capture_output=True, text=True)
    if out.returncode != 0 or out.stderr:
        fail(f'{args.input}: lowdown: {out.stderr.strip() or out.returncode}')
    with open(args.output, 'w', encoding='utf-8') as f:
        f.write(postprocess(out.stdout))


if __name__ == '__main__':
    main()
