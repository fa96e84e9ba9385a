"""Sphinx configuration of the sktspt documentation.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install -e ".[test]"``
installs Sphinx, numpydoc and myst-parser). The pages are Markdown (MyST), the API
reference comes from the docstrings (autodoc + numpydoc); ``tests/test_docs.py`` builds
the site with warnings as errors.
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

from sktspt import __version__  # noqa: E402

project = "sktspt"
author = "sktspt contributors"
copyright = "sktspt contributors"  # noqa: A001 - Sphinx's name
version = release = __version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "tuning-history.md"]

# MyST: "[text](page.md#a-heading)" links in the pages resolve to heading anchors.
myst_heading_anchors = 3

# autodoc + numpydoc: members in source order, listed per directive in api.rst; inherited
# methods (scikit-learn's, sktime's) are not repeated, since their docstrings refer to
# those projects' glossaries.
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc "Parameters" sections already give the types
autodoc_default_options = {
    "show-inheritance": False,
    # scikit-learn's metadata-routing setters and sktime's test hook: documented there.
    "exclude-members": "set_fit_request, set_score_request, set_predict_request, "
    "set_predict_proba_request, set_transform_request, set_partial_fit_request, "
    "get_test_params",
}
numpydoc_show_class_members = False
numpydoc_xref_param_type = False

html_theme = "alabaster"
html_title = f"sktspt {version}"
html_static_path = []
