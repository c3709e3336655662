"""In-memory implementations of the services' ports, for unit tests; each passes its port's contract suite."""
