"""`python -m egraph_lower.schema`: print the format's JSON Schema (the shipped graph.schema.json)."""

import sys

from . import text

sys.stdout.write(text())
