import sys

from ddp_viz.cli import main

sys.exit(main())
