"""Synthetic persons for `engine.synthetic.nation`: the person model and the chunked writers.

Persons are generated in block order (the GRF-C order). Their randomness comes from
fixed *pages* of PAGE_PERSONS persons, each with its own numpy Generator seeded by
(seed, page), and every person uses exactly N_UNIFORMS uniforms of its page: so the
output does not depend on how the persons are cut into chunks, and memory depends only
on the chunk size, never on the number of persons.

Model (all drawn from seeded numpy Generators):
- age from a 2020-like age pyramid (single years, very few above 100); sex with a
  female share that grows with age; householder with an age-dependent probability;
- Hispanic with the state's 2020 share, varied by county; a Hispanic person's code
  comes from a skewed (Zipf-like) national distribution mixed with a few codes that are
  common in the state (Puerto Rico: mostly its own few codes);
- the first race code: a major race from the state's 2020 mix varied by county (more
  American Indian and Alaska Native persons inside AIANNH areas, where most of them
  belong to the area's own one or two tribes), then a code of that major race from a
  Zipf-like distribution (codes of DETAILED_ONLY groups are the rarest); a few persons
  per county belong to the county's own "enclave" codes, so small groups concentrate
  geographically; Hispanic persons of Some Other Race often repeat their Hispanic code
  as race code when the spec files allow it (2020 does);
- 1 to 8 race codes (about 13% of persons with 2 or more, about 3% with 3 or more),
  the extra ones from a national mix, never repeated;
- CENRACE: the CENRACE code (01..63) of the set of major races of the race codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from engine.synthetic._geo import STATE_INFO, Geography
from engine.synthetic._specs import AIAN, SOR, CodeModel

PAGE_PERSONS = 1 << 16
N_UNIFORMS = 23
MAX_CODES = 8
_ZIPF_RACE = 1.1
_ZIPF_HISP = 1.2
_ENCLAVE_CODES = 6
_TRIBE_CODES = 2
_LOCAL_HISP_CODES = 3
# Columns of the page uniforms.
U_AGE, U_SEX, U_HH, U_HISP, U_HCODE, U_MAJOR, U_CODE, U_LOCAL, U_K, U_EXTRA, U_RETRY = (
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    16,
)

# Approximate 2020 age pyramid: persons (%) in 5-year groups 0-4 .. 80-84, then 85+.
_AGE5 = (5.7, 6.0, 6.4, 6.5, 6.4, 6.8, 6.8, 6.6, 6.2, 6.0, 6.2, 6.5, 6.3, 5.4, 4.3, 2.9, 1.8)
_AGE85 = 1.9
# Number of race codes (1..8): not Hispanic, Hispanic (2020: Hispanic persons report
# two or more races far more often).
_K_NH = (0.91, 0.068, 0.014, 0.005, 0.0015, 0.0008, 0.0004, 0.0003)
_K_HISP = (0.76, 0.19, 0.035, 0.01, 0.003, 0.001, 0.0005, 0.0005)
# Major race mixes (White, Black, AIAN, Asian, NHPI, Some Other Race).
_HISP_MIX = (0.38, 0.04, 0.03, 0.01, 0.002, 0.52)
_HISP_MIX_PR = (0.35, 0.09, 0.005, 0.001, 0.0005, 0.55)
_EXTRA_MIX = (0.42, 0.13, 0.13, 0.10, 0.03, 0.19)
_NH_SOR = 0.006


def age_weights() -> np.ndarray:
    """Weights of ages 0..115 (sum 1)."""
    w = np.repeat(np.asarray(_AGE5) / 5.0, 5)
    x = np.arange(0, 31, dtype=float)
    tail = np.exp(-0.13 * x - 0.007 * x**2)
    w = np.concatenate([w, _AGE85 * tail / tail.sum()])
    return w / w.sum()


def _female_share(age: np.ndarray) -> np.ndarray:
    return np.select(
        [age < 20, age < 45, age < 65, age < 75, age < 85, age < 100],
        [0.488, 0.495, 0.51, 0.53, 0.56, 0.64],
        0.80,
    )


def _householder_share(age: np.ndarray) -> np.ndarray:
    return np.select(
        [age < 15, age < 18, age < 20, age < 25, age < 30, age < 35, age < 65, age < 75, age < 85],
        [0.0, 0.01, 0.05, 0.25, 0.42, 0.48, 0.52, 0.58, 0.62],
        0.55,
    )


def cenrace_of_mask() -> np.ndarray:
    """CENRACE number (1..63) of each non-empty 6-bit set of major races (bit i = major i):
    the 6 single races, then the 15 pairs, 20 triples, ... in lexicographic order."""
    out = np.zeros(64, dtype=np.int64)
    n = 0
    for size in range(1, 7):
        for combo in combinations(range(6), size):
            n += 1
            out[sum(1 << i for i in combo)] = n
    return out


def _cum_rows(p: np.ndarray) -> np.ndarray:
    p = p / p.sum(axis=-1, keepdims=True)
    c = np.cumsum(p, axis=-1)
    c[..., -1] = 1.0
    return c


def _zipf(rank: np.ndarray, s: float) -> np.ndarray:
    return (rank + 1.0) ** -s


def _ranks(small: np.ndarray, groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random rank of each code within its group; `small` codes come last."""
    score = rng.random(len(small)) + small.astype(float)
    order = np.lexsort((score, groups))
    rank = np.empty(len(small), dtype=np.int64)
    starts = np.searchsorted(groups[order], groups[order], side="left")
    rank[order] = np.arange(len(small)) - starts
    return rank


@dataclass
class Persons:
    """One chunk of persons as small integer indices into the output tables."""

    block: np.ndarray  # index into the geography's blocks
    age: np.ndarray  # 0..115
    sex: np.ndarray  # 0 male, 1 female
    householder: np.ndarray  # bool
    cenrace: np.ndarray  # 1..63
    race: np.ndarray  # (n, 8) index into race codes; NULL = len(race codes)
    eth: np.ndarray  # index into hisp codes; len(hisp codes) = not Hispanic


class PersonModel:
    """Everything the persons of one synthetic nation are drawn from (see module doc)."""

    def __init__(self, geo: Geography, model: CodeModel, seed: int, rng: np.random.Generator):
        self.geo = geo
        self.model = model
        self.seed = seed
        R = len(model.race_codes)
        H = len(model.hisp_codes)
        self.null = R
        self.nh = H
        self.block_cum = np.cumsum(geo.block_persons)
        self.block_county = geo.block_county
        self.block_state = geo.block_state
        self.block_area = geo.block_aiannh
        nc, ns = len(geo.county_state), len(geo.state_codes)
        self.n_counties = nc

        age_w = age_weights()
        self.age_cum = np.cumsum(age_w)
        self.age_cum[-1] = 1.0
        ages = np.arange(len(age_w))
        self.p_female = _female_share(ages)
        self.p_householder = _householder_share(ages)

        major = model.race_major
        present = np.bincount(major, minlength=6) > 0
        # Race codes sorted by (major race, rank): stacked cumulative weights m + c.
        rank = _ranks(model.race_small, major, rng)
        w = _zipf(rank, _ZIPF_RACE)
        order = np.lexsort((rank, major))
        self.code_order = order
        wm = np.bincount(major, weights=w, minlength=6)
        within = np.zeros(R)
        within[order] = np.concatenate(
            [np.cumsum(w[order][major[order] == m]) / wm[m] for m in range(6) if present[m]]
        )
        self.code_cum = (major + within)[order]
        # Close each major's range exactly at m + 1.
        last = np.r_[major[order][1:] != major[order][:-1], True]
        self.code_cum[last] = major[order][last] + 1.0
        # Extra race codes: one national mix over all codes.
        extra = np.asarray(_EXTRA_MIX) * present
        gw = w / wm[major] * (extra / extra.sum())[major]
        self.extra_cum = np.cumsum(gw[order])
        self.extra_cum[-1] = 1.0

        # Major race mixes: rows 2c (county), 2c+1 (county inside AIANNH areas),
        # 2*nc + s (Hispanic persons of state s).
        mixes = np.zeros((2 * nc + ns, 6))
        state_mix = np.zeros((ns, 6))
        hisp_share = np.zeros(ns)
        for s, code in enumerate(geo.state_codes):
            _, _, _, h, b, ai, a, nhpi = STATE_INFO[code]
            state_mix[s] = (max(0.05, 1 - b - ai - a - nhpi - _NH_SOR), b, ai, a, nhpi, _NH_SOR)
            hisp_share[s] = h
            mixes[2 * nc + s] = _HISP_MIX_PR if code == "72" else _HISP_MIX
        z = rng.normal(0.0, 0.5, size=(nc, 6))
        county_mix = state_mix[geo.county_state] * np.exp(z)
        county_mix /= county_mix.sum(axis=1, keepdims=True)
        mixes[0 : 2 * nc : 2] = county_mix
        mixes[1 : 2 * nc : 2] = county_mix + 0.4 * (np.arange(6) == AIAN)
        mixes *= present
        if not present.any():
            raise ValueError("no race codes to draw from")
        mixes[mixes.sum(axis=1) == 0] = present
        self.major_cum = _cum_rows(mixes)[:, :5]

        # Hispanic origin: county share around the state's.
        logit = np.log(hisp_share / (1 - hisp_share))[geo.county_state] + rng.normal(
            0.0, 0.4, size=nc
        )
        self.p_hisp = 1.0 / (1.0 + np.exp(-logit))
        hrank = _ranks(model.hisp_small, np.zeros(H, dtype=np.int64), rng)
        hw = _zipf(hrank, _ZIPF_HISP)
        self.hisp_cum = np.cumsum(hw / hw.sum())
        self.hisp_cum[-1] = 1.0
        flat = hw**0.5 / (hw**0.5).sum()
        self.hisp_local = rng.choice(H, size=(ns, _LOCAL_HISP_CODES), p=flat)
        self.hisp_local_share = np.where(np.asarray(geo.state_codes) == "72", 0.9, 0.35)
        self.hisp_as_race = model.hisp_as_race

        # Enclaves: a few codes per county (major race by the national mix, code with
        # flattened weights, so rare codes too) taking 3-15% of its not-Hispanic persons.
        national = (
            state_mix
            * np.asarray([STATE_INFO[c][2] for c in geo.state_codes], dtype=float)[:, None]
        ).sum(axis=0)
        national = national * present / (national * present).sum()
        fw = w**0.3
        flat = fw / np.bincount(major, weights=fw, minlength=6)[major] * national[major]
        self.enclave = rng.choice(R, size=(nc, _ENCLAVE_CODES), p=flat / flat.sum())
        self.enclave_share = rng.uniform(0.03, 0.15, size=nc)
        aian = np.flatnonzero(major == AIAN)
        n_areas = geo.n_aiannh
        self.tribes = rng.choice(aian, size=(max(n_areas, 1), _TRIBE_CODES)) if len(aian) else None

        self.k_cum = np.cumsum(np.array([_K_NH, _K_HISP]), axis=1)[:, :-1]
        bits = np.zeros(R + 1, dtype=np.int64)
        bits[:R] = 1 << major
        self.major_bits = bits
        self.cenrace = cenrace_of_mask()

    # ------------------------------------------------------------------ randomness
    def uniforms(self, start: int, stop: int) -> np.ndarray:
        """The uniforms of persons start..stop-1 (page-based), one row per use:
        shape (N_UNIFORMS, stop - start)."""
        out = np.empty((N_UNIFORMS, stop - start))
        pos = start
        while pos < stop:
            page = pos // PAGE_PERSONS
            lo = pos - page * PAGE_PERSONS
            hi = min(stop - page * PAGE_PERSONS, PAGE_PERSONS)
            g = np.random.Generator(
                np.random.PCG64(np.random.SeedSequence(entropy=self.seed, spawn_key=(2, page)))
            )
            out[:, pos - start : pos - start + hi - lo] = g.random((hi, N_UNIFORMS))[lo:hi].T
            pos += hi - lo
        return out

    # ------------------------------------------------------------------ persons
    def persons(self, start: int, stop: int) -> Persons:
        """Persons start..stop-1 (in block order)."""
        u = self.uniforms(start, stop)
        n = stop - start
        b0 = int(np.searchsorted(self.block_cum, start, side="right"))
        b1 = int(np.searchsorted(self.block_cum, stop - 1, side="right"))
        counts = self.block_cum[b0 : b1 + 1] - np.maximum(
            self.block_cum[b0 : b1 + 1] - self.geo.block_persons[b0 : b1 + 1], start
        )
        counts[-1] -= self.block_cum[b1] - stop
        block = np.repeat(np.arange(b0, b1 + 1), counts)
        county = self.block_county[block]
        state = self.block_state[block]
        area = self.block_area[block]

        age = np.searchsorted(self.age_cum, u[U_AGE], side="right")
        np.minimum(age, len(self.age_cum) - 1, out=age)
        sex = (u[U_SEX] < self.p_female[age]).astype(np.int64)
        householder = u[U_HH] < self.p_householder[age]

        hisp = u[U_HISP] < self.p_hisp[county]
        eth = np.full(n, self.nh, dtype=np.int64)
        hu = u[U_HCODE, hisp]
        loc = self.hisp_local_share[state[hisp]]
        is_local = hu < loc
        hcode = np.where(
            is_local,
            self.hisp_local[
                state[hisp],
                np.minimum((hu / loc * _LOCAL_HISP_CODES).astype(np.int64), _LOCAL_HISP_CODES - 1),
            ],
            np.searchsorted(self.hisp_cum, (hu - loc) / (1 - loc), side="right").clip(
                0, self.nh - 1
            ),
        )
        eth[hisp] = hcode

        row = np.where(hisp, 2 * self.n_counties + state, 2 * county + (area >= 0))
        major = (u[U_MAJOR, :, None] > self.major_cum[row]).sum(axis=1)
        first = self._code_of(major, u[U_CODE])
        # Hispanic persons of Some Other Race: often their Hispanic code as race code.
        if self.hisp_as_race is not None and (self.hisp_as_race >= 0).any():
            as_race = np.full(n, -1, dtype=np.int64)
            as_race[hisp] = self.hisp_as_race[eth[hisp]]
            use = (major == SOR) & (as_race >= 0) & (u[U_CODE] < 0.6)
            first[use] = as_race[use]
            redo = (major == SOR) & (as_race >= 0) & ~use
            if redo.any():
                first[redo] = self._code_of(major[redo], (u[U_CODE, redo] - 0.6) / 0.4)
        # Tribes inside AIANNH areas, enclaves elsewhere.
        lu = u[U_LOCAL]
        if self.tribes is not None:
            tribal = (area >= 0) & (major == AIAN) & (lu < 0.8)
            t = np.minimum((lu[tribal] / 0.8 * _TRIBE_CODES).astype(np.int64), _TRIBE_CODES - 1)
            first[tribal] = self.tribes[area[tribal], t]
        else:
            tribal = np.zeros(n, dtype=bool)
        lam = self.enclave_share[county]
        encl = ~tribal & ~hisp & (lu < lam)
        e = np.minimum((lu[encl] / lam[encl] * _ENCLAVE_CODES).astype(np.int64), _ENCLAVE_CODES - 1)
        first[encl] = self.enclave[county[encl], e]

        race = np.full((n, MAX_CODES), self.null, dtype=np.int32)
        race[:, 0] = first
        k = 1 + (u[U_K, :, None] > self.k_cum[hisp.astype(np.int64)]).sum(axis=1)
        multi = np.flatnonzero(k > 1)
        if len(multi):
            sub = race[multi]
            um = u[:, multi]
            km = k[multi]
            for j in range(1, MAX_CODES):
                need = np.flatnonzero(km > j)
                if not len(need):
                    break
                c = self._extra(um[U_EXTRA + j - 1, need])
                prev = sub[need, :j]
                dup = (prev == c[:, None]).any(axis=1)
                if dup.any():
                    c[dup] = self._extra(um[U_RETRY + j - 1, need[dup]])
                    dup = (prev == c[:, None]).any(axis=1)
                sub[need, j] = np.where(dup, self.null, c)
            # Codes first, then Nulls (a dropped repeat leaves a gap).
            is_null = sub == self.null
            has_gap = (is_null[:, :-1] & ~is_null[:, 1:]).any(axis=1)
            if has_gap.any():
                g = sub[has_gap]
                idx = np.argsort(is_null[has_gap], axis=1, kind="stable")
                sub[has_gap] = np.take_along_axis(g, idx, axis=1)
            race[multi] = sub
        mask = self.major_bits[first]
        if len(multi):
            mask[multi] = np.bitwise_or.reduce(self.major_bits[race[multi]], axis=1)
        return Persons(
            block=block,
            age=age,
            sex=sex,
            householder=householder,
            cenrace=self.cenrace[mask],
            race=race,
            eth=eth,
        )

    def _code_of(self, major: np.ndarray, u: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.code_cum, major + u, side="right")
        return self.code_order[np.minimum(pos, len(self.code_order) - 1)]

    def _extra(self, u: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.extra_cum, u, side="right")
        return self.code_order[np.minimum(pos, len(self.code_order) - 1)]
