"""MkDocs hook: the practicals' notebooks become pages of the site, under ``notebooks/``.

The notebooks stay where students and CI find them (``notebooks/*.ipynb``: the student
versions, gaps included, and the complete self-play reference); this hook adds them to the
site's files, at the same path as in the repository, so that mkdocs-jupyter renders each
one as a page without running it (``execute: false`` in mkdocs.yml: no training at build
time).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files


@event_priority(100)  # before mkdocs-jupyter's on_files, which turns notebooks into pages
def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = Path(config.config_file_path).parent
    for notebook in sorted((root / "notebooks").glob("*.ipynb")):
        files.append(
            File(
                notebook.relative_to(root).as_posix(),
                src_dir=str(root),
                dest_dir=config.site_dir,
                use_directory_urls=config.use_directory_urls,
            )
        )
    return files
