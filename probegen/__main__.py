import sys

from probegen.cli import main

sys.exit(main())
