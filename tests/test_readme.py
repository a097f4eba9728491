"""Every Python block of the README runs as shown (as a file, as a reader would save
it); a block the README presents as another's output is exactly what that prints."""
import pathlib
import subprocess
import sys

import pytest

from doc_blocks import python_blocks

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = python_blocks(README)
OUTPUT = "def layer_forward"  # the generated code the compiler example prints


@pytest.mark.parametrize("k", [k for k, b in enumerate(BLOCKS) if not b.startswith(OUTPUT)])
def test_a_readme_block_runs(k, tmp_path):
    script = tmp_path / f"block_{k}.py"
    script.write_text(BLOCKS[k])
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    shown = BLOCKS[k + 1] if k + 1 < len(BLOCKS) else ""
    if shown.startswith(OUTPUT):
        assert run.stdout.strip() == shown.strip()


def test_the_readme_has_blocks_to_run():
    assert len(BLOCKS) >= 3
