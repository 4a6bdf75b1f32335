import sys

from samsa.cli import main

sys.exit(main())
