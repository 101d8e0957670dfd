"""SafeTab-P geography and releases for the geographic-spine studies (`methods.spines`).

Two questions, on the same GRF-C and plan as a SafeTab-P run:

* How many published SafeTab-P units does a custom area take? SafeTab-P publishes
  states, counties and tracts (a hierarchy) and places and AIANNH areas (which cross
  it), never block groups or blocks. `published_units` is that tree, with the pieces
  of GRF-C (blocks sharing tract, place and AIANNH area) as its leaves, which are not
  published, and the places and AIANNH areas as extra sets. An area can be composed
  exactly only if it is a union of whole pieces; `compose_area` finds the fewest units
  (each once, + or -), avoiding units whose group is suppressed, and the variance and
  exact MOE of the composed count.
* How far are places and AIANNH areas from a TopDown-style spine (block > block group
  > tract > county > state), and how much does the seed's spine optimisation bring
  them closer? `census_spine` builds the Census hierarchy from GRF-C (a block's block
  group is the first digit of TABBLK, so GRF-C needs no extra column), or production's
  AIAN spine (AIAN and non-AIAN branches under each state, from AIANNHCE), and
  `spine_study` runs `methods.spines.optimize_spine` on every county part of the AIAN
  spine, as production does.

Region ids follow SPEC section 4; everything here uses public inputs only (GRF-C,
the plan), except the truths and releases of `engine.reports.levels` tables, which a
study passes in.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from calculators import budget, noise_family
from calculators.levels import STAT_LEVEL_CELLS, PopulationGroupLevel
from engine.errors import SHOWN_PROBLEMS, InputError, Problem
from engine.inputs.geography import Geography
from engine.reports.levels import LevelTables, parent_regions
from engine.tabulation.mechanism import TOTAL_ONLY
from methods import spines

#: Levels of the Census spine, root first.
SPINE_LEVELS = ("NATION", "USA", "STATE", "COUNTY", "TRACT GROUP", "TRACT", "BLOCK GROUP", "BLOCK")
#: Entity levels of the spine study (places and AIANNH areas).
ENTITY_LEVELS = ("PLACE", "PR-PLACE", "AIANNH")
#: The tree of published units, US and Puerto Rico runs.
_TREE_US = ("USA", "STATE", "COUNTY", "TRACT")
_TREE_PR = ("PR-STATE", "PR-COUNTY", "PR-TRACT")
_EXTRA_LEVELS = ("PLACE", "AIANNH", "PR-PLACE")
_ID_WIDTH = {2: "STATE", 4: "AIANNH", 5: "COUNTY", 7: "PLACE", 11: "TRACT", 15: "BLOCK"}
_CUT = 40


def _keys(geography: Geography) -> np.ndarray:
    return np.asarray(geography.block_keys.to_numpy(zero_copy_only=False)).astype(str)


def _in_run(geography: Geography) -> np.ndarray:
    n = len(geography.block_keys)
    mask = np.zeros(n, dtype=bool)
    for geo in ("STATE", "PR-STATE"):
        if geo in geography.block_region:
            mask |= geography.block_region[geo] >= 0
    return mask


def _level_of_block(geography: Geography, us: str, pr: str) -> tuple[np.ndarray, np.ndarray]:
    """Per block: (region index within its level, 0 = US level / 1 = PR level), -1 if none."""
    n = len(geography.block_keys)
    idx, which = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    for k, geo in enumerate((us, pr)):
        if geo in geography.block_region:
            br = geography.block_region[geo]
            idx = np.where(br >= 0, br, idx)
            which = np.where(br >= 0, k, which)
    return idx, which


# ----------------------------------------------------------------- Census spine
@dataclass
class CensusSpine:
    """The Census hierarchy of the blocks in the runs, as a tree (parent array).

    Nodes: the blocks (in GRF-C order, `blocks` gives their GRF-C rows), then block
    groups, tracts, counties, states, USA (if the US runs), and a nation root that
    is not a unit. `entity[v]`: for block v, the index in `entities` of its place
    (US or Puerto Rico) and AIANNH area, -1 for none.
    """

    parents: np.ndarray
    level: np.ndarray  # index into SPINE_LEVELS
    label: np.ndarray  # region id (block key for blocks, ST+COU+TRACT+digit for block groups)
    blocks: np.ndarray  # GRF-C row of each block node
    entity: np.ndarray  # (2, blocks): place entity, AIANNH entity (indices into `entities`)
    entities: pd.DataFrame  # level, region id, index in its level

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    def units(self) -> pd.DataFrame:
        """Number of units per level (block groups included)."""
        names, counts = np.unique(self.level, return_counts=True)
        return pd.DataFrame({"level": [SPINE_LEVELS[i] for i in names], "units": counts})


def census_spine(geography: Geography, aian: bool = False) -> CensusSpine:
    """Block > block group > tract > county > state (> USA) from GRF-C block keys.

    With `aian`, production's AIAN spine (the seed's Section 1 and Figure 1;
    define_spines.py): every state, county, tract and block group is split into its part
    in the AIAN areas (`methods.spines.aian_area`, production's categories, from the
    AIANNHCE of GRF-C) and its part outside them, so each state has an AIAN and a
    non-AIAN branch. Labels then end in " AIAN" or " non-AIAN".
    """
    rows = np.flatnonzero(_in_run(geography))
    if not len(rows):
        raise ValueError("no block of GRF-C is in the runs of the plan (run_us / run_pr, state_filter_us)")
    keys = _keys(geography)[rows]
    nb = len(rows)
    flag = np.full(nb, "", dtype="U1")
    if aian:
        flag[:] = "N"
        if "AIANNH" in geography.block_region:
            br = geography.block_region["AIANNH"][rows]
            codes = np.where(br >= 0, geography.regions["AIANNH"].astype(str)[np.maximum(br, 0)], "9999")
            flag[spines.aian_area(codes)] = "A"
    parts = {}
    for name, width in (("BLOCK GROUP", 12), ("TRACT", 11), ("COUNTY", 5), ("STATE", 2)):
        ids, first, inv = np.unique(np.char.add(flag, np.char.ljust(keys, 15).astype(f"U{width}")),
                                    return_index=True, return_inverse=True)
        parts[name] = (ids, first, inv.ravel())

    def label(ids: np.ndarray) -> np.ndarray:
        if not aian:
            return ids
        return np.array([f"{i[1:]} {'AIAN' if i[0] == 'A' else 'non-AIAN'}" for i in ids], dtype=object)

    st_codes = np.array([i[-2:] for i in parts["STATE"][0]])
    has_us = bool(np.any(st_codes != "72"))
    n_bg, n_tr, n_co, n_st = (len(parts[k][0]) for k in ("BLOCK GROUP", "TRACT", "COUNTY", "STATE"))
    base_bg = nb
    base_tr = base_bg + n_bg
    base_co = base_tr + n_tr
    base_st = base_co + n_co
    usa = base_st + n_st if has_us else -1
    root = base_st + n_st + (1 if has_us else 0)
    n = root + 1
    parents = np.full(n, -1, np.int64)
    level = np.zeros(n, np.int8)
    label_ = np.empty(n, dtype=object)
    parents[:nb] = base_bg + parts["BLOCK GROUP"][2]
    level[:nb] = SPINE_LEVELS.index("BLOCK")
    label_[:nb] = keys
    for name, base, up_name, up_base in (("BLOCK GROUP", base_bg, "TRACT", base_tr),
                                         ("TRACT", base_tr, "COUNTY", base_co),
                                         ("COUNTY", base_co, "STATE", base_st)):
        ids, first, _ = parts[name]
        parents[base:base + len(ids)] = up_base + parts[up_name][2][first]
        level[base:base + len(ids)] = SPINE_LEVELS.index(name)
        label_[base:base + len(ids)] = label(ids)
    parents[base_st:base_st + n_st] = np.where(st_codes == "72", root, usa if has_us else root)
    level[base_st:base_st + n_st] = SPINE_LEVELS.index("STATE")
    label_[base_st:base_st + n_st] = label(parts["STATE"][0])
    if has_us:
        parents[usa], level[usa], label_[usa] = root, SPINE_LEVELS.index("USA"), "1"
    parents[root], level[root], label_[root] = -1, SPINE_LEVELS.index("NATION"), "nation"

    # Entities: places (US then Puerto Rico) and AIANNH areas.
    ent_rows, offset = [], 0
    place = np.full(nb, -1, np.int64)
    aian_ent = np.full(nb, -1, np.int64)
    for geo in ("PLACE", "PR-PLACE", "AIANNH"):
        if geo not in geography.regions:
            continue
        reg = geography.regions[geo].astype(str)
        ent_rows += [(geo, r, i) for i, r in enumerate(reg)]
        br = geography.block_region[geo][rows]
        if geo == "AIANNH":
            aian_ent = np.where(br >= 0, offset + br, -1)
        else:
            place = np.where(br >= 0, offset + br, place)
        offset += len(reg)
    entities = pd.DataFrame(ent_rows, columns=["level", "region", "index"])
    return CensusSpine(parents, level, label_, rows, np.stack([place, aian_ent]), entities)


# ------------------------------------------------------------------ spine study
@dataclass
class SpineStudy:
    """`spine_study`: OSED of every place and AIANNH area on each spine."""

    entities: pd.DataFrame  # level, region, blocks, counties, osed_census, osed_aian, osed_optimised, osed_safetab_tree
    units: pd.DataFrame  # level, before (Census spine), aian (AIAN spine), after (optimised AIAN spine)
    bypassed: pd.DataFrame  # level, laplace, gaussian: units the seed's bypass rule removes (equal shares)
    seconds: float  # time of the optimisation (all county parts)
    counties: int
    evaluations: int
    stopped_early: int  # county parts whose tract-group search hit its cap
    settings: dict = field(default_factory=dict)
    county_parts: int = 0  # counties split into their AIAN and non-AIAN parts (production's units)


def _county_costs(tract: np.ndarray, bg: np.ndarray, entity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(entity ids, (c_k, c_notk)) of the entities meeting one county on county > tract >
    block group > block (the Census spine there)."""
    ids = np.unique(entity[entity >= 0])
    t_codes, t_of = np.unique(tract, return_inverse=True)
    g_codes, g_first, g_of = np.unique(np.stack([t_of.ravel(), bg]), axis=1, return_index=True, return_inverse=True)
    nb, ng, nt = len(tract), g_codes.shape[1], len(t_codes)
    parents = np.r_[nb + g_of.ravel(), nb + ng + g_codes[0], np.full(nt, nb + ng + nt), -1]
    member = np.zeros((nb, len(ids)), bool)
    col = np.searchsorted(ids, entity)
    for r in range(entity.shape[0]):
        has = entity[r] >= 0
        member[np.flatnonzero(has), col[r][has]] = True
    cin, cout = spines.osed_costs(parents, member)
    return ids, np.stack([cin, cout], axis=1)


def _national_osed(spine: CensusSpine, county_nodes: np.ndarray, ids: list[np.ndarray], costs: list[np.ndarray],
                   n_ent: int) -> np.ndarray:
    """The exact OSED of every entity on the whole spine: per-county (c_k, c_notk) combined
    above the counties (states, USA, nation) by the seed's recursion (`combine_costs`)."""
    upper = np.flatnonzero(np.isin(spine.level, [SPINE_LEVELS.index(x) for x in ("NATION", "USA", "STATE", "COUNTY")]))
    pos = np.full(len(spine.parents), -1, np.int64)
    pos[upper] = np.arange(len(upper))
    up_parents = np.where(spine.parents[upper] >= 0, pos[np.maximum(spine.parents[upper], 0)], -1)
    usable = spine.level[upper] != SPINE_LEVELS.index("NATION")
    leaf = pos[county_nodes]
    out = np.zeros(n_ent, dtype=np.int64)
    chunk = max(1, 5_000_000 // max(1, len(upper)))
    for lo in range(0, n_ent, chunk):
        hi = min(n_ent, lo + chunk)
        cin = np.zeros((len(upper), hi - lo), np.int64)
        cout = np.ones((len(upper), hi - lo), np.int64)
        for c in range(len(county_nodes)):
            sel = (ids[c] >= lo) & (ids[c] < hi)
            cin[leaf[c], ids[c][sel] - lo] = costs[c][sel, 0]
            cout[leaf[c], ids[c][sel] - lo] = costs[c][sel, 1]
        out[lo:hi] = spines.combine_costs(up_parents, cin, cout, usable=usable)[0]
    return out


def _county_blocks(spine: CensusSpine) -> tuple[np.ndarray, list[np.ndarray]]:
    """The county nodes of a spine and the block rows (node indices) of each."""
    nb = spine.n_blocks
    county_node = spine.parents[spine.parents[spine.parents[np.arange(nb)]]]
    counties, county_of = np.unique(county_node, return_inverse=True)
    order = np.argsort(county_of, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(county_of, minlength=len(counties)))]
    return counties, [order[starts[c]:starts[c + 1]] for c in range(len(counties))]


def spine_study(geography: Geography, fanout_cutoff: int = spines.FANOUT_CUTOFF,
                entity_threshold: int = spines.ENTITY_THRESHOLD, max_evaluations: int = 200_000,
                progress: Callable[[str, float, float], None] | None = None) -> SpineStudy:
    """Measure every place and AIANNH area nation-wide on three spines, as production builds them:

    * the Census spine (block groups from TABBLK, no tract groups);
    * production's AIAN spine (`census_spine(..., aian=True)`): every unit from the state
      down split into its AIAN and non-AIAN parts;
    * the optimised spine: the seed's optimisation (`methods.spines.optimize_spine`, with
      production's group caps) run on every county part of the AIAN spine, as production
      runs it per [AIAN flag][state][county].

    OSED nation-wide: the per-county costs (c_k, c_notk) of each entity are combined
    above the counties (states, USA) by the seed's recursion (`combine_costs`): the
    exact OSED on the whole spine. Also: the OSED of each entity from SafeTab-P's
    published states, counties and tracts alone (NOT_COMPOSABLE when it splits a
    tract), and the units the seed's bypass rule (Algorithm 3, equal shares at every
    level) would remove from the optimised spine.
    """
    census = census_spine(geography)
    spine = census_spine(geography, aian=True)
    nb = spine.n_blocks
    n_ent = len(spine.entities)
    tract_code = np.array([int(k[5:11]) for k in spine.label[:nb]], dtype=np.int64)
    bg_code = np.array([int(k[11]) for k in spine.label[:nb]], dtype=np.int64)
    piece_of_block = geography.block_piece[spine.blocks]
    # The Census spine and SafeTab-P's published tree, county by county.
    c_nodes, c_blocks = _county_blocks(census)
    census_ids, census_costs, safetab = [], [], []
    for b in c_blocks:
        ids, cost = _county_costs(tract_code[b], bg_code[b], census.entity[:, b])
        census_ids.append(ids)
        census_costs.append(cost)
        safetab.append(_safetab_county_costs(tract_code[b], piece_of_block[b], census.entity[:, b], ids))
    # The AIAN spine, optimised county part by county part.
    a_nodes, a_blocks = _county_blocks(spine)
    results = []
    units_after = {lvl: 0 for lvl in SPINE_LEVELS}
    bypass = {lvl: [0, 0] for lvl in ("TRACT GROUP", "TRACT", "BLOCK GROUP")}
    evaluations = stopped = 0
    seconds = 0.0
    for c, b in enumerate(a_blocks):
        t0 = time.perf_counter()
        res = spines.optimize_spine(tract_code[b], bg_code[b], spine.entity[:, b], fanout_cutoff=fanout_cutoff,
                                    entity_threshold=entity_threshold, max_evaluations=max_evaluations)
        seconds += time.perf_counter() - t0
        results.append(res)
        evaluations += res.evaluations
        stopped += int(res.stopped_early)
        if progress:
            progress("optimising the spine, county by county", c + 1, len(a_blocks))
    for res in results:
        for lvl_i, name in ((spines.TRACT_GROUP, "TRACT GROUP"), (spines.TRACT, "TRACT"),
                            (spines.BLOCK_GROUP, "BLOCK GROUP")):
            units_after[name] += res.count(lvl_i)
        for k, mech in enumerate(("laplace", "gaussian")):
            _p, _s, gone = spines.bypass_spine(res.parents_after, [1] * len(res.parents_after), mech)
            for lvl_i, name in ((spines.TRACT_GROUP, "TRACT GROUP"), (spines.TRACT, "TRACT"),
                                (spines.BLOCK_GROUP, "BLOCK GROUP")):
                bypass[name][k] += int(np.sum(gone & (res.level_after == lvl_i)))
    a_ids = [r.entity_id for r in results]
    osed = {
        "census": _national_osed(census, c_nodes, census_ids, census_costs, n_ent),
        "aian": _national_osed(spine, a_nodes, a_ids, [r.cost_before for r in results], n_ent),
        "optimised": _national_osed(spine, a_nodes, a_ids, [r.cost_after for r in results], n_ent),
        "safetab": _national_osed(census, c_nodes, census_ids, safetab, n_ent),
    }

    has = census.entity >= 0
    ids = census.entity[has]  # (block, entity) memberships, both kinds
    blocks = np.bincount(ids, minlength=n_ent)
    county_of = np.zeros(nb, np.int64)
    for c, b in enumerate(c_blocks):
        county_of[b] = c
    pairs = np.unique(np.stack([np.broadcast_to(county_of, census.entity.shape)[has], ids]), axis=1)
    touched = np.bincount(pairs[1], minlength=n_ent)
    entities = census.entities.assign(
        blocks=blocks, counties=touched, osed_census=osed["census"], osed_aian=osed["aian"],
        osed_optimised=osed["optimised"], osed_safetab_tree=osed["safetab"])
    before = census.units().set_index("level")["units"]
    aian_units = spine.units().set_index("level")["units"]
    unit_rows = []
    for name in ("STATE", "COUNTY", "TRACT GROUP", "TRACT", "BLOCK GROUP", "BLOCK"):
        b_ = int(before.get(name, 0))
        m_ = int(aian_units.get(name, 0))
        a_ = units_after[name] if name in ("TRACT GROUP", "TRACT", "BLOCK GROUP") else m_
        unit_rows.append((name, b_, m_, a_))
    return SpineStudy(
        entities=entities,
        units=pd.DataFrame(unit_rows, columns=["level", "before", "aian", "after"]),
        bypassed=pd.DataFrame([(k, v[0], v[1]) for k, v in bypass.items()], columns=["level", "laplace", "gaussian"]),
        seconds=seconds, counties=len(c_nodes), evaluations=evaluations, stopped_early=stopped,
        settings={"fanout_cutoff": fanout_cutoff, "entity_threshold": entity_threshold,
                  "max_evaluations": max_evaluations}, county_parts=len(a_nodes))


def _safetab_county_costs(tract: np.ndarray, piece: np.ndarray, entity: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """(c_k, c_notk) of entities `ids` in one county on SafeTab-P's published tree there:
    county > tracts > pieces, pieces not published (NOT_COMPOSABLE where impossible)."""
    t_codes, t_of = np.unique(tract, return_inverse=True)
    p_codes, p_first, p_of = np.unique(piece, return_index=True, return_inverse=True)
    nt, npc = len(t_codes), len(p_codes)
    parents = np.r_[npc + t_of.ravel()[p_first], np.full(nt, npc + nt), -1]
    usable = np.r_[np.zeros(npc, bool), np.ones(nt + 1, bool)]
    member = np.zeros((npc, len(ids)), dtype=bool)
    col = {int(x): i for i, x in enumerate(ids)}
    for r in range(entity.shape[0]):
        for p, e in enumerate(entity[r][p_first].tolist()):  # a piece lies in one place and one AIANNH area
            if e in col:
                member[p, col[e]] = True
    cin, cout = spines.osed_costs(parents, member, usable)
    return np.stack([cin, cout], axis=1)


# ------------------------------------------------------------- published units
@dataclass
class PublishedUnits:
    """SafeTab-P's published geography as a tree plus extra sets.

    Tree: a nation root (not a unit) > USA > STATE > COUNTY > TRACT > pieces (US) and
    > PR-STATE > PR-COUNTY > PR-TRACT > pieces (Puerto Rico). Pieces (blocks with the
    same tract, place and AIANNH area) are the leaves and are not published. Extras:
    PLACE, AIANNH and PR-PLACE regions as sets of pieces.
    """

    parents: np.ndarray
    geo: np.ndarray  # level name of each node ("" for the root and the pieces)
    region: np.ndarray  # region index within its level, -1 for the root and the pieces
    piece: np.ndarray  # piece index of each leaf node, -1 elsewhere
    extra_geo: np.ndarray
    extra_region: np.ndarray
    extras: np.ndarray  # (extras, nodes) bool: the pieces in each extra set
    region_ids: dict[str, np.ndarray]
    block_piece: np.ndarray  # GRF-C row -> piece index
    piece_blocks: np.ndarray  # number of GRF-C blocks in each piece

    @property
    def is_unit(self) -> np.ndarray:
        return self.region >= 0

    def node_of(self, geo: str, region: int) -> int:
        hit = np.flatnonzero((self.geo == geo) & (self.region == region))
        return int(hit[0]) if len(hit) else -1

    def leaf_members(self, spine: CensusSpine, member: np.ndarray) -> np.ndarray:
        """Per node x entity: whether the piece (a leaf) lies in the entity (pieces are
        whole in or out of every place and AIANNH area)."""
        out = np.zeros((len(self.parents), member.shape[1]), dtype=bool)
        leaf = np.flatnonzero(self.piece >= 0)
        node_of_piece = np.full(int(self.piece.max()) + 1, -1, np.int64)
        node_of_piece[self.piece[leaf]] = leaf
        rows = node_of_piece[self.block_piece[spine.blocks]]
        out[rows] |= member
        return out

    def label(self, node: int) -> str:
        """E.g. "TRACT 06001000100"; "" for the root and the pieces (not units)."""
        if self.region[node] < 0:
            return ""
        return f"{self.geo[node]} {self.region_ids[self.geo[node]][self.region[node]]}"


def published_units(geography: Geography) -> PublishedUnits:
    """The tree of published units of a GRF-C (see `PublishedUnits`)."""
    levels = [g for g in _TREE_US + _TREE_PR if g in geography.regions]
    geo_col, reg_col, par_col = [""], [-1], [-1]
    base: dict[str, int] = {}
    for g in levels:
        n = geography.n_regions(g)
        base[g] = len(geo_col)
        geo_col += [g] * n
        reg_col += list(range(n))
        par_col += [0] * n
    parents = np.array(par_col, dtype=np.int64)
    for chain in (_TREE_US, _TREE_PR):
        present = [g for g in chain if g in base]
        for child, parent in zip(present[1:], present[:-1]):
            if parent == "USA":
                parents[base[child]:base[child] + geography.n_regions(child)] = base["USA"]
                continue
            up = parent_regions(geography, child, parent)
            if (up < 0).any():
                raise ValueError(f"{child} regions do not nest in {parent} regions in GRF-C")
            parents[base[child]:base[child] + len(up)] = base[parent] + up
    # Pieces in the runs, under their tract.
    n_pieces = geography.n_pieces
    tract_of_piece = np.full(n_pieces, -1, np.int64)
    for g in ("TRACT", "PR-TRACT"):
        if g in geography.piece_region:
            pr = geography.piece_region[g]
            tract_of_piece = np.where(pr >= 0, base[g] + pr, tract_of_piece)
    in_run = np.flatnonzero(tract_of_piece >= 0)
    first_leaf = len(parents)
    parents = np.r_[parents, tract_of_piece[in_run]]
    geo = np.array(geo_col + [""] * len(in_run), dtype=object)
    region = np.array(reg_col + [-1] * len(in_run), dtype=np.int64)
    piece = np.r_[np.full(first_leaf, -1, np.int64), in_run]
    ex_geo, ex_reg, ex_rows = [], [], []
    for g in _EXTRA_LEVELS:
        if g not in geography.piece_region:
            continue
        pr = geography.piece_region[g][in_run]
        for r in range(geography.n_regions(g)):
            row = np.zeros(len(parents), dtype=bool)
            row[first_leaf:] = pr == r
            ex_geo.append(g)
            ex_reg.append(r)
            ex_rows.append(row)
    extras = np.array(ex_rows, dtype=bool).reshape(len(ex_rows), len(parents))
    return PublishedUnits(parents, geo, region, piece, np.array(ex_geo, dtype=object), np.array(ex_reg, np.int64),
                          extras, {g: geography.regions[g].astype(str) for g in geography.regions},
                          geography.block_piece, np.bincount(geography.block_piece, minlength=n_pieces))


# ----------------------------------------------------------------- custom areas
def parse_area(text: str, geography: Geography, file: str = "area") -> np.ndarray:
    """A custom area, as a signed list of regions, to one boolean per GRF-C block.

    One entry a line: ``[+|-] [LEVEL] ID``; LEVEL is state, county, tract, place,
    aiannh or block (any case) and may be left out: the ID's length tells (2 state,
    5 county, 11 tract, 7 place = ST+PLACEFP, 4 AIANNH, 15 block = ST+COU+TRACT+BLK).
    Puerto Rico ids (state 72) are its PR-* regions. Blank lines and text after # are
    ignored. The signed sum must count every block 0 or 1 times. Raises InputError
    naming the line and the value.
    """
    lines = text.removeprefix("\ufeff").splitlines()  # a byte-order mark, as the input files' readers skip it
    if len(lines) > MAX_AREA_LINES:  # bounded work and messages, whatever is pasted
        raise InputError([Problem(file, None, None, None, f"at most {MAX_AREA_LINES:,} lines (the list has "
                                                          f"{len(lines):,})")])
    keys = _keys(geography)
    run = _in_run(geography)
    total = np.zeros(len(keys), dtype=np.int64)
    # the first and last line that add or subtract each block, to name them if it is miscounted
    first_line = np.zeros(len(keys), dtype=np.int64)
    last_line = np.zeros(len(keys), dtype=np.int64)
    n_lines = np.zeros(len(keys), dtype=np.int64)
    problems = _Problems()
    seen = 0
    for ln, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([+-]?)\s*(?:([A-Za-z-]+)\s+)?(\d+)", line)
        if not m:
            problems.append(Problem(file, ln, None, line[:_CUT], "[+|-] [LEVEL] ID, e.g. '- tract 06001000100'"))
            continue
        sign = -1 if m.group(1) == "-" else 1
        level = (m.group(2) or "").upper() or _ID_WIDTH.get(len(m.group(3)), "")
        rid = m.group(3)
        if level not in ("STATE", "COUNTY", "TRACT", "PLACE", "AIANNH", "BLOCK"):
            problems.append(Problem(file, ln, None, line[:_CUT],
                                    "a level (state, county, tract, place, aiannh, block) or an id of 2, 4, 5, "
                                    "7, 11 or 15 digits"))
            continue
        if level == "BLOCK":
            hit = keys == rid
        else:
            geo = ("PR-" + level) if rid[:2] == "72" and level != "AIANNH" else level
            if geo not in geography.regions:
                hit = np.zeros(len(keys), bool)
            else:
                regions = geography.regions[geo].astype(str)
                where = np.flatnonzero(regions == rid)
                hit = geography.block_region[geo] == where[0] if len(where) else np.zeros(len(keys), bool)
        if not hit.any():
            problems.append(Problem(file, ln, None, rid[:_CUT], f"a {level.lower()} of GRF-C in the runs of the plan"))
            continue
        if (hit & ~run).any():
            problems.append(Problem(file, ln, None, rid[:_CUT], "a block in the runs of the plan (state filter)"))
            continue
        total += sign * hit
        first_line[hit & (first_line == 0)] = ln
        last_line[hit] = ln
        n_lines += hit
        seen += 1
    if not problems and not seen:
        problems.append(Problem(file, None, None, None, "at least one region or block"))
    if not problems:
        bad = np.flatnonzero((total < 0) | (total > 1))
        if len(bad):
            b = bad[0]
            lines_of = (f"line {first_line[b]} includes it" if n_lines[b] == 1 else
                        f"lines {first_line[b]} and {last_line[b]} include it" if n_lines[b] == 2 else
                        f"{n_lines[b]:,} lines from line {first_line[b]} to line {last_line[b]} include it")
            problems.append(Problem(file, int(first_line[b]), None, str(keys[b]),
                                    f"every block counted 0 or 1 times; this one is counted {int(total[b])} times "
                                    f"({lines_of}; {len(bad):,} such block{'s' if len(bad) != 1 else ''})"))
    if problems:
        raise InputError(problems.kept, problems.total)
    return total == 1


#: The most lines an area list may have (a list of whole tracts and blocks).
MAX_AREA_LINES = 50_000


class _Problems:
    """The problems of an area list: the first SHOWN_PROBLEMS kept, the others counted."""

    def __init__(self) -> None:
        self.kept: list[Problem] = []
        self.total = 0

    def append(self, problem: Problem) -> None:
        self.total += 1
        if len(self.kept) < SHOWN_PROBLEMS:
            self.kept.append(problem)

    def __len__(self) -> int:
        return self.total


@dataclass
class Availability:
    """For one characteristic iteration: every published unit's group, after the
    coterminous copies (SPEC section 1), indexed by tree node and by extra set."""

    code: str
    iteration_level: int
    node: pd.DataFrame  # per tree node: tabulated, released, truth, published, stat_level, variance, scale, cells
    extra: pd.DataFrame  # the same per extra set
    noise: str  # "gaussian" or "geometric"
    clamped: bool  # the plan clamps counts at 0 (variances are before clamping)


def availability(units: PublishedUnits, tables: dict[PopulationGroupLevel, LevelTables], iteration_level: int,
                 code: str, coterminous: list[list[tuple[str, int]]] | None = None,
                 allow_negative_counts: bool = True) -> Availability:
    """What SafeTab-P published for iteration `code` in every unit, from level tables
    (`engine.reports.levels.level_tables`). A unit is usable when its level is in the
    plan, the iteration is tabulated at its level, and its total was released (or
    copied from a released coterminous member, which then gives its noise too).
    """
    rows: dict[tuple[str, int], dict] = {}
    noise = noise_family.GAUSSIAN
    for lvl, t in tables.items():
        if lvl.iteration_level != iteration_level:
            continue
        hit = np.flatnonzero(t.codes == code)
        if not len(hit):
            continue
        i = int(hit[0])
        plan = t.plan
        noise = noise_family.family_of(plan.privacy_defn)
        for r in range(len(t.regions)):
            st = int(t.stat_level[r, i])
            scale = float(plan.total_only if st == TOTAL_ONLY else plan.stage2)
            rows[(lvl.geo, r)] = {
                "tabulated": True, "released": bool(t.released[r, i]), "truth": int(t.truth[r, i]),
                "published": int(t.published[r, i]), "stat_level": st, "variance": float(t.variance[r, i]),
                "scale": scale, "cells": 1 if st == TOTAL_ONLY else STAT_LEVEL_CELLS[st], "source": f"{lvl.geo} {r}",
                "same_blocks_as": ""}
    # Coterminous members publish the highest released member's numbers.
    for members in coterminous or []:
        for m in members:
            if m in rows:
                rows[m]["same_blocks_as"] = ", ".join(
                    f"{g} {units.region_ids[g][r]}" for g, r in members if (g, r) != m)
        have = [m for m in members if m in rows]
        src = next((m for m in have if rows[m]["released"]), None)
        if src is None:
            continue
        for m in have:
            if m != src:
                copy = dict(rows[src])
                copy["truth"] = rows[m]["truth"]
                copy["same_blocks_as"] = rows[m]["same_blocks_as"]
                rows[m] = copy

    def frame(geos: np.ndarray, regions: np.ndarray) -> pd.DataFrame:
        out = []
        for g, r in zip(geos, regions):
            d = rows.get((g, int(r)))
            if d is None:
                d = {"tabulated": False, "released": False, "truth": 0, "published": 0, "stat_level": 0,
                     "variance": np.nan, "scale": np.nan, "cells": 0, "source": "", "same_blocks_as": ""}
            out.append(d)
        return pd.DataFrame(out)

    return Availability(code, iteration_level, frame(units.geo, units.region),
                        frame(units.extra_geo, units.extra_region), noise, not allow_negative_counts)


def structural_availability(units: PublishedUnits) -> Availability:
    """Every unit published, nothing known of its noise: the geography alone (how many
    units an area takes when no group is suppressed)."""
    def frame(n: int) -> pd.DataFrame:
        return pd.DataFrame({"tabulated": np.ones(n, bool), "released": np.ones(n, bool), "truth": 0,
                             "published": 0, "stat_level": 0, "variance": np.nan, "scale": np.nan, "cells": 0,
                             "source": [f"unit {i}" for i in range(n)], "same_blocks_as": ""})

    return Availability("", 0, frame(len(units.geo)), frame(len(units.extra_geo)), noise_family.GAUSSIAN, False)


@dataclass
class AreaResult:
    """A custom area composed of published units (`compose_area`)."""

    composable: bool
    reason: str  # why not, in plain words ("" if composable)
    units: pd.DataFrame  # sign, unit, level, region, truth, published, released, stat_level, variance
    count: int | None  # units used (the OSED over published units)
    count_if_all_published: int | None  # units needed if every unit were published for this group
    needed_but_suppressed: list[str]  # units of that decomposition that are not available
    truth: int | None
    estimate: int | None
    variance: float | None
    moe_exact: int | None
    moe_exact_is_exact: bool
    moe_normal: int | None  # floor(1.96 sqrt(variance)): the normal approximation
    split_pieces: int  # pieces only partly in the area (0 if it is a union of pieces)
    census_osed: int  # OSED on the Census block hierarchy (if blocks and block groups were published)
    census_units: pd.DataFrame  # that decomposition: sign, level, id
    search: str  # what the search covered, in plain words


def _rows_for(units: PublishedUnits, avail: Availability, comp: spines.Composition) -> pd.DataFrame:
    out = []
    for node, sign in comp.nodes.tolist():
        d = avail.node.iloc[node]
        out.append({"sign": "+" if sign > 0 else "−", "unit": units.label(node), "level": units.geo[node],
                    "region": units.region_ids[units.geo[node]][units.region[node]], **d.to_dict(), "_s": sign})
    for x, sign in comp.extras.tolist():
        d = avail.extra.iloc[x]
        g = units.extra_geo[x]
        rid = units.region_ids[g][units.extra_region[x]]
        out.append({"sign": "+" if sign > 0 else "−", "unit": f"{g} {rid}", "level": g, "region": rid,
                    **d.to_dict(), "_s": sign})
    return pd.DataFrame(out)


def compose_area(units: PublishedUnits, avail: Availability, area: np.ndarray, spine: CensusSpine | None = None,
                 max_solves: int = 20_000) -> AreaResult:
    """Compose a custom area (one boolean per GRF-C block) from the published units.

    Exact when possible: the area must be a union of whole pieces (else it needs
    unpublished units: block groups or blocks). The fewest units (`methods.spines.
    compose`) are found twice: with every unit of the group (how far the area is from
    SafeTab-P's geography) and with only the released ones (what a data user can
    do). Variance: the units' noises are independent, so the variances add
    (`engine.reports.levels.total_variance`, before clamping). MOE: the exact law of
    the signed sum by convolution (`calculators.budget.moe_of_independent_sum`; a
    sum of discrete Gaussians is not a discrete Gaussian), and the normal
    approximation floor(1.96 sqrt(variance)).
    """
    area = np.asarray(area, dtype=bool)
    if area.shape != units.block_piece.shape:
        raise ValueError("the area needs one value per GRF-C block")
    in_piece = np.bincount(units.block_piece[area], minlength=len(units.piece_blocks))
    split = int(np.sum((in_piece > 0) & (in_piece < units.piece_blocks)))
    cspine = spine
    census_osed, census_dec = 0, np.zeros((0, 2), np.int64)
    if cspine is not None:
        census_osed, census_dec = spines.osed(cspine.parents, area[cspine.blocks])
    census_units = pd.DataFrame({
        "sign": ["+" if s > 0 else "−" for s in census_dec[:, 1]],
        "level": [SPINE_LEVELS[cspine.level[v]] for v in census_dec[:, 0]] if cspine is not None else [],
        "id": [cspine.label[v] for v in census_dec[:, 0]] if cspine is not None else []})
    empty = pd.DataFrame(columns=["sign", "unit", "level", "region", "truth", "published", "released",
                                  "stat_level", "variance"])
    base = dict(truth=None, estimate=None, variance=None, moe_exact=None, moe_exact_is_exact=True, moe_normal=None,
                split_pieces=split, census_osed=int(census_osed), census_units=census_units)
    if split:
        return AreaResult(False, f"the area splits {split} piece(s): blocks of one tract, place and AIANNH area "
                                 "that SafeTab-P only ever publishes together, so it needs block groups or blocks, "
                                 "which SafeTab-P does not publish", empty, None, None, [], search="", **base)
    leaf = np.flatnonzero(units.piece >= 0)
    target = np.zeros(len(units.parents), np.int64)
    target[leaf] = in_piece[units.piece[leaf]] > 0
    tab_nodes = avail.node["tabulated"].to_numpy(bool) & units.is_unit
    tab_extra = avail.extra["tabulated"].to_numpy(bool)
    ideal = spines.compose(units.parents, target, units.extras, usable=tab_nodes, extras_usable=tab_extra,
                           max_solves=max_solves)
    rel_nodes = tab_nodes & avail.node["released"].to_numpy(bool)
    rel_extra = tab_extra & avail.extra["released"].to_numpy(bool)
    real = spines.compose(units.parents, target, units.extras, usable=rel_nodes, extras_usable=rel_extra,
                          max_solves=max_solves)
    needed = []
    if ideal.count is not None:
        needed = [units.label(v) for v, _s in ideal.nodes.tolist() if not rel_nodes[v]]
        needed += [f"{units.extra_geo[x]} {units.region_ids[units.extra_geo[x]][units.extra_region[x]]}"
                   for x, _s in ideal.extras.tolist() if not rel_extra[x]]
    search = _search_text(real if real.count is not None else ideal, units)
    if real.count is None:
        levels = sorted(set(units.geo[tab_nodes]) | set(units.extra_geo[tab_extra]),
                        key=lambda g: (_TREE_US + _TREE_PR + _EXTRA_LEVELS).index(g))
        reason = ("a unit it needs is suppressed for this group, and no other combination of released units "
                  "makes the area" if ideal.count is not None else
                  f"this group is tabulated only for {', '.join(levels) or 'no geography level'} in the plan, "
                  "and no combination of those units makes the area")
        rows = _rows_for(units, avail, ideal) if ideal.count is not None else empty
        if ideal.count is not None and not rows["variance"].isna().any():
            # Truths are known (it is a study) even where the counts were suppressed.
            base["truth"] = int(np.sum(rows["_s"].to_numpy(np.int64) * rows["truth"].to_numpy(np.int64)))
        return AreaResult(False, reason, rows.drop(columns=["_s"], errors="ignore"), None, ideal.count, needed,
                          search=search, **base)
    rows = _rows_for(units, avail, real)
    if rows["variance"].isna().any():  # the geography alone (structural_availability)
        return AreaResult(True, "", rows.drop(columns=["_s"]), real.count, ideal.count, needed, search=search, **base)
    s = rows["_s"].to_numpy(np.int64)
    truth = int(np.sum(s * rows["truth"].to_numpy(np.int64)))
    estimate = int(np.sum(s * rows["published"].to_numpy(np.int64)))
    # Coterminous copies share one noise: group by source, coefficients add up.
    by_src = rows.assign(_s=s).groupby("source").agg(coef=("_s", "sum"), variance=("variance", "first"),
                                                      scale=("scale", "first"), cells=("cells", "first"))
    by_src = by_src[by_src["coef"] != 0]
    variance = float(np.sum(by_src["coef"] ** 2 * by_src["variance"]))
    if (by_src["coef"].abs() > 1).any():
        moe, exact = int(budget.moe_bound(variance)) if variance > 0 else 0, False
    else:
        moe, exact = budget.moe_of_independent_sum(
            [(float(sc), int(c)) for sc, c in zip(by_src["scale"], by_src["cells"])], noise=avail.noise)
    moe_normal = int(budget.moe_bound(variance)) if variance > 0 else 0
    base.update(truth=truth, estimate=estimate, variance=variance, moe_exact=int(moe), moe_exact_is_exact=exact,
                moe_normal=moe_normal)
    return AreaResult(True, "", rows.drop(columns=["_s"]), real.count, ideal.count, needed, search=search, **base)


def _search_text(comp: spines.Composition, units: PublishedUnits) -> str:
    inside = units.label(comp.scope).lower() if comp.scope >= 0 else ""
    where = "every place and AIANNH area of the group" if comp.scope < 0 else \
        f"the places and AIANNH areas inside {inside or 'the nation'}"
    if comp.exhaustive:
        return (f"exact: every signed combination of {where} ({comp.candidates}) with the states, counties and "
                "tracts was tried")
    return (f"searched {where} ({comp.candidates}) in combinations of up to {comp.max_extras}, with the states, "
            "counties and tracts: the fewest units found, possibly not the fewest possible")


def nearest_unit(avail: Availability, units: PublishedUnits, truth: int, exclude: set[str] = frozenset()
                 ) -> dict | None:
    """The released unit (any level) of the group whose true count is nearest `truth`
    (ties: the smaller variance), for a "directly published unit of the same size"."""
    frames = []
    for df, labels in ((avail.node, [units.label(v) if units.is_unit[v] else "" for v in range(len(units.geo))]),
                       (avail.extra, [f"{g} {units.region_ids[g][r]}" for g, r in
                                      zip(units.extra_geo, units.extra_region)])):
        frames.append(df.assign(unit=labels))
    allu = pd.concat(frames, ignore_index=True)
    allu = allu[allu["released"] & (allu["unit"] != "") & ~allu["unit"].isin(exclude)]
    allu = allu.drop_duplicates("unit")
    if allu.empty:
        return None
    allu = allu.assign(dist=(allu["truth"] - truth).abs()).sort_values(["dist", "variance", "unit"])
    d = allu.iloc[0].to_dict()
    moe, exact = budget.moe_of_independent_sum([(float(d["scale"]), int(d["cells"]))], noise=avail.noise)
    d.update(moe_exact=int(moe), moe_exact_is_exact=exact,
             moe_normal=int(budget.moe_bound(d["variance"])) if d["variance"] > 0 else 0)
    return d


# ------------------------------------------------------------------ text reports
def format_study(study: SpineStudy) -> str:
    """The spine study as text (command line)."""
    e = study.entities
    lines = [f"Spine optimisation of {study.counties} counties ({study.county_parts} parts: each county's AIAN and "
             f"non-AIAN parts, as production) in {study.seconds:.3f} s "
             f"({study.evaluations} tract-group merges tested; fan-out cutoff {study.settings['fanout_cutoff']}, "
             f"entity threshold {study.settings['entity_threshold']})."]
    lines.append(study.units.rename(columns={"before": "Census spine", "aian": "AIAN spine",
                                             "after": "optimised spine"}).to_string(index=False))
    for kind, sel in (("places", e["level"] != "AIANNH"), ("AIANNH areas", e["level"] == "AIANNH")):
        if sel.any():
            b, m, a = e.loc[sel, "osed_census"], e.loc[sel, "osed_aian"], e.loc[sel, "osed_optimised"]
            lines.append(f"OSED of {sel.sum()} {kind} (Census -> AIAN -> optimised spine): mean {b.mean():.2f} -> "
                         f"{m.mean():.2f} -> {a.mean():.2f}, max {b.max()} -> {m.max()} -> {a.max()}, on the spine "
                         f"(distance 1) {int((b == 1).sum())} -> {int((m == 1).sum())} -> {int((a == 1).sum())}")
    lines.append(e.rename(columns={"osed_census": "OSED Census spine", "osed_aian": "OSED AIAN spine",
                                   "osed_optimised": "OSED optimised",
                                   "osed_safetab_tree": "OSED SafeTab-P tracts (-1: impossible)"})
                 .drop(columns=["index"]).to_string(index=False))
    return "\n".join(lines)


def format_area(res: AreaResult, seeded: bool = False) -> str:
    """A custom area's composition as text (command line)."""
    lines = []
    if res.composable:
        lines.append(f"Composable from {res.count} published unit(s) ({res.search}):")
        cols = ["sign", "unit"] + (["truth", "published", "stat_level", "variance"] if seeded else [])
        lines.append(res.units[cols].to_string(index=False))
        if seeded and res.variance is not None:
            lines.append(f"Composed count {res.estimate} (truth {res.truth}); variance {res.variance:.1f}; "
                         f"95% MOE {res.moe_exact} ({'exact law of the sum' if res.moe_exact_is_exact else 'approximation'}"
                         f"), normal approximation {res.moe_normal}. Seeded study: NOT a release.")
    else:
        lines.append(f"Not composable from published units: {res.reason}.")
        if res.needed_but_suppressed:
            lines.append(f"With every unit published it would take {res.count_if_all_published} unit(s); "
                         f"not available: {', '.join(res.needed_but_suppressed)}.")
    lines.append(f"On the Census spine (if block groups and blocks were published): {res.census_osed} unit(s).")
    return "\n".join(lines)
