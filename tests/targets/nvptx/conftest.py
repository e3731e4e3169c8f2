"""Puts this folder on sys.path so the tests can import `nvptx_testing` (the suite runs
with --import-mode=importlib, as tests/conftest.py does for tests/)."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
