# syntax=docker/dockerfile:1
# Tallyhouse's production image: the compiled service, production dependencies only, running as a non-root user.
# docker compose builds it (docker-compose.yml); on its own: docker build -t tallyhouse .
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# ---- build: every dependency, TypeScript compiled to dist/ -------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs ./scripts/
COPY bin ./bin
COPY sql ./sql
COPY src ./src
COPY jobs ./jobs
COPY console ./console
# scripts/build.mjs: dist/ with sql/ and the demo's simulator scenario beside the compiled code.
RUN npm run build

# ---- deps: production dependencies only (no tsx, esbuild, TypeScript or @grafana/faro-core: dev tools) -----------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# chdb's native engine (@chdb/lib-*, about 540 MB) only serves the embedded store, used when CLICKHOUSE_URL is
# unset; this image always runs against a ClickHouse server, so the engine is left out.
RUN npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/@chdb \
 && npm cache clean --force

# ---- runtime ------------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    TALLYHOUSE_HOST=0.0.0.0 \
    TALLYHOUSE_PORT=8080 \
    DATA_DIR=/var/lib/tallyhouse
WORKDIR /app
COPY --chown=root:root package.json ./
COPY --chown=root:root bin ./bin
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
# npm run build put the migrations in dist/sql/, the web console in dist/console/ and the demo scenario in dist/src/sim/scenarios/.
COPY --from=build --chown=root:root /app/dist ./dist
# DATA_DIR holds the log drain's spool; the code stays root-owned and read-only to the service user.
RUN mkdir -p /var/lib/tallyhouse && chown node:node /var/lib/tallyhouse
USER node
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.TALLYHOUSE_PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/tallyhouse.js"]
CMD ["serve"]
