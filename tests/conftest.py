"""Makes the repository root importable, so tests import helpers as `from tests.builders import …`.

pytest's default `prepend` import mode puts each test file's own directory on
`sys.path`, not the root, and this tree has no `__init__.py` files (test file
basenames are unique instead). Inserting the root here, once, works however pytest is
invoked (`.venv/bin/pytest`, `python -m pytest`, a single file).
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
