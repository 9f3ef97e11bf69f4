"""The `batchplace` command line: solve, snapshot, demo."""
