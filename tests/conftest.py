"""Every compile in the test suite checks the compiler's invariants (compiler/checks.py)."""
import os

os.environ["SRCDIFF_CHECKS"] = "1"
