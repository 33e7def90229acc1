"""The docs site builds offline in strict mode: a broken link, a missing
anchor or a page in the nav that is not in docs/ fails the build."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _build(config, site):
    # NO_MKDOCS_2_WARNING: Material's banner about MkDocs 2.0 (stderr noise).
    env = dict(os.environ, NO_MKDOCS_2_WARNING='1')
    return subprocess.run(
        [sys.executable, '-m', 'mkdocs', 'build', '--strict',
         '--config-file', config, '--site-dir', str(site)],
        capture_output=True, text=True, timeout=300, env=env)


def test_docs_site_builds_strict(tmp_path):
    result = _build(os.path.join(ROOT, 'mkdocs.yml'), tmp_path / 'site')
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    for page in ('index.html', 'actorq/index.html', 'gst/index.html',
                 'flags/index.html', 'results/index.html'):
        assert (tmp_path / 'site' / page).is_file(), page


def test_a_broken_link_fails_the_strict_build(tmp_path):
    docs = tmp_path / 'docs'
    docs.mkdir()
    shutil.copy(os.path.join(ROOT, 'mkdocs.yml'), tmp_path / 'mkdocs.yml')
    with open(tmp_path / 'mkdocs.yml', 'a') as handle:
        handle.write('\n')  # The nav names pages this tree lacks: strict fails.
    (docs / 'index.md').write_text('# x\n\n[gone](no_such_page.md)\n')
    result = _build(str(tmp_path / 'mkdocs.yml'), tmp_path / 'site')
    assert result.returncode != 0
    assert 'no_such_page.md' in result.stdout + result.stderr
