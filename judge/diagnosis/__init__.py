"""Naming what went wrong in a submission that is not accepted: each module a source of
findings (known mistakes, parameter trees, size mix-ups, property probes); `diagnose` runs
them in order."""
