#!/usr/bin/env python3
"""The man pages docs/meson.build generates, checked as lintian checks a
package's pages: each renders in man(1) at 80 columns and in groff with every
warning on without a word on stderr, its NAME section is in whatis form
(lexgrog(1)), and `meson install` puts it where man finds it.

    test_manpages.py --meson MESON --build-dir DIR --mandir PREFIX/MANDIR PAGE...

Nothing is skipped: a missing man, groff or lexgrog is a failure
(scripts/install-deps.sh installs them).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class ManPageTest(unittest.TestCase):

    def test_man_renders_without_warnings(self):
        # lintian's own command line (its groff-message check).
        env = dict(os.environ, MANWIDTH='80', LC_ALL='C.UTF-8', MANROFFSEQ='')
        for page in ARGS.pages:
            with self.subTest(page=os.path.basename(page)):
                out = run(['man', '--warnings', '-E', 'UTF-8', '-l', '-Tutf8', '-Z', page], env=env)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(out.stderr, '')
                self.assertIn('NAME', out.stdout)

    def test_groff_all_warnings(self):
        # -ww: every warning category, line breaking and tables included; on
        # the terminal device, which is where the pages are read. -k: the
        # pages are UTF-8 (preconv), as man passes them.
        for page in ARGS.pages:
            with self.subTest(page=os.path.basename(page)):
                out = run(['groff', '-k', '-t', '-man', '-ww', '-z', '-Tutf8', page],
                          env=dict(os.environ, LC_ALL='C.UTF-8'))
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(out.stderr, '')

    def test_name_section_is_whatis(self):
        for page in ARGS.pages:
            with self.subTest(page=os.path.basename(page)):
                out = run(['lexgrog', page])
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                name = os.path.basename(page).rsplit('.', 1)[0]
                # page.N: "name - what it is"
                self.assertRegex(out.stdout, rf'^{re.escape(page)}: "{re.escape(name)}(, [^ ]+)* - \S')

    def test_title_names_page_and_section(self):
        for page in ARGS.pages:
            with self.subTest(page=os.path.basename(page)):
                name, section = os.path.basename(page).rsplit('.', 1)
                with open(page, encoding='utf-8') as f:
                    th = next(l for l in f if l.startswith('.TH '))
                self.assertTrue(th.startswith(f'.TH "{name.upper()}" "{section}" '), th)
                self.assertIn('"pfmfs ', th)

    def test_tables_ask_for_tbl(self):
        # Without '\" t first, man does not run tbl where its default
        # preprocessors are off (lintian's MANROFFSEQ=''): the tables would
        # print as their source and the check above would not see them.
        for page in ARGS.pages:
            with self.subTest(page=os.path.basename(page)):
                with open(page, encoding='utf-8') as f:
                    text = f.read()
                if re.search(r'^\.TS$', text, flags=re.M):
                    self.assertTrue(text.startswith("'\\\" t\n"), text[:40])

    def test_meson_install_puts_pages_where_man_finds_them(self):
        with tempfile.TemporaryDirectory() as destdir:
            out = run([ARGS.meson, 'install', '-C', ARGS.build_dir, '--no-rebuild',
                       '--quiet', '--tags', 'man', '--destdir', destdir])
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            manpath = destdir + ARGS.mandir
            installed = []
            for root, _, files in os.walk(destdir):
                installed += [os.path.relpath(os.path.join(root, f), manpath) for f in files]
            expected = ['man{0}/{1}'.format(p.rsplit('.', 1)[1], os.path.basename(p))
                        for p in ARGS.pages]
            self.assertEqual(sorted(installed), sorted(expected))
            for page in ARGS.pages:
                name, section = os.path.basename(page).rsplit('.', 1)
                with self.subTest(page=name):
                    # man -w: the file man would show for "man SECTION NAME".
                    found = run(['man', '-w', section, name],
                                env=dict(os.environ, MANPATH=manpath))
                    self.assertEqual(found.returncode, 0, found.stderr)
                    self.assertEqual(found.stdout.strip(),
                                     os.path.join(manpath, f'man{section}', f'{name}.{section}'))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--meson', required=True)
    ap.add_argument('--build-dir', required=True)
    ap.add_argument('--mandir', required=True, help='PREFIX/MANDIR, absolute')
    ap.add_argument('pages', nargs='+')
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
