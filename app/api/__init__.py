"""The REST API: thin handlers over app.services."""
