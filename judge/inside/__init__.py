"""Code that runs inside the sandbox. Nothing here imports the host's code: the host reads
these files as text (`judge.sandbox.sources`) and the sandbox executes them. Imported as
modules (in tests), they import only each other and `judge.portable`."""
