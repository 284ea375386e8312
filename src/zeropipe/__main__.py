"""`python -m zeropipe` → the CLI."""

import sys

from zeropipe.cli.main import main

sys.exit(main())
