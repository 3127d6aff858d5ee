#!/usr/bin/env bash
# lockstudy's one entry point. `./run.sh --help` lists the commands.
#
# The orchestration is Python (the `lockstudy` package). Set-up and doctor
# run on the system's python3 (3.11+, standard library only), everything
# else on the project's environment in .venv once `./run.sh setup` made it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

python="${here}/.venv/bin/python"
if [ ! -x "$python" ]; then
  python="$(command -v python3 || true)"
  if [ -z "$python" ]; then
    echo "run.sh: python3 (3.11 or newer) is required: apt-get install python3 python3-venv" >&2
    exit 1
  fi
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "run.sh: $python is older than Python 3.11; install python3 3.11 or newer" >&2
  exit 1
fi

export PYTHONPATH="${here}${PYTHONPATH:+:${PYTHONPATH}}"
exec "$python" -m lockstudy "$@"
