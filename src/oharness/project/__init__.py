"""Projects and machine-local places: OHARNESS_HOME layout, project identity, config files."""
