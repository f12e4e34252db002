"""scripts/check_layers.py: the tree keeps its layers, and an include that
goes up, or from fs into a backend, is caught with its file and line.

Usage: test_layers.py SOURCE_ROOT (meson test `layers`).
"""
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import check_layers  # noqa: E402


class LayersTest(unittest.TestCase):
    def tree(self, files):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d.name, path)), exist_ok=True)
            with open(os.path.join(d.name, path), 'w') as f:
                f.write(text)
        return d.name

    def test_the_tree_keeps_its_layers(self):
        self.assertEqual(check_layers.violations(ROOT), [])

    def test_an_include_going_up_is_named_with_its_line(self):
        root = self.tree({
            'pmu/backend.h': '#pragma once\n#include "pmu/result.h"\n#include "session/engine.h"\n',
            'session/engine.h': '#include "fs/filesystem.h"\n',
        })
        got = {(p, line, inc) for p, line, inc, _ in check_layers.violations(root)}
        self.assertEqual(got, {('pmu/backend.h', 3, 'session/engine.h'), ('session/engine.h', 1, 'fs/filesystem.h')})

    def test_fs_names_no_backend_and_a_backend_no_other(self):
        root = self.tree({
            'fs/pfmfsd.cpp': '#include "pmu/backend_registry.h"\n#include "pmu/sim/sim_backend.h"\n',
            'pmu/sim/sim_backend.cpp': '#include "pmu/perf_event/perf_event.h"\n#include "pmu/perf/perf_models.h"\n',
        })
        got = {(p, inc) for p, _, inc, _ in check_layers.violations(root)}
        self.assertEqual(got, {('fs/pfmfsd.cpp', 'pmu/sim/sim_backend.h'),
                               ('pmu/sim/sim_backend.cpp', 'pmu/perf/perf_models.h')})

    def test_only_the_registry_names_every_backend(self):
        text = '#include "pmu/sim/sim_backend.h"\n#include "pmu/x86/x86_backend.h"\n'
        root = self.tree({'pmu/backend_registry.cpp': text, 'pmu/backend_entry.cpp': text})
        got = {(p, inc) for p, _, inc, _ in check_layers.violations(root)}
        self.assertEqual(got, {('pmu/backend_entry.cpp', 'pmu/sim/sim_backend.h'),
                               ('pmu/backend_entry.cpp', 'pmu/x86/x86_backend.h')})

    def test_a_new_folder_needs_its_row(self):
        root = self.tree({'pmu/arm/arm_backend.cpp': '#include "pmu/backend.h"\n'})
        (p, _, _, why), = check_layers.violations(root)
        self.assertEqual(p, 'pmu/arm/arm_backend.cpp')
        self.assertIn('pmu/arm is not in', why)

    def test_the_command_fails_and_writes_no_stamp(self):
        root = self.tree({'session/a.cpp': '#include "fs/log.h"\n'})
        stamp = os.path.join(root, 'stamp')
        self.assertEqual(check_layers.main(['check_layers.py', root, '--stamp', stamp]), 1)
        self.assertFalse(os.path.exists(stamp))
        self.assertEqual(check_layers.main(['check_layers.py', ROOT, '--stamp', stamp]), 0)
        self.assertTrue(os.path.exists(stamp))


if __name__ == '__main__':
    unittest.main(verbosity=2)
