"""pytest plugin for applications tested against Samsa (registered through the ``pytest11`` entry point)."""
