"""Floor 14: applications built on the library: the command line, tables and reports."""
