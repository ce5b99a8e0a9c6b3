"""Code that runs on both sides of the trust boundary: inside the sandbox, as part of the
runner's source (`judge.sandbox.sources`), and in the judge's trusted processes, imported as
usual. It imports nothing but the standard library, so it means the same on either side."""
