#!/usr/bin/env bash
# Install what building and testing tcjoin needs on Debian bookworm.
# Idempotent: when everything is already installed, apt is not touched at all.
set -euo pipefail

# postgresql-15 is the server (contrib is part of it on Debian);
# postgresql-server-dev-15 brings pg_config, PGXS and the server headers;
# python3 and matplotlib run the benchmark suite's own test and its plots;
# python3-sklearn and PostGIS are the DBSCAN references of
# test/suites/dbscan_sklearn.sh and dbscan_postgis.sh.
PKGS=(postgresql-15 postgresql-server-dev-15 build-essential python3 python3-matplotlib python3-sklearn
      postgresql-15-postgis-3)

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup.sh: run as root or install sudo" >&2; exit 1; }
    SUDO=(sudo)
fi

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup.sh: installing ${missing[*]}"
    # Package lists in a fresh image are empty or stale, so refresh them once here.
    "${SUDO[@]}" apt-get update -q
    # Install the full set, not just the missing ones: the dev package may pull in
    # newer libraries, and the server should move to the same minor version.
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${PKGS[@]}"
fi

for f in /usr/lib/postgresql/15/bin/postgres /usr/lib/postgresql/15/bin/pg_config \
         /usr/lib/postgresql/15/lib/pgxs/src/makefiles/pgxs.mk; do
    [ -e "$f" ] || { echo "setup.sh: $f is missing after install" >&2; exit 1; }
done
# pgvector, for the suites that read its types (test/suites/pgvector.sh):
# not in bookworm, so built from a vendored release where one is provided
# (TCJOIN_PGVECTOR_INSTALLER, by default the vendor folder beside the
# checkout); without it those suites say they were skipped.  tcjoin itself
# never needs it.
PGV_INSTALLER=${TCJOIN_PGVECTOR_INSTALLER:-$(dirname "$0")/../../shared/vendor/install-pgvector.sh}
if [ ! -f "$(/usr/lib/postgresql/15/bin/pg_config --sharedir)/extension/vector.control" ] && [ -f "$PGV_INSTALLER" ]; then
    echo "setup.sh: building pgvector for the tests"
    bash "$PGV_INSTALLER" /usr/lib/postgresql/15/bin/pg_config ||
        echo "setup.sh: pgvector did not build; its suites will be skipped" >&2
fi
echo "setup.sh: PostgreSQL $(/usr/lib/postgresql/15/bin/pg_config --version | cut -d' ' -f2) build environment ready"
