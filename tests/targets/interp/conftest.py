"""Puts this folder on sys.path so the tests can import `_interp_util` (importlib import mode)."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
