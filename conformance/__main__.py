"""``python -m conformance``: see conformance/README.md."""

import sys

from conformance.runner import main

sys.exit(main())
