"""What every entry point (API, worker, CLI) shares: settings, the database, the wake-up hub."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.db import Database
from app.notify import Hub
from app.services.arrivals import Arrivals
from app.settings import Settings


@dataclass
class Context:
    settings: Settings
    db: Database
    hub: Hub = field(default_factory=Hub)
    arrivals: Arrivals = field(default_factory=Arrivals)

    @classmethod
    def create(cls, settings: Settings) -> Context:
        return cls(settings, Database(settings.effective_database_url))

    def close(self) -> None:
        self.db.dispose()
