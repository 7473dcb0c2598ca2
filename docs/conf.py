"""Sphinx configuration of the xmltree API reference.

Built by ``tools/build_docs.sh`` with warnings as errors. Everything works
offline: the docstrings are numpydoc and rendered by the numpydoc extension,
the theme is Sphinx's default, and nothing links to other projects'
inventories (intersphinx would need the network).
"""

import xmltree

project = "xmltree"
author = "xmltree developers"
copyright = "xmltree developers"
release = version = xmltree.__version__

extensions = ["sphinx.ext.autodoc", "numpydoc"]

# Classes list their members through autodoc; numpydoc's own member tables
# would need autosummary stub pages.
numpydoc_show_class_members = False
autodoc_member_order = "bysource"
