"""One population group level through Tumult Analytics (run with the Tumult venv's python).

    .venv-tumult/bin/python benchmarks/_tumult_workload.py PARAMS_DIR DATA_DIR RHO STABILITY [RUNS]

(COUNTY, 2) noisy totals: persons are flat-mapped to their sub-state Detailed
iterations (alone = intersection, alone-or-in-any-combination = union over race codes,
plus ethnicity; at most STABILITY rows per person), grouped by (county, iteration) over
the full public key set and counted with discrete Gaussian noise at rho (zCDP;
`grouping=True` tells Tumult each person's rows go to distinct groups, so the L2
sensitivity is sqrt(STABILITY), as in SafeTab-P).
Prints one JSON line: seconds from the libraries imported (timed apart) to having the
noisy counts, of which starting Spark. With RUNS > 1 the query (from reading the files,
in a new Tumult Session) runs again in the same Spark session, and the times of those
warm runs are listed too (`warm_seconds`). Self-contained on purpose: this environment
has Tumult's pinned numpy/pandas, not ours.
"""

import json
import os
import sys
import tempfile
import time
from collections import defaultdict


def read_pipe(path):
    with open(path, encoding="utf-8") as fh:
        lines = [ln.rstrip("\r\n") for ln in fh if ln.strip()]
    header = lines[0].split("|")
    return [dict(zip(header, ln.split("|"))) for ln in lines[1:]]


def main():
    params, data, rho, stability = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    runs = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    t_import = time.perf_counter()
    # Spark's Python workers must be this environment's interpreter (it has tmlt).
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from tmlt.analytics import AddMaxRows, KeySet, QueryBuilder, RhoZCDPBudget, Session

    t0 = time.perf_counter()

    spark = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "8g")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="tumult-warehouse-")).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    t_spark = time.perf_counter()

    def workload():
        """The files to the noisy counts; returns the number of groups."""
        race_its = {r["ITERATION_CODE"]: r for r in read_pipe(f"{params}/race-characteristic-iterations.txt")}
        eth_its = {r["ITERATION_CODE"]: r for r in read_pipe(f"{params}/ethnicity-characteristic-iterations.txt")}
        tab = {c for c, r in {**race_its, **eth_its}.items() if r["LEVEL"] == "2" and r["DETAILED_ONLY"] != "True"}
        alone, aoic, eth = defaultdict(set), defaultdict(set), defaultdict(set)
        for m in read_pipe(f"{params}/race-and-ethnicity-code-to-iteration.txt"):
            it, code = m["ITERATION_CODE"], m["RACE_ETH_CODE"]
            if it not in tab:
                continue
            if it in eth_its:
                eth[code].add(it)
            elif race_its[it]["ALONE"] == "True":
                alone[code].add(it)
            else:
                aoic[code].add(it)
        alone, aoic, eth = dict(alone), dict(aoic), dict(eth)

        def iterations(row):
            codes = []
            for i in range(1, 9):
                c = row[f"QRACE{i}"]
                if c == "Null":
                    break
                codes.append(c)
            a = None
            u = set()
            for c in set(codes):
                a = set(alone.get(c, ())) if a is None else a & alone.get(c, set())
                u |= aoic.get(c, set())
            out = u | (a or set()) | eth.get(row["QSPAN"], set())
            return [{"ITERATION": it} for it in sorted(out)]

        persons = (spark.read.option("sep", "|").option("header", True).csv(f"{data}/person-records.txt")
                   .selectExpr("concat(TABBLKST, TABBLKCOU) AS COUNTY", *[f"QRACE{i}" for i in range(1, 9)], "QSPAN"))
        grf = spark.read.option("sep", "|").option("header", True).csv(f"{data}/GRF-C.txt")
        counties = sorted({r[0] for r in grf.selectExpr("concat(TABBLKST, TABBLKCOU)").distinct().collect()
                           if not r[0].startswith("72")})
        persons = persons.filter("NOT COUNTY LIKE '72%'")
        session = Session.from_dataframe(privacy_budget=RhoZCDPBudget(rho), source_id="persons", dataframe=persons,
                                         protected_change=AddMaxRows(1))
        keys = KeySet.from_dict({"COUNTY": counties, "ITERATION": sorted(tab)})
        query = (QueryBuilder("persons").flat_map(iterations, new_column_types={"ITERATION": "VARCHAR"}, augment=True,
                                                  grouping=True, max_rows=stability)
                 .groupby(keys).count())
        result = session.evaluate(query, RhoZCDPBudget(rho))
        n = result.count()  # forces the computation
        return n

    n = workload()
    t1 = time.perf_counter()
    warm = []
    for _ in range(runs - 1):
        w0 = time.perf_counter()
        workload()
        warm.append(time.perf_counter() - w0)
    print(json.dumps({"seconds": t1 - t0, "spark_start_seconds": t_spark - t0, "groups": n,
                      "import_seconds": t0 - t_import, "warm_seconds": warm}))
    spark.stop()


if __name__ == "__main__":
    main()
