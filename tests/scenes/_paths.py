"""Puts tools/, tools/train, tools/eval and tests/reference on sys.path for the tests of this folder."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for sub in ("tools", os.path.join("tools", "train"), os.path.join("tools", "eval"), os.path.join("tests", "reference")):
    path = os.path.join(ROOT, sub)
    if path not in sys.path:
        sys.path.insert(0, path)
