"""``python -m qe ...`` is the console script ``qe``."""
from qe.cli import main

raise SystemExit(main())
