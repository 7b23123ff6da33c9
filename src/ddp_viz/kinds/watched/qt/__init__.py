"""The watched run's side of the window (Qt, no torch)."""
