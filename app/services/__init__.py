"""The rules of the service. The API, the worker and the CLI all go through these."""
