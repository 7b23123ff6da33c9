"""The Qt front end. Never imports torch or the engine: it drives the engine as a process."""
