"""The pure model layer: scenarios, the event protocol, recorded runs, lessons, quiz, themes,
and the stage's frames. Imports neither Qt nor torch, so it is tested in milliseconds and
shared by the window, the CLI and the engine."""
