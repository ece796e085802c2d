"""``python -m citeline.cli``: the command line (how editors start ``serve``)."""

import sys

from citeline.cli import main

sys.exit(main())
