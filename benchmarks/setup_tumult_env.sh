#!/usr/bin/env bash
# Creates a separate virtual environment with Tumult Analytics for the comparison in
# benchmarks/bench_mechanism.py. Tumult needs Java (PySpark) and its own numpy/pandas
# pins, so it never shares the project's environment.
#   bash benchmarks/setup_tumult_env.sh [VENV_DIR]   (default: .venv-tumult)
set -euo pipefail
VENV="${1:-.venv-tumult}"
if ! command -v java >/dev/null 2>&1; then
  echo "Java is required by PySpark: apt-get install -y default-jre-headless" >&2
  exit 1
fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "tmlt.analytics>=0.20,<0.22"
"$VENV/bin/python" -c "import tmlt.analytics, pyspark; print('tmlt.analytics', tmlt.analytics.__version__ if hasattr(tmlt.analytics, '__version__') else '', 'pyspark', pyspark.__version__)"
echo "Tumult environment ready: $VENV (pass --tumult-venv $VENV to benchmarks/bench_mechanism.py)"
