"""GRF-C: blocks, the regions of every geography level, and coterminous entities.

Region ids (SPEC §4): USA "1"; STATE = TABBLKST; COUNTY = ST+COU; TRACT = ST+COU+TRACT;
PLACE = ST+PLACEFP (99999 = no place); AIANNH = AIANNHCE (9999 = none). State 72 is
Puerto Rico and runs with the PR-* levels. Everything here is public information: the
population-group universe and coterminous sets come from GRF-C only, never from persons.

Persons are counted per *piece*: the blocks sharing (state, county, tract, place,
AIANNH area). Every region of every level is a union of pieces, so one count table per
piece serves all levels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from calculators.config import SafeTabConfig
from calculators.levels import GEO_LEVELS_PR, GEO_LEVELS_US, PR_STATE_CODE, US_STATE_CODES
from engine.errors import ProblemLog
from engine.inputs import _arrow
from engine.inputs.readers import Batch

NO_PLACE = "99999"
NO_AIANNH = "9999"
_WIDTHS = {"TABBLKST": 2, "TABBLKCOU": 3, "TABTRACTCE": 6, "TABBLK": 4, "PLACEFP": 5, "AIANNHCE": 4}


@dataclass
class Geography:
    """Blocks of GRF-C and, for each geography level of the runs that are on, its regions.

    `block_keys` are ST+COU+TRACT+BLK strings (15 characters) in file order.
    `regions[geo]` are the sorted region ids of the level (the universe's regions).
    `piece_region[geo][p]` is the index in `regions[geo]` of piece p, or -1.
    """

    block_keys: pa.Array
    block_piece: np.ndarray
    n_pieces: int
    regions: dict[str, np.ndarray] = field(default_factory=dict)
    piece_region: dict[str, np.ndarray] = field(default_factory=dict)
    block_region: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _lookup: _BlockLookup | None = field(default=None, init=False, repr=False, compare=False)

    def block_index(self, keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(index in `block_keys` of each ST+COU+TRACT+BLK key, 0 where absent; found).

        The lookup is built once per geography (a batch of persons used to rebuild a hash
        table of every block: most of the reading time of a national run)."""
        if self._lookup is None:
            self._lookup = _BlockLookup.of(self.block_keys)
        return self._lookup.find(keys)

    @property
    def levels(self) -> list[str]:
        return list(self.regions)

    def n_regions(self, geo: str) -> int:
        return len(self.regions.get(geo, ()))

    def coterminous_sets(self) -> list[list[tuple[str, int]]]:
        """Sets of (geo, region index) of different levels covering exactly the same blocks.

        SPEC §1 (coterminous geographies): e.g. DC as state, county and place, or a
        county with a single tract. Levels inside a set follow the priority order
        USA, STATE, COUNTY, TRACT, PLACE, AIANNH (PR: PR-STATE, PR-COUNTY, ...).
        """
        out = []
        for run_levels in (GEO_LEVELS_US, GEO_LEVELS_PR):
            levels = [g for g in run_levels if g in self.block_region]
            if len(levels) < 2:
                continue
            # A random 64-bit weight per block makes (count, sum of weights) a
            # fingerprint of a block set; candidates are then compared exactly.
            weights = np.random.default_rng(12345).integers(0, 2**63, size=len(self.block_keys), dtype=np.uint64)
            buckets: dict[tuple[int, int], list[tuple[str, int]]] = {}
            members: dict[tuple[str, int], np.ndarray] = {}
            for geo in levels:
                br = self.block_region[geo]
                inside = br >= 0
                n = self.n_regions(geo)
                counts = np.bincount(br[inside], minlength=n)
                sums = np.zeros(n, dtype=np.uint64)
                np.add.at(sums, br[inside], weights[inside])
                for r in range(n):
                    buckets.setdefault((int(counts[r]), int(sums[r])), []).append((geo, r))
            for cands in buckets.values():
                if len({g for g, _ in cands}) < 2:
                    continue
                for geo, r in cands:
                    members[(geo, r)] = np.flatnonzero(self.block_region[geo] == r)
                # Exact check: group candidates by their actual block sets.
                groups: list[list[tuple[str, int]]] = []
                for cand in cands:
                    for grp in groups:
                        if np.array_equal(members[grp[0]], members[cand]):
                            grp.append(cand)
                            break
                    else:
                        groups.append([cand])
                for grp in groups:
                    if len({g for g, _ in grp}) >= 2:
                        order = {g: i for i, g in enumerate(run_levels)}
                        out.append(sorted(grp, key=lambda m: order[m[0]]))
        return out


def parent_regions(geography: Geography, child: str, parent: str) -> np.ndarray:
    """For each region of level `child`, the index of the region of level `parent` that
    contains it, or -1 where the child region is not inside a single parent region
    (e.g. a place crossing county lines). Nesting is read from GRF-C's pieces, so it is
    public information.
    """
    pc, pp = geography.piece_region[child], geography.piece_region[parent]
    n = geography.n_regions(child)
    inside = (pc >= 0) & (pp >= 0)
    lo = np.full(n, np.iinfo(np.int64).max, np.int64)
    hi = np.full(n, -1, np.int64)
    np.minimum.at(lo, pc[inside], pp[inside])
    np.maximum.at(hi, pc[inside], pp[inside])
    # A child piece outside every parent region also breaks nesting.
    outside = np.zeros(n, bool)
    outside[pc[(pc >= 0) & (pp < 0)]] = True
    return np.where((lo == hi) & ~outside, hi, -1)


def check_grf(batch: Batch, log: ProblemLog, file: str = "GRF-C.txt") -> np.ndarray:
    """Validate GRF-C rows; returns a mask of good rows (problems go to `log`)."""
    t = batch.table
    ok = np.ones(t.num_rows, dtype=bool) if batch.reported is None else ~batch.reported
    for col, width in _WIDTHS.items():
        arr = t[col]
        bad = ~ascii_digits(arr, width, width)
        _log_rows(log, file, batch, col, arr, bad, f"{width} digits")
        ok &= ~bad
    st = t["TABBLKST"]
    known = _arrow.numpy(pc.is_in(st, value_set=_arrow.strings(list(US_STATE_CODES) + [PR_STATE_CODE])))
    bad = ok & ~known
    _log_rows(log, file, batch, "TABBLKST", st, bad, "a state FIPS code of the 50 states, DC (11) or Puerto Rico (72)")
    ok &= ~bad
    keys = block_keys(t)
    # Duplicated blocks would double-count their persons in every region.
    if ok.any():
        k = _arrow.text(keys.filter(_arrow.mask(ok)))
        uniq, first, counts = np.unique(k, return_index=True, return_counts=True)
        if (counts > 1).any():
            okidx = np.flatnonzero(ok)
            seen_first = set(okidx[first[counts > 1]].tolist())
            kk = keys.to_numpy(zero_copy_only=False)
            dup_keys = set(uniq[counts > 1].tolist())
            for i in okidx:
                if kk[i] in dup_keys and i not in seen_first:
                    log.add(file, batch.line(i), "TABBLK", kk[i], "each block (ST+COU+TRACT+BLK) listed once")
                    ok[i] = False
    return ok


def _log_rows(log: ProblemLog, file: str, batch: Batch, col: str, arr, bad: np.ndarray, expected: str) -> None:
    idx = np.flatnonzero(batch.unreported(bad))
    if not len(idx):
        return
    shown = idx[: max(0, log.keep - len(log.problems))]
    vals = arr.take(pa.array(shown)).to_pylist() if len(shown) else []
    for i, v in zip(shown, vals):
        log.add(file, batch.line(i), col, v, expected)
    log.count(len(idx) - len(shown))


_KEY_WIDTH = sum(_WIDTHS[c] for c in ("TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK"))


def ascii_digits(values: pa.ChunkedArray | pa.Array, min_len: int, max_len: int) -> np.ndarray:
    """Rows of min_len..max_len ASCII digits (`utf8_is_digit` alone also takes other
    scripts' digits, e.g. Arabic-Indic ones, which int64 parsing then refuses)."""
    n = pc.utf8_length(values)
    ok = pc.and_(pc.and_(pc.string_is_ascii(values), pc.utf8_is_digit(values)),
                 pc.and_(pc.greater_equal(n, _arrow.integer(min_len, n.type)),
                         pc.less_equal(n, _arrow.integer(max_len, n.type))))
    return _arrow.numpy(ok)


def _digit_keys(keys: pa.Array) -> np.ndarray:
    """Mask of the keys made of exactly _KEY_WIDTH ASCII digits (they fit an int64)."""
    return ascii_digits(keys, _KEY_WIDTH, _KEY_WIDTH)


@dataclass(frozen=True)
class _BlockLookup:
    """The blocks' 15-digit keys as sorted integers (binary search), or, if some key is not
    15 ASCII digits (a geography not read from a checked GRF-C), the keys themselves."""

    keys: pa.Array
    sorted_codes: np.ndarray | None = None
    order: np.ndarray | None = None

    @classmethod
    def of(cls, keys: pa.Array) -> _BlockLookup:
        if len(keys) == 0 or not _digit_keys(keys).all():
            return cls(keys)
        codes = _arrow.numpy(pc.cast(keys, pa.int64()))
        order = np.argsort(codes, kind="stable")
        return cls(keys, codes[order], order)

    def find(self, values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        if self.sorted_codes is None:
            return _arrow.index_in(values, self.keys)
        # a key that is not 15 ASCII digits equals no block's key
        digits = _digit_keys(values)
        codes = np.full(len(values), -1, np.int64)
        if digits.any():
            codes[digits] = _arrow.numpy(pc.cast(values.filter(_arrow.mask(digits)), pa.int64()))
        pos = np.minimum(np.searchsorted(self.sorted_codes, codes), len(self.sorted_codes) - 1)
        found = digits & (self.sorted_codes[pos] == codes)
        return np.where(found, self.order[pos], 0).astype(np.int64), found


def block_keys(t: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(t["TABBLKST"], t["TABBLKCOU"], t["TABTRACTCE"], t["TABBLK"],
                                       _arrow.string("")).combine_chunks()


def build_geography(grf: pa.Table, config: SafeTabConfig) -> Geography:
    """Regions and pieces of the runs that are on (US restricted to `state_filter_us`)."""
    st = _arrow.text(grf["TABBLKST"])
    cou = _arrow.text(grf["TABBLKCOU"])
    tract = _arrow.text(grf["TABTRACTCE"])
    place = _arrow.text(grf["PLACEFP"])
    aian = _arrow.text(grf["AIANNHCE"])
    n = len(st)
    is_pr = st == PR_STATE_CODE
    in_us = np.isin(st, np.array(config.state_filter_us, dtype=str)) & ~is_pr & config.run_us
    in_pr = is_pr & config.run_pr

    ids: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    stcou = np.char.add(st, cou)
    sct = np.char.add(stcou, tract)
    stplace = np.char.add(st, place)
    has_place = place != NO_PLACE
    specs_us = {
        "USA": (np.full(n, "1"), in_us),
        "STATE": (st, in_us),
        "COUNTY": (stcou, in_us),
        "TRACT": (sct, in_us),
        "PLACE": (stplace, in_us & has_place),
        "AIANNH": (aian, in_us & (aian != NO_AIANNH)),
    }
    specs_pr = {
        "PR-STATE": (st, in_pr),
        "PR-COUNTY": (stcou, in_pr),
        "PR-TRACT": (sct, in_pr),
        "PR-PLACE": (stplace, in_pr & has_place),
    }
    for geo, (vals, mask) in {**specs_us, **specs_pr}.items():
        if mask.any():
            ids[geo] = (vals, mask)

    # Pieces: blocks with the same (state, county, tract, place, AIANNH) and run.
    piece_key = np.char.add(np.char.add(sct, place), aian)
    piece_key = np.where(in_us | in_pr, piece_key, "")
    uniq, block_piece = np.unique(piece_key, return_inverse=True)
    n_pieces = len(uniq)
    first_block = np.zeros(n_pieces, dtype=np.int64)
    first_block[block_piece[::-1]] = np.arange(n)[::-1]

    geo = Geography(
        block_keys=block_keys(grf),
        block_piece=block_piece.astype(np.int64),
        n_pieces=n_pieces,
    )
    for g, (vals, mask) in ids.items():
        regions = np.unique(vals[mask])
        br = np.full(n, -1, dtype=np.int64)
        br[mask] = np.searchsorted(regions, vals[mask])
        geo.regions[g] = regions
        geo.block_region[g] = br
        # All blocks of a piece share its region at every level, by construction.
        geo.piece_region[g] = br[first_block]
    return geo
