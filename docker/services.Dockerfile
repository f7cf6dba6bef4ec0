# The other two services of compose.yml, from Debian 12's own packages on the same base as the
# gateway's image (no registry needed): `--target redis` and `--target nginx`.
ARG BASE=localhost/debian

FROM ${BASE}:12 AS redis
RUN apt-get update && apt-get install -y --no-install-recommends redis-server redis-tools \
    && rm -rf /var/lib/apt/lists/*
USER redis
EXPOSE 6379
ENTRYPOINT ["redis-server"]

FROM ${BASE}:12 AS nginx
RUN apt-get update && apt-get install -y --no-install-recommends nginx-light \
    && rm -rf /var/lib/apt/lists/* \
    && ln -sf /dev/stderr /var/log/nginx/error.log && ln -sf /dev/stdout /var/log/nginx/access.log
EXPOSE 80
STOPSIGNAL SIGQUIT
ENTRYPOINT ["nginx", "-g", "daemon off;"]
