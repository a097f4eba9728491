"""The examples run as a newcomer runs them, and say what they claim."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path):
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_training_converges_and_shows_the_adjoint():
    out = subprocess.run([sys.executable, str(EXAMPLES[0].parent / "train_mlp.py")],
                         capture_output=True, text=True, timeout=120).stdout
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step")]
    assert losses[-1] < losses[0] / 100
    assert "compiled gradient == tape gradient" in out
    assert "def loss_backward(tape, dout):" in out and "# line " in out


def test_inspect_adjoint_matches_finite_differences():
    out = subprocess.run([sys.executable, str(EXAMPLES[0].parent / "inspect_adjoint.py")],
                         capture_output=True, text=True, timeout=120).stdout
    line = next(line for line in out.splitlines() if line.startswith("d/drate"))
    compiled, numeric = float(line.split()[2]), float(line.split()[-1])
    assert compiled == pytest.approx(numeric, rel=1e-6)
