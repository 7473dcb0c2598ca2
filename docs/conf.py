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


def parameter_tables() -> str:
    """The reStructuredText of every learner's parameter table (``xmltree._params``)."""
    from xmltree._cli_options import PARAMETER_TABLES
    from xmltree._params import describe

    lines = []
    for learner, table in PARAMETER_TABLES.items():
        lines += [learner, "-" * len(learner), "", ".. list-table::", "   :header-rows: 1", "",
                  "   * - parameter", "     - accepts", "     - command line", "     - what"]
        for param in table:
            flag = f"``--{param.name.replace('_', '-')}``" if param.cli else "Python only"
            lines += [f"   * - ``{param.name}``", f"     - {describe(param)}", f"     - {flag}",
                      f"     - {param.help}"]
        lines.append("")
    return "\n".join(lines)


def _fill_parameter_tables(app, docname, source):
    """Replace the ``.. parameter tables`` comment of a page with the generated tables."""
    marker = ".. parameter tables"
    if marker in source[0]:
        source[0] = source[0].replace(marker, parameter_tables())


def setup(app):
    app.connect("source-read", _fill_parameter_tables)
