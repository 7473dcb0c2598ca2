"""Allow ``python -m xmltree``."""

from .cli import main

raise SystemExit(main())
