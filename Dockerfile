# One image per package of the workspace, with only that package's dependencies:
#   docker build .                                        the whole stack (`overseer up`, `overseer nats …`)
#   docker build --build-arg PACKAGE=overseer-gateway .   one service (run `python -m overseer_gateway`)
ARG PACKAGE=overseer

FROM python:3.11-slim AS build
ARG PACKAGE
RUN pip install --no-cache-dir 'uv>=0.5'
WORKDIR /src
COPY . .
# Installed as wheels (no editable links into /src), from uv.lock, without the test and benchmark groups.
ENV UV_PYTHON_DOWNLOADS=never UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 UV_PROJECT_ENVIRONMENT=/app
RUN if [ "$PACKAGE" = overseer ]; then \
        uv sync --frozen --no-default-groups --no-editable --all-packages; \
    else \
        uv sync --frozen --no-default-groups --no-editable --package "$PACKAGE"; \
    fi

FROM python:3.11-slim
ARG PACKAGE
# bubblewrap: the jail shell.run runs in (the executor refuses shell.run without it)
RUN if [ "$PACKAGE" = overseer ] || [ "$PACKAGE" = overseer-executor ]; then \
        apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*; \
    fi
COPY --from=build /app /app
ENV PATH=/app/bin:$PATH OVERSEER_HOME=/data
CMD ["overseer", "up", "--host", "0.0.0.0"]
