"""manifest.json: what a run did, with every privacy figure computed from the config.

Budgets are computed (SPEC §1 privacy accounting: US = sum of its levels' rho, PR
likewise, release = max(US, PR), bounded neighbours = 2x; epsilon at delta = 1e-10),
never copied from an input.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import platform
from fractions import Fraction

from calculators import budget, discrete_gaussian, geometric
from calculators.levels import GEO_LEVELS, ITERATION_LEVELS
from engine.inputs.readers import sha256_file
from engine.inputs.specs import SPEC_FILES, TABULATION_CLASSES, tabulation_class

#: delta at which the manifest states epsilon.
DELTA = 1e-10
ENGINE_VERSION = "0.1.0"


def _frac(x: Fraction) -> dict:
    return {"exact": f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator), "value": float(x)}


def release_mode(truth: bool, source, puredp: bool) -> dict:
    """The manifest's "mode": ground truth, a seeded release (both NOT FOR RELEASE) or a
    release from the secure source, and the exact noise used. Shared by SafeTab-P and
    SafeTab-H (engine.safetab_h.run), so both say the same of the same run."""
    if truth:
        mode = {"kind": "ground truth", "for_release": False,
                "note": "NOT FOR RELEASE: the true counts without noise, for accuracy studies only"}
    elif source is not None and not source.for_release:
        mode = {"kind": "seeded release", "for_release": False,
                "note": "NOT FOR RELEASE: the noise comes from a seeded, reproducible stream",
                "noise_source": source.description}
    else:
        mode = {"kind": "release", "for_release": True, "noise_source": source.description if source else None}
    mode["noise"] = "two-sided geometric (exact)" if puredp else "discrete Gaussian (exact, Canonne-Kamath-Steinke)"
    return mode


def build_manifest(prepared, stats: dict, rows: dict, *, source, truth: bool, coterminous: bool,
                   timings: dict) -> dict:
    inputs = prepared.inputs
    config = inputs.config
    puredp = config.privacy_defn == "puredp"
    mode = release_mode(truth, source, puredp)
    invariant = dict(stats.get("invariant") or {})
    confidential_invariant = invariant.pop("_confidential", None)
    if invariant:
        # Loudly: a release with invariants is not SafeTab-P (docs/invariants.md).
        mode["not_safetab_p"] = True
        mode["warning"] = invariant["warning"]

    levels = {}
    for lvl, plan in prepared.plans.items():
        st = stats.get(lvl.key, {})
        entry = {
            "budget": _frac(plan.rho),
            "stability_S": plan.stability,
            "thresholds": list(plan.thresholds),
            "suppression_threshold": plan.suppression_threshold,
            "regions": inputs.geography.n_regions(lvl.geo),
            "iterations": len(prepared.catalog.iterations(lvl.geo, lvl.iteration_level)),
            **st,
        }
        if puredp:
            entry["geometric_scale"] = {"stage1": _frac(plan.stage1), "stage2": _frac(plan.stage2),
                                        "total_only": _frac(plan.total_only)}
            entry["stage2_cell_moe_95"] = int(geometric.moe(float(plan.stage2)))
        else:
            entry["sigma2"] = {"stage1": _frac(plan.stage1), "stage2": _frac(plan.stage2),
                               "total_only": _frac(plan.total_only)}
            entry["stage2_cell_moe_95"] = int(discrete_gaussian.moe(float(plan.stage2)))
        levels[lvl.key] = entry

    totals = budget.plan_totals(config)
    privacy: dict = {"definition": config.privacy_defn, "unit": "epsilon" if puredp else "rho (zCDP)"}
    for name in ("us", "pr", "release"):
        for bounded in (False, True):
            key = f"{name}_bounded" if bounded else name
            value = float(getattr(totals, key))
            item = {"budget": value}
            if not puredp:
                item[f"epsilon_at_delta_{DELTA:g}"] = {
                    "classic": float(budget.epsilon_classic(value, DELTA)),
                    "tight": float(budget.epsilon_tight(value, DELTA)),
                }
            privacy[key] = item
    privacy["note"] = ("US and Puerto Rico persons are disjoint, so the release costs max(US, PR); "
                       "bounded neighbours (change one person) cost twice the unbounded figure.")

    files = {}
    for name in SPEC_FILES + (("config.json",) if inputs.config_from_file else ()):
        p = inputs.params_dir / name
        files[f"PARAMS_DIR/{name}"] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    if not inputs.config_from_file:
        text = config.to_json().encode()
        files["config (supplied by the caller, not PARAMS_DIR/config.json)"] = {
            "sha256": hashlib.sha256(text).hexdigest(), "bytes": len(text)}
    for df in (inputs.persons_file, inputs.grf_file):
        files[f"DATA_DIR/{df.name}"] = {"sha256": sha256_file(df.path), "bytes": df.path.stat().st_size}

    return {
        "engine": {"name": "SafeTab-P studio engine", "version": ENGINE_VERSION, "python": platform.python_version()},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": mode,
        "inputs": {"params_dir": str(inputs.params_dir), "data_dir": str(inputs.data_dir), "files": files},
        # Exact figures of the confidential data: for the operator's checks, never to publish.
        "confidential": {
            "note": "NOT FOR PUBLICATION: exact counts from the confidential input, without noise",
            "persons": {"counted": prepared.table.persons, "us": prepared.table.persons_us,
                        "pr": prepared.table.persons_pr},
            # SPEC §1: persons with more race codes than max_race_codes are read with
            # their first max_race_codes codes (QRACE1..QRACEr, as production).
            "race_codes_truncated": {"max_race_codes": config.max_race_codes,
                                     "persons": prepared.table.persons_truncated},
            **({"invariant_true_totals_by_size": confidential_invariant} if confidential_invariant else {}),
        },
        "config": config.to_dict(),
        "stability": _stability_section(inputs.specs, config.max_race_codes),
        "levels": levels,
        "privacy": privacy,
        "postprocessing": {
            "allow_negative_counts": config.allow_negative_counts,
            "zero_suppression_chance": config.zero_suppression_chance,
            "coterminous": coterminous,
            **({"coterminous_result": stats["coterminous"]} if "coterminous" in stats else {}),
            # Hierarchical consistency (`--consistency`, docs/consistency.md); "none" = as SafeTab-P.
            "consistency": stats.get("consistency", {"method": "none"}),
            # True totals held exact (`--invariant`, NOT SafeTab-P); None = no invariant.
            "invariant": invariant or None,
            # The Decennial Tabulation System's suppression (`--tabulation-suppression`): outside the DAS.
            "tabulation_suppression": stats.get("tabulation_suppression", False),
        },
        "outputs": {"rows": rows},
        "timings_seconds": {k: round(v, 3) for k, v in timings.items()},
    }


def _stability_section(specs, r: int) -> dict:
    """S, h_r and h_e per tabulation class and iteration level (SPEC §1): USA, STATE and
    PR-STATE count the iterations that are not COARSE_ONLY, the other geographies those
    that are not DETAILED_ONLY; a population group level uses its geography's class."""
    out: dict = {"max_race_codes": r,
                 "formula": "S = h_r * max(2, r) + h_e, h_r and h_e counted per tabulation class"}
    for cls in TABULATION_CLASSES:
        geos = [g for g in GEO_LEVELS if tabulation_class(g) == cls]
        entry: dict = {"geographies": geos}
        for lvl in ITERATION_LEVELS:
            entry[str(lvl)] = {"S": specs.stability(lvl, r, geos[0]), "h_r": specs.h_r(lvl, geos[0]),
                               "h_e": specs.h_e(lvl, geos[0])}
        out[cls] = entry
    return out
