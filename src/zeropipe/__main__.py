"""`python -m zeropipe` → the CLI."""

import sys

from zeropipe.cli.entry import main

sys.exit(main())
