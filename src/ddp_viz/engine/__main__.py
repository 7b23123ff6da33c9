import sys

from ddp_viz.engine.server import main

sys.exit(main())
