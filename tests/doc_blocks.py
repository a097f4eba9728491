"""The code blocks of a Markdown file, as the tests of the README and docs/ read them."""
import re


def python_blocks(path):
    """The text of each fenced ```python block of the Markdown file ``path``, in order."""
    return re.findall(r"^```(?:python|py)\n(.*?)^```", path.read_text(), re.S | re.M)
