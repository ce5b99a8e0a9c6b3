# The images of tensorjudge, built by `./dev images` (which prepares .build/images first):
#   --target sandbox   what runs a submission: Python, the pinned libraries, and the seed of
#                      the compilation cache (the judge's own warm-ups, compiled at build time
#                      in --target sandbox-runtime: the same image without the seed)
#   --target app       the service and the worker: the same runtime plus the project
# Both start from one Debian base; `./dev images` makes it from Debian's archive when no
# registry is reachable, tagged with the name below, so this file is built as it is.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3.11 python3.11-venv libseccomp2 ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
ENV LANG=C.UTF-8

# The libraries are installed from a wheelhouse with exact versions (requirements.txt is the
# judge's own environment, locked by scripts/requirements-lock), in a stage of its own so the
# wheels never become a layer of the images.
FROM runtime AS libraries
COPY .build/images/requirements.txt /build/requirements.txt
COPY .build/images/wheels /build/wheels
RUN python3.11 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --no-index --find-links /build/wheels \
      -r /build/requirements.txt \
 && (python3.11 -m compileall -q /opt/venv/lib/python3.11/site-packages >/dev/null || :)

# One layer of libraries under both images (stored once on an engine holding both).
FROM runtime AS with-libraries
COPY --from=libraries /opt/venv /opt/venv

# The sandbox without the compilation cache's seed: what `./dev images` runs the judge's
# warm-ups in to make the seed (deploy/xla_seed.py).
FROM with-libraries AS sandbox-runtime
ARG VERSION=dev
LABEL org.opencontainers.image.title="tensorjudge-sandbox" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.description="Runs one submission; holds no data of the judge" \
      org.tensorjudge.python="/usr/bin/python3.11" \
      org.tensorjudge.site-packages="/opt/venv/lib/python3.11/site-packages"
# The mount point of the judge-filled compilation cache: a new volume takes its owner from
# here, so the sandbox uid can fill it (while the judge mounts it writable, for warm-ups only).
# /root holds nothing a submission may not see: left open and empty, like the rest.
RUN install -d -o 65534 -g 65534 /opt/tensorjudge/xla-cache \
 && rm -rf /root && install -d -m 755 /root
# The judge starts every container with its own uid, limits and command; these are defaults.
USER 65534:65534
WORKDIR /tmp
CMD ["/usr/bin/python3.11", "-I", "-c", "print('tensorjudge sandbox image')"]

# What runs a submission: the runtime, and what the judge's own warm-ups compiled in it when
# the image was built. A judge copies it into a new cache volume (read-only to submissions;
# only on a CPU like the build machine's): judge/sandbox/container/seed.py.
FROM sandbox-runtime AS sandbox
COPY --chown=65534:65534 .build/images/xla-seed/ /opt/tensorjudge/xla-seed/
LABEL org.tensorjudge.xla-seed="/opt/tensorjudge/xla-seed"

FROM with-libraries AS app
ARG VERSION=dev
COPY pyproject.toml README.md /src/
COPY app /src/app
COPY judge /src/judge
COPY problems /src/problems
COPY reference_solutions /src/reference_solutions
COPY migrations /src/migrations
COPY alembic.ini /src/
# Editable, so the service finds its migrations and bundled problems beside its code.
RUN /opt/venv/bin/pip install --no-cache-dir --no-deps --no-build-isolation -e /src \
 && useradd --system --uid 10001 --home-dir /var/lib/tensorjudge --create-home tensorjudge \
 && install -d -o 10001 -g 10001 /var/lib/tensorjudge/cache
# The bundled problems' expected outputs (`./dev images` computes them, trusted, on the build
# machine): the workers' shared cache volume starts with them (docs/operations.md).
COPY --chown=10001:10001 .build/images/trusted/ /var/lib/tensorjudge/cache/
LABEL org.opencontainers.image.title="tensorjudge" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.description="The tensorjudge service and worker"
ENV PATH=/opt/venv/bin:$PATH \
    TENSORJUDGE_PROBLEMS_DIR=/src/problems \
    TENSORJUDGE_DATA_DIR=/var/lib/tensorjudge/data \
    TENSORJUDGE_CACHE_DIR=/var/lib/tensorjudge/cache \
    TENSORJUDGE_LOG_FORMAT=json
USER 10001:10001
WORKDIR /var/lib/tensorjudge
EXPOSE 8000
CMD ["tensorjudge", "serve", "--host", "0.0.0.0", "--port", "8000"]

# The database of the container deployment: Debian's PostgreSQL (no registry image needed).
FROM ${BASE_IMAGE} AS db
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && install -d -o postgres -g postgres -m 700 /var/lib/postgresql/data \
 && install -d -o postgres -g postgres /var/run/postgresql
COPY deploy/postgres-entrypoint /usr/local/bin/tensorjudge-postgres
LABEL org.opencontainers.image.title="tensorjudge-db"
ENV PGDATA=/var/lib/postgresql/data PATH=/usr/lib/postgresql/15/bin:$PATH LANG=C.UTF-8
USER postgres
EXPOSE 5432
CMD ["/usr/local/bin/tensorjudge-postgres"]
