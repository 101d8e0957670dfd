"""Synthetic geography for `engine.synthetic.nation`: states, counties, tracts, block
groups, blocks, places, AIANNH areas.

The geography grows with the number of persons N roughly as the real nation's does
(2020 Census): about 4,000 persons per tract, 100,000 per county and 10,000 per place,
5 to 20 blocks per tract, and one AIANNH area per 500,000 persons (at least 3).

The hierarchy is block > block group > tract > county > state, as the Census Bureau's:
a block's block group is the first digit of its 4-digit TABBLK code (the Census
convention), so GRF-C carries it without a column of its own. The generator numbers
the blocks of a tract in runs of BLOCKS_PER_BLOCK_GROUP: block group 1 holds blocks
1000-1007, block group 2 blocks 2000-2007, and so on (1 to 3 block groups per tract).
Places (runs of tracts, partly covered at their ends, possibly across a county line)
and AIANNH areas (a few blocks, or runs of tracts, some across a state line) cut
across block groups, tracts and counties.

States get persons by their approximate 2020 population shares. A state is included
when its real share of N is at least `MIN_STATE_PERSONS` persons, so all 50 states, DC
and Puerto Rico are present from 1 million persons up; DC and Puerto Rico are always
present. Everything here is drawn from a seeded numpy Generator and is small (at most
about a million blocks for 300 million persons).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PERSONS_PER_TRACT = 4_000
PERSONS_PER_COUNTY = 100_000
#: Average number of persons per place: runs of about 2 tracts, 80% of them in a place.
PERSONS_PER_PLACE = 10_000
PERSONS_PER_AIANNH = 500_000
MIN_AIANNH = 3
BLOCKS_PER_TRACT = (5, 20)
#: Blocks per Census block group, numbered block-group digit + 3 digits (TABBLK).
BLOCKS_PER_BLOCK_GROUP = 8
assert BLOCKS_PER_TRACT[1] <= 9 * BLOCKS_PER_BLOCK_GROUP  # block-group digits 1..9
#: A state is included when its real 2020 share of N is at least this many persons.
MIN_STATE_PERSONS = 1_700
DC, PR = "11", "72"
DC_PLACE = "50000"
NO_PLACE = "99999"
NO_AIANNH = "9999"

# (FIPS, USPS, 2020 population, Hispanic share, and the "alone" shares of Black,
#  American Indian and Alaska Native, Asian, Native Hawaiian and Other Pacific
#  Islander): approximate public 2020 Census figures, rounded.
STATES: tuple[tuple[str, str, int, float, float, float, float, float], ...] = (
    ("01", "AL", 5_024_279, 0.053, 0.258, 0.007, 0.015, 0.001),
    ("02", "AK", 733_391, 0.071, 0.030, 0.152, 0.062, 0.017),
    ("04", "AZ", 7_151_502, 0.307, 0.047, 0.045, 0.037, 0.002),
    ("05", "AR", 3_011_524, 0.085, 0.151, 0.009, 0.017, 0.005),
    ("06", "CA", 39_538_223, 0.394, 0.057, 0.016, 0.155, 0.004),
    ("08", "CO", 5_773_714, 0.219, 0.041, 0.013, 0.035, 0.002),
    ("09", "CT", 3_605_944, 0.173, 0.108, 0.004, 0.048, 0.0005),
    ("10", "DE", 989_948, 0.105, 0.221, 0.005, 0.042, 0.0005),
    ("11", "DC", 689_545, 0.113, 0.414, 0.005, 0.048, 0.001),
    ("12", "FL", 21_538_187, 0.265, 0.145, 0.004, 0.029, 0.001),
    ("13", "GA", 10_711_908, 0.105, 0.310, 0.005, 0.044, 0.001),
    ("15", "HI", 1_455_271, 0.095, 0.016, 0.003, 0.372, 0.108),
    ("16", "ID", 1_839_106, 0.130, 0.007, 0.014, 0.014, 0.002),
    ("17", "IL", 12_812_508, 0.182, 0.139, 0.008, 0.059, 0.0005),
    ("18", "IN", 6_785_528, 0.082, 0.096, 0.003, 0.025, 0.001),
    ("19", "IA", 3_190_369, 0.068, 0.041, 0.004, 0.025, 0.002),
    ("20", "KS", 2_937_880, 0.130, 0.056, 0.010, 0.030, 0.001),
    ("21", "KY", 4_505_836, 0.046, 0.080, 0.002, 0.016, 0.001),
    ("22", "LA", 4_657_757, 0.069, 0.314, 0.007, 0.018, 0.0005),
    ("23", "ME", 1_362_359, 0.020, 0.014, 0.006, 0.012, 0.0005),
    ("24", "MD", 6_177_224, 0.118, 0.295, 0.005, 0.067, 0.001),
    ("25", "MA", 7_029_917, 0.126, 0.069, 0.003, 0.072, 0.0005),
    ("26", "MI", 10_077_331, 0.056, 0.137, 0.006, 0.034, 0.0005),
    ("27", "MN", 5_706_494, 0.061, 0.070, 0.010, 0.052, 0.0005),
    ("28", "MS", 2_961_279, 0.036, 0.366, 0.005, 0.011, 0.0005),
    ("29", "MO", 6_154_913, 0.049, 0.113, 0.005, 0.022, 0.002),
    ("30", "MT", 1_084_225, 0.044, 0.005, 0.062, 0.008, 0.001),
    ("31", "NE", 1_961_504, 0.120, 0.049, 0.010, 0.027, 0.001),
    ("32", "NV", 3_104_614, 0.287, 0.103, 0.014, 0.087, 0.009),
    ("33", "NH", 1_377_529, 0.043, 0.015, 0.002, 0.026, 0.0005),
    ("34", "NJ", 9_288_994, 0.216, 0.124, 0.006, 0.102, 0.0005),
    ("35", "NM", 2_117_522, 0.477, 0.021, 0.100, 0.018, 0.001),
    ("36", "NY", 20_201_249, 0.195, 0.148, 0.007, 0.096, 0.0005),
    ("37", "NC", 10_439_388, 0.107, 0.205, 0.012, 0.033, 0.001),
    ("38", "ND", 779_094, 0.043, 0.034, 0.050, 0.016, 0.001),
    ("39", "OH", 11_799_448, 0.044, 0.125, 0.002, 0.025, 0.0005),
    ("40", "OK", 3_959_353, 0.119, 0.073, 0.077, 0.023, 0.002),
    ("41", "OR", 4_237_256, 0.144, 0.020, 0.014, 0.046, 0.005),
    ("42", "PA", 13_002_700, 0.081, 0.108, 0.002, 0.039, 0.0005),
    ("44", "RI", 1_097_379, 0.176, 0.057, 0.007, 0.036, 0.0005),
    ("45", "SC", 5_118_425, 0.069, 0.250, 0.004, 0.018, 0.001),
    ("46", "SD", 886_667, 0.045, 0.020, 0.088, 0.015, 0.0005),
    ("47", "TN", 6_910_840, 0.069, 0.158, 0.003, 0.020, 0.001),
    ("48", "TX", 29_145_505, 0.393, 0.122, 0.010, 0.054, 0.001),
    ("49", "UT", 3_271_616, 0.151, 0.012, 0.011, 0.025, 0.011),
    ("50", "VT", 643_077, 0.024, 0.014, 0.003, 0.018, 0.0005),
    ("51", "VA", 8_631_393, 0.105, 0.186, 0.005, 0.071, 0.001),
    ("53", "WA", 7_705_281, 0.137, 0.042, 0.016, 0.094, 0.008),
    ("54", "WV", 1_793_716, 0.019, 0.036, 0.002, 0.008, 0.0005),
    ("55", "WI", 5_893_718, 0.076, 0.064, 0.010, 0.030, 0.0005),
    ("56", "WY", 576_851, 0.102, 0.009, 0.024, 0.009, 0.001),
    ("72", "PR", 3_285_874, 0.989, 0.070, 0.005, 0.001, 0.0005),
)
TOTAL_2020 = sum(s[2] for s in STATES)
STATE_INFO = {s[0]: s for s in STATES}


def choose_states(persons: int) -> dict[str, int]:
    """State code -> persons, in FIPS order (DC and Puerto Rico always included).

    Rule: a state is included when its 2020 share of `persons` is at least
    MIN_STATE_PERSONS (the largest state always is). DC and Puerto Rico get at least
    min(MIN_STATE_PERSONS, 2% of N) persons so that they are never trivially small;
    the rest is shared among the included states in proportion to their 2020
    populations (largest remainder, so the total is exactly `persons`).
    """
    largest = max(STATES, key=lambda s: s[2])[0]
    floor = min(MIN_STATE_PERSONS, int(0.02 * persons))
    fixed = {}
    for code in (DC, PR):
        fixed[code] = max(floor, round(persons * STATE_INFO[code][2] / TOTAL_2020))
    others = [
        s[0]
        for s in STATES
        if s[0] not in fixed
        and (s[0] == largest or persons * s[2] / TOTAL_2020 >= MIN_STATE_PERSONS)
    ]
    rest = persons - sum(fixed.values())
    alloc = apportion(rest, np.array([STATE_INFO[c][2] for c in others], dtype=float))
    out = dict(zip(others, alloc.tolist()))
    out.update(fixed)
    return {c: int(out[c]) for c in sorted(out)}


def apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Split `total` into integers proportional to `weights` (largest remainder)."""
    return apportion_grouped(np.array([total]), np.zeros(len(weights), dtype=np.int64), weights)


def apportion_grouped(totals: np.ndarray, group: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Largest-remainder split of totals[g] over the items of each group g.

    `group` is non-decreasing (items of a group are contiguous); every group needs at
    least one positive weight. The result sums exactly to `totals` per group.
    """
    weights = np.asarray(weights, dtype=float)
    group = np.asarray(group, dtype=np.int64)
    wsum = np.bincount(group, weights=weights, minlength=len(totals))
    exact = np.asarray(totals, dtype=float)[group] * weights / wsum[group]
    base = np.floor(exact).astype(np.int64)
    deficit = np.asarray(totals, dtype=np.int64) - np.bincount(
        group, weights=base, minlength=len(totals)
    ).astype(np.int64)
    frac = exact - base
    order = np.lexsort((-frac, group))
    starts = np.searchsorted(group, np.arange(len(totals)))
    rank = np.empty(len(group), dtype=np.int64)
    rank[order] = np.arange(len(group)) - starts[group[order]]
    base += rank < deficit[group]
    return base


@dataclass
class Geography:
    """Blocks in file order (state, county, tract, block) and their entities.

    Codes are integers (written with 3, 6, 4, 5 and 4 digits); `block_table` gives the
    GRF-C columns as fixed-width byte strings without building Python strings. Block
    groups are implied by the block codes (`block_group`, `block_group_tract`).
    """

    state_codes: list[str]
    county_state: np.ndarray  # county -> state index
    county_code: np.ndarray  # 3 digits
    tract_county: np.ndarray  # tract -> county index
    tract_code: np.ndarray  # 6 digits
    block_tract: np.ndarray  # block -> tract index
    block_code: np.ndarray  # 4 digits
    block_persons: np.ndarray  # int64
    block_place: np.ndarray  # block -> place index or -1
    place_state: np.ndarray  # place -> state index
    place_code: np.ndarray  # 5 digits
    block_aiannh: np.ndarray  # block -> AIANNH area index or -1
    aiannh_code: np.ndarray  # 4 digits

    @property
    def n_places(self) -> int:
        return len(self.place_code)

    @property
    def n_aiannh(self) -> int:
        return len(self.aiannh_code)

    @property
    def block_group_code(self) -> np.ndarray:
        """Block group digit (1..9) of each block: the first digit of TABBLK."""
        return np.asarray(self.block_code) // 1000

    @property
    def block_group(self) -> np.ndarray:
        """Index of each block's block group (block groups numbered in file order)."""
        key = np.asarray(self.block_tract, dtype=np.int64) * 10 + self.block_group_code
        new = np.r_[True, key[1:] != key[:-1]]
        return np.cumsum(new) - 1

    @property
    def block_group_tract(self) -> np.ndarray:
        """Tract index of each block group."""
        bg = self.block_group
        out = np.empty(int(bg[-1]) + 1 if len(bg) else 0, dtype=np.int64)
        out[bg] = self.block_tract
        return out

    @property
    def n_block_groups(self) -> int:
        return len(self.block_group_tract)

    @property
    def block_county(self) -> np.ndarray:
        return self.tract_county[self.block_tract]

    @property
    def block_state(self) -> np.ndarray:
        return self.county_state[self.block_county]

    @property
    def n_blocks(self) -> int:
        return len(self.block_tract)

    def block_table(self) -> dict[str, np.ndarray]:
        """GRF-C columns of every block as fixed-width byte strings (dtype S2..S6)."""
        bt = self.block_tract
        bc = self.tract_county[bt]
        st = np.asarray(self.state_codes, dtype="S2")[self.county_state[bc]]
        place = np.where(
            self.block_place >= 0, self.place_code[np.maximum(self.block_place, 0)], int(NO_PLACE)
        )
        aian = np.where(
            self.block_aiannh >= 0,
            self.aiannh_code[np.maximum(self.block_aiannh, 0)],
            int(NO_AIANNH),
        )
        return {
            "TABBLKST": st,
            "TABBLKCOU": digits(self.county_code[bc], 3),
            "TABTRACTCE": digits(self.tract_code[bt], 6),
            "TABBLK": digits(self.block_code, 4),
            "PLACEFP": digits(place, 5),
            "AIANNHCE": digits(aian, 4),
        }


def digits(values: np.ndarray, width: int) -> np.ndarray:
    """Non-negative integers as zero-padded byte strings of `width` digits (dtype S<width>)."""
    v = np.asarray(values, dtype=np.int64)
    out = np.empty((len(v), width), dtype=np.uint8)
    for i in range(width):
        out[:, width - 1 - i] = 48 + (v // 10**i) % 10
    return out.view(f"S{width}").ravel()


def _spaced(within: np.ndarray, n: np.ndarray, width: int, step: int) -> np.ndarray:
    """Codes of items numbered `within` among `n` in their group: increasing, of
    `width` digits, spaced by `step` when they fit."""
    top = 10**width - 2
    steps = np.maximum(1, np.minimum(step, top // np.maximum(n, 1)))
    return (within + 1) * steps


def _within(group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Position of each item in its (contiguous) group, and the size of its group."""
    sizes = np.bincount(group, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return np.arange(len(group)) - starts[group], sizes[group]


def build_geography(persons: int, rng: np.random.Generator) -> Geography:
    """The synthetic geography for `persons` persons (see the module docstring)."""
    states = choose_states(persons)
    state_codes = list(states)
    state_persons = np.array([states[c] for c in state_codes], dtype=np.int64)
    us_idx = [i for i, c in enumerate(state_codes) if c not in (DC, PR)]

    # Counties: about PERSONS_PER_COUNTY each, very unequal sizes (lognormal).
    n_counties = np.maximum(1, np.rint(state_persons / PERSONS_PER_COUNTY)).astype(np.int64)
    n_counties[state_codes.index(DC)] = 1
    county_state = np.repeat(np.arange(len(state_codes)), n_counties)
    county_w = rng.lognormal(0.0, 1.0, size=len(county_state))
    county_persons = apportion_grouped(state_persons, county_state, county_w)
    # Odd codes like real FIPS county codes (001, 003, ...) while they fit.
    within, size = _within(county_state, len(state_codes))
    county_code = np.where(size <= 499, 2 * within + 1, within + 1)

    # Tracts: about PERSONS_PER_TRACT each. At least one ordinary US county has a
    # single tract (a county coterminous with its tract).
    n_tracts = np.maximum(1, np.rint(county_persons / PERSONS_PER_TRACT)).astype(np.int64)
    ordinary = np.isin(county_state, us_idx)
    if not np.any(ordinary & (n_tracts == 1)):
        cand = np.flatnonzero(ordinary)
        n_tracts[cand[np.argmin(county_persons[cand])]] = 1
    tract_county = np.repeat(np.arange(len(county_state)), n_tracts)
    tract_w = rng.lognormal(0.0, 0.35, size=len(tract_county))
    tract_persons = apportion_grouped(county_persons, tract_county, tract_w)
    within, size = _within(tract_county, len(county_state))
    tract_code = _spaced(within, size, 6, 100)

    # Blocks: 5..20 per tract, numbered like real blocks (block group digit + 3 digits,
    # BLOCKS_PER_BLOCK_GROUP blocks per block group); about 15% of blocks are empty,
    # the others have very unequal populations.
    n_blocks = rng.integers(BLOCKS_PER_TRACT[0], BLOCKS_PER_TRACT[1] + 1, size=len(tract_county))
    block_tract = np.repeat(np.arange(len(tract_county)), n_blocks)
    first = np.concatenate(([0], np.cumsum(n_blocks)[:-1]))
    within = np.arange(len(block_tract)) - first[block_tract]
    block_w = rng.gamma(0.8, 1.0, size=len(block_tract)) * (rng.random(len(block_tract)) >= 0.15)
    block_w[first] += 1e-3  # every tract keeps a block with people
    block_persons = apportion_grouped(tract_persons, block_tract, block_w)
    block_code = (1 + within // BLOCKS_PER_BLOCK_GROUP) * 1000 + within % BLOCKS_PER_BLOCK_GROUP

    block_state = county_state[tract_county[block_tract]]
    block_place, place_state, place_code = _places(
        state_codes, block_state, block_tract, tract_county, first, n_blocks, rng
    )
    block_aiannh, aiannh_code = _aiannh(
        persons,
        state_codes,
        state_persons,
        block_state,
        block_tract,
        tract_county,
        first,
        n_blocks,
        rng,
    )
    return Geography(
        state_codes=state_codes,
        county_state=county_state,
        county_code=county_code,
        tract_county=tract_county,
        tract_code=tract_code,
        block_tract=block_tract,
        block_code=block_code,
        block_persons=block_persons,
        block_place=block_place,
        place_state=place_state,
        place_code=place_code,
        block_aiannh=block_aiannh,
        aiannh_code=aiannh_code,
    )


def _places(state_codes, block_state, block_tract, tract_county, first, n_blocks, rng):
    """Places: runs of about 2 consecutive tracts of a state (possibly crossing a county
    line), 80% of the runs in a place; the run's first and last tracts are often only
    partly inside. DC is one place covering all its blocks; every state has a place."""
    n_states = len(state_codes)
    block_place = np.full(len(block_tract), -1, dtype=np.int64)
    place_state: list[int] = []
    tract_state = np.asarray(block_state)[first]
    for s in range(n_states):
        tracts = np.flatnonzero(tract_state == s)
        lo_b, hi_b = first[tracts[0]], first[tracts[-1]] + n_blocks[tracts[-1]]
        if state_codes[s] == DC:
            block_place[lo_b:hi_b] = len(place_state)
            place_state.append(s)
            continue
        start_place = len(place_state)
        i = 0
        while i < len(tracts):
            run = int(rng.geometric(0.5))
            sel = tracts[i : i + run]
            i += run
            if rng.random() >= 0.8:
                continue
            a, b = first[sel[0]], first[sel[-1]] + n_blocks[sel[-1]]
            # Partly inside: skip some leading blocks of the first tract and some
            # trailing blocks of the last one (never all of them).
            if rng.random() < 0.5:
                a += int(rng.integers(0, n_blocks[sel[0]] // 2 + 1))
            if rng.random() < 0.5:
                b -= int(rng.integers(0, n_blocks[sel[-1]] // 2 + 1))
            if b <= a:
                b = a + 1
            block_place[a:b] = len(place_state)
            place_state.append(s)
        if len(place_state) == start_place:
            t = tracts[0]
            block_place[first[t] : first[t] + max(1, n_blocks[t] // 2)] = len(place_state)
            place_state.append(s)
    place_state_arr = np.asarray(place_state, dtype=np.int64)
    within, size = _within(place_state_arr, n_states)
    place_code = _spaced(within, size, 5, 100)
    place_code[place_state_arr == state_codes.index(DC)] = int(DC_PLACE)
    return block_place, place_state_arr, place_code


def _aiannh(
    persons,
    state_codes,
    state_persons,
    block_state,
    block_tract,
    tract_county,
    first,
    n_blocks,
    rng,
):
    """AIANNH areas in US states other than DC, more often in states with a large
    American Indian and Alaska Native share: most are a few blocks of one tract, some
    are runs of 1-3 tracts (partly covered at the edges); about one in ten (at least
    one) crosses a state line. Puerto Rico has none."""
    n_areas = max(MIN_AIANNH, round(persons / PERSONS_PER_AIANNH))
    block_aiannh = np.full(len(block_tract), -1, dtype=np.int64)
    tract_state = np.asarray(block_state)[first]
    eligible = [s for s, c in enumerate(state_codes) if c not in (DC, PR)]
    w = np.array([state_persons[s] * (0.002 + STATE_INFO[state_codes[s]][5]) for s in eligible])
    w = w / w.sum()
    tracts_of = {s: np.flatnonzero(tract_state == s) for s in eligible}
    area = 0
    # Areas crossing a state line: the last tract of one state and the first tract
    # of the next eligible one (states are in FIPS order, like neighbours in a file).
    n_cross = max(1, n_areas // 10) if len(eligible) >= 2 else 0
    pairs = rng.permutation(len(eligible) - 1)[:n_cross] if n_cross else []
    for p in pairs:
        s1, s2 = eligible[p], eligible[p + 1]
        t1, t2 = tracts_of[s1][-1], tracts_of[s2][0]
        end1 = first[t1] + n_blocks[t1]
        block_aiannh[end1 - int(rng.integers(1, 4)) : end1] = area
        block_aiannh[first[t2] : first[t2] + int(rng.integers(1, 4))] = area
        area += 1
    tries = 0
    while area < n_areas and tries < 20 * n_areas:
        tries += 1
        s = eligible[int(rng.choice(len(eligible), p=w))]
        tracts = tracts_of[s]
        i = int(rng.integers(0, len(tracts)))
        if rng.random() < 0.7:
            t = tracts[i]
            size = int(rng.integers(2, 9))
            a = first[t] + int(rng.integers(0, max(1, n_blocks[t] - size + 1)))
            b = min(a + size, first[t] + n_blocks[t])
        else:
            sel = tracts[i : i + int(rng.integers(1, 4))]
            a, b = first[sel[0]], first[sel[-1]] + n_blocks[sel[-1]]
            if rng.random() < 0.5:
                a += int(rng.integers(0, n_blocks[sel[0]] // 2 + 1))
            if rng.random() < 0.5:
                b -= int(rng.integers(0, n_blocks[sel[-1]] // 2 + 1))
            b = max(b, a + 1)
        free = block_aiannh[a:b] < 0
        if not free.any():
            continue
        block_aiannh[a:b][free] = area
        area += 1
    return block_aiannh, _spaced(np.arange(area), np.full(area, area), 4, 10)
