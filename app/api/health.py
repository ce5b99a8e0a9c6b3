"""/healthz and /metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from app.api.deps import CtxDep
from app.context import Context
from app.services import queue
from judge import Verdict

router = APIRouter(tags=["operations"])


def pool_status(request: Request) -> dict | None:
    """This process's pool of prepared sandboxes, when it runs embedded workers with one."""
    workers = getattr(request.app.state, "pool", None)
    pool = getattr(workers, "sandbox", None)
    if pool is None or not hasattr(pool, "figures"):
        return None
    prepared = getattr(workers, "prepared_after_s", None)
    # Seconds from the workers' start to the end of their start-up preparation (null while
    # it runs): until then, background work shares the cores.
    return {**pool.figures().to_dict(),
            "prepared_after_s": None if prepared is None else round(prepared, 1)}


@router.get("/healthz", responses={503: {"description": "the database is unreachable"}})
def healthz(ctx: CtxDep, request: Request) -> JSONResponse:
    """Database reachable, live workers, queue depth, and this process's sandbox pool."""
    try:
        depth = queue.depth(ctx)
        workers = queue.live_workers(ctx)
    except Exception as e:  # noqa: BLE001
        return JSONResponse({"status": "error", "database": f"unreachable: {e}"[:500]},
                            status_code=503)
    return JSONResponse({
        "status": "ok",
        "database": "ok",
        "database_backend": ctx.db.engine.dialect.name,
        "live_workers": len(workers),
        "queue_depth": depth["queued"],
        "running": depth["running"],
        "workers": workers,
        "sandbox_pool": pool_status(request),
    })


class DatabaseCollector:
    """Reads the numbers from the database at scrape time, so they cover every worker
    process on every machine, not just this one."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def describe(self) -> list:
        return []

    def collect(self):  # noqa: ANN201
        depth = queue.depth(self.ctx)
        g = GaugeMetricFamily("tensorjudge_queue_depth", "Submissions waiting or being judged",
                              labels=["status"])
        for status, n in depth.items():
            g.add_metric([status], n)
        yield g
        w = GaugeMetricFamily("tensorjudge_live_workers", "Workers with a recent heartbeat")
        w.add_metric([], len(queue.live_workers(self.ctx)))
        yield w
        stats = queue.judgement_stats(self.ctx)
        c = CounterMetricFamily("tensorjudge_verdicts", "Judgements by verdict",
                                labels=["verdict"])
        for v in Verdict:
            c.add_metric([v.value], stats["verdicts"].get(v.value, 0))
        yield c
        buckets = [(f"{b:g}", n) for b, n in stats["buckets"]] + [("+Inf", stats["count"])]
        yield HistogramMetricFamily("tensorjudge_judging_seconds",
                                    "Time from claim to result, per judgement",
                                    buckets=buckets, sum_value=stats["sum_s"])


def make_registry(ctx: Context) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(ctx))  # type: ignore[arg-type]
    return registry


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format: queue depth, live workers, verdict counts, judging latency."""
    return Response(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)
