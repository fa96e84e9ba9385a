"""``python -m sktspt.benchmark``: run the accuracy benchmark (``--help`` for the options)."""

import sys

# Run the importable CLI, not code of this ``__main__`` module, so that process workers
# (loky, dask) can unpickle the job functions by their module name.
from sktspt.benchmark.cli import main

if __name__ == "__main__":
    sys.exit(main())
