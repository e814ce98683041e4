"""Floor 12: applications built on the library: the command line, tables and reports."""
