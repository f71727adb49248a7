"""Publish screenshots/ with the docs site, so that docs/ can show the same pictures as GitHub.

The pages link to a picture as `../screenshots/NAME.svg` (relative to the page, as GitHub resolves
it). MkDocs only knows files under docs_dir, so this hook adds every picture here to the site's
files under `screenshots/` and drops one `../` from those links before MkDocs checks them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

HERE = Path(__file__).resolve().parent
PICTURES = (".svg", ".png")


def on_files(files: Files, config: Any) -> Files:
    """Add each picture of screenshots/ to the site's files as screenshots/NAME."""
    for path in sorted(HERE.iterdir()):
        if path.suffix in PICTURES:
            files.append(
                File(
                    f"{HERE.name}/{path.name}",
                    src_dir=str(HERE.parent),
                    dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"],
                )
            )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Point a page's links to ../screenshots/ at the copy the site holds beside docs_dir's root."""
    depth = page.file.src_uri.count("/")
    github = "](" + "../" * (depth + 1) + f"{HERE.name}/"
    site = "](" + "../" * depth + f"{HERE.name}/"
    return markdown.replace(github, site)
