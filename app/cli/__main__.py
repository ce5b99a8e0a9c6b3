"""`python -m app.cli`, for when the `tensorjudge` script is not installed."""

from app.cli import main

if __name__ == "__main__":
    main()
