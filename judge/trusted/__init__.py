"""Trusted host code: runs the judge's own code (references, packaged wrong answers) in
processes of the judge, never in the sandbox, and never imports code that runs inside it
(`judge.inside`)."""
